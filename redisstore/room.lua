-- Shared head of every room script (prepended when the scripts load): the
-- room's settings are read inside the script call the operation already
-- makes, so a change costs no extra round trip and takes effect at the very
-- next call of every process.
-- KEYS[1] settings (hash: rate capacity ttl maxActive paused opensAt v closed message instant,
--   erate (the adaptive rate, present while adaptive is on: settings_set.lua, adapt.lua),
--   and the page's title brandColor logoUrl language, read by enter and status alone: roomSettings(poll, page))
-- ARGV[1] the defaults, "<rate>:<capacity>:<token TTL ms>:<open>:<instant>" (open:
--   '1' when rooms nobody created exist, OPEN_ROOMS; instant: INSTANT_ADMIT),
--   read only for a room without stored settings (or a stored room from
--   before instantAdmit existed): one argument, parsed when needed.
local function defaults()
  local rate, capacity, ttl, open, instant = string.match(ARGV[1], '^([^:]+):(%d+):(%d+):(%d):(%d)$')
  return {stored = false, open = open == '1', rate = tonumber(rate), rateText = rate, setRate = tonumber(rate), capacity = tonumber(capacity),
    ttl = tonumber(ttl), maxActive = 0, paused = false, opensAt = 0, opensAtText = '0', v = '', closed = false, message = '',
    instant = instant == '1'}
end

-- The settings' fields in the order roomSettings reads them: the first
-- seven are all that a poll's answer and its stall check use; the last four
-- are the room's page.
local settingsFields = {'rate', 'erate', 'maxActive', 'paused', 'opensAt', 'closed', 'message', 'capacity', 'ttl', 'v', 'instant',
  'title', 'brandColor', 'logoUrl', 'language'}

-- roomSettings(poll, page): with poll, only the fields a poll uses
-- (position, accept): every field read costs Redis about 2,000
-- instructions and every number parsed about as many (docs/design.md,
-- "What a poll costs Redis"), so setRate, capacity, ttl, v and instant are then
-- absent. With page, also the room's page (title, colour, logo, language)
-- as room.page, for enter's answer (the page reads it once per load), in
-- the same HMGET.
local function roomSettings(poll, page)
  local s = redis.call('HMGET', KEYS[1], unpack(settingsFields, 1, poll and 7 or page and 15 or 11))
  -- rateText and opensAtText are answered as read: no formatting on the hot path.
  if not s[1] then
    local room = defaults()
    if page then
      room.page = {}
    end
    return room
  end
  -- rate is what admission uses (the adaptive rate when there is one),
  -- setRate the operator's ratePerSec.
  local rate = s[2] or s[1]
  local room = {stored = true, open = true, rate = tonumber(rate), rateText = rate, maxActive = tonumber(s[3]), paused = s[4] == '1',
    opensAt = tonumber(s[5]), opensAtText = s[5], closed = s[6] == '1', message = s[7] or '', adaptive = s[2] ~= false}
  if not poll then
    room.setRate = tonumber(s[1])
    room.capacity = tonumber(s[8])
    room.ttl = tonumber(s[9])
    room.v = s[10] or ''
    -- A room stored before instantAdmit existed has no 'instant' field: the default's.
    room.instant = s[11] == '1'
    if not s[11] then
      room.instant = defaults().instant
    end
  end
  if page then
    room.page = {s[12], s[13], s[14], s[15]}
  end
  return room
end

-- refill is the room's rate budget now, in users: a token bucket on the
-- server's clock that fills at the room's rate and holds at most one batch
-- (burst) plus the fraction of a user carried over (capping at one batch
-- exactly drops that fraction at nearly every batch, which loses up to half
-- the rate when batches are small). budget is the hash's {at (µs), avail};
-- a missing budget is a full one. admit.lua's batches and enter.lua's
-- instant admissions both spend it, so together they admit at most
-- rate x window + one batch, whatever the number of callers.
local function refill(room, burst, nowUs, budget)
  if not budget[1] then
    return burst
  end
  local elapsed = nowUs - tonumber(budget[1])
  if elapsed < 0 then elapsed = 0 end -- a failover to a node with a slower clock
  local left = tonumber(budget[2])
  return math.min(burst + left - math.floor(left), left + elapsed * room.rate / 1000000)
end

-- countAdmitted adds n admissions to the admissions-per-second hash (status'
-- admittedLastMinute and admittedPerSec): a minute of history, gone a
-- minute after the last admission.
local function countAdmitted(key, n, nowSec, nowSecText)
  redis.call('HINCRBY', key, nowSecText, n)
  redis.call('HDEL', key, string.format('%d', nowSec - 61), string.format('%d', nowSec - 62))
  redis.call('PEXPIRE', key, 120000)
end

local function serverTime()
  local t = redis.call('TIME')
  local us = tonumber(t[1]) * 1000000 + tonumber(t[2])
  return us, math.floor(us / 1000), tonumber(t[1]), t[1]
end

-- stalled: nobody's turn can be foreseen because no batch ran for stallUs
-- while someone waited (the later of the last batch, 'at', and the moment
-- the line stopped being empty, 'since'), or live tokens fill maxActive.
-- Checked only for a position whose turn is nearer than horizonMs: farther
-- back the answer is the far tier anyway, so most calls skip the reads (and
-- the clock, when the caller has not read it: nowUs nil).
local function stalled(room, position, budgetKey, tokensKey, horizonMs, stallUs, nowUs)
  if position * 1000 / room.rate >= tonumber(horizonMs) then
    return 0
  end
  if not nowUs then
    nowUs = serverTime()
  end
  local b = redis.call('HMGET', budgetKey, 'at', 'since')
  local last = math.max(tonumber(b[1] or '0'), tonumber(b[2] or '0'))
  if last > 0 and nowUs - last > tonumber(stallUs) then
    return 2
  end
  if room.maxActive > 0 and redis.call('ZCARD', tokensKey) >= room.maxActive then
    return 2
  end
  return 0
end

-- The answer of enter and position: what happened, then the room as seen:
-- its rate as stored, flags (1 paused, 2 stalled: stalled's value, 4
-- closed, 8 adaptive), its opening (ms, '0' for none) as stored and the operator's
-- message; enter's then carries the page (roomSettings(false, true)).
local function answer(kind, a, b, room, isStalled)
  local out = {kind, a or 0, b or 0, room.rateText, (room.paused and 1 or 0) + (isStalled or 0) + (room.closed and 4 or 0) + (room.adaptive and 8 or 0),
    room.opensAtText, room.message}
  if room.page then
    for i = 1, 4 do
      out[7 + i] = room.page[i] or ''
    end
  end
  return out
end

-- A pre-queue mark's member: the opening second, told apart from the
-- per-second marks of enter so that neither overwrites the other.
local function markSecond(member)
  return tonumber(string.match(member, '^%d+'))
end
