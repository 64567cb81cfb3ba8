-- Packing the room's settings (settings.lua), for the script that writes
-- them: settings_set.lua. The scripts of every call only read them.

-- hasBit: whether the flags bits hold mask (one of settings.lua's bits).
-- Here, not in settings.lua: every function a script defines is a closure
-- made at every call, and the scripts of every call test a room's bits
-- with room.lua's roomHas.
local function hasBit(bits, mask)
  return math.floor(bits / mask) % 2 == 1
end

-- packHot: the 'hot' field from its parts (text or whole numbers).
local function packHot(paused, closed, adaptive, instant, rate, maxActive, opensAt, capacity, ttl, message)
  local bits = (paused and pausedBit or 0) + (closed and closedBit or 0) + (adaptive and adaptiveBit or 0)
    + (instant and instantBit or 0) + (tonumber(opensAt) > 0 and scheduledBit or 0)
  return string.char(64 + bits) .. rate .. ':' .. maxActive .. ':' .. opensAt .. ':' .. capacity .. ':' .. ttl .. ':' .. message
end

-- packPage: the room's page (title, brandColor, logoUrl, language), each
-- as its length, ':' and itself.
local function packPage(title, brandColor, logoUrl, language)
  local out = ''
  for _, text in ipairs({title, brandColor, logoUrl, language}) do
    out = out .. #text .. ':' .. text
  end
  return out
end

-- The layout field: a value longer than hash-max-listpack-value (64
-- bytes, Redis's and Valkey's default) makes Redis keep the hash a hash
-- table for good, so that HMGET and HSET find fields without scanning a
-- listpack (a listpack of 60 buckets cost a call more than the rest of the
-- limiter). Nothing reads it.
local layout = 'a hash table, not a listpack: a call finds its fields for less than in a scan'
