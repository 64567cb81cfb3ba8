-- The room's hash (wr:{room}:settings) as the scripts keep it: shared by
-- settings_set.lua, adapt.lua and every room script (room.lua).
--
-- Every call of a room reads its settings, so they are kept for the read:
-- what a call needs is one field, 'hot', packed once when the settings
-- change, not a dozen fields read and parsed at every call (each field
-- read costs Redis about 1,500 instructions, each number parsed about as
-- many: docs/design.md, "What a poll costs Redis"). 'hot' is
--   <flags><rate>:<maxActive>:<opensAt ms, 0 none>:<capacity>:<entry-token TTL ms>:<message>
-- flags one character, 64 + the bits below; rate the rate admission uses
-- (the adaptive rate while adaptive is on, else ratePerSec) as text; the
-- message last, as it may hold ':'. The room's page is 'page', packed by
-- packPage, read by enter and status alone. The rest is the operator's
-- record, read by status and settings_set.lua: 'rate' (ratePerSec),
-- 'adaptive' (waitroom.Adaptive.String, absent when off), 'v' (the
-- version of the compare-and-set), and 'layout'. The hash also holds the
-- abuse limiter's buckets (ratelimit.lua): fields whose second character
-- is ':'. The Go side decodes 'hot' and 'page' (settings.go).
local pausedBit, closedBit, adaptiveBit, instantBit, scheduledBit = 1, 4, 8, 16, 32 -- 2: stalled, in answers

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
