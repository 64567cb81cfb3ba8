-- A room's settings and what is happening in it, for operators. Read only.
local settingsKey = KEYS[1] -- the room's hash (settings.lua; the line's front and counter: line.lua)
local lineKey = KEYS[2] -- the line's sorted set (line.lua)
local liveKey = KEYS[3] -- live tokens
local marksKey = KEYS[4] -- marks (enter.lua)
local admitsKey = KEYS[5] -- admissions per second
local controlKey = KEYS[6] -- the controller's state (adapt.lua)
-- ARGV[1] the store's rooms (admit.lua's ARGV[1]), read by roomsArgHead
local windowMs = tonumber(ARGV[2]) -- the control window
-- Returns {stored, hasKeys, version, ratePerSec, hot, page, adaptive, state,
--          waiting, prequeued, activeTokens, admittedLastMinute, admittedLast5s, oldestWaitSeconds,
--          downstreamP95Ms, downstreamErrorRate}
-- hot and page as stored (settings.lua): the Go side reads the rest of the
-- settings and the effective rate from them. The downstream figures are the
-- last window's, '' when it ended more than two windows ago (no order
-- finished since: nothing was handed over).
local s = redis.call('HMGET', settingsKey, 'hot', 'page', 'rate', 'v', 'adaptive', 'front', 'next', 'pending')
local room = roomOf(s[1], s[2], true, true)
local _, nowMs, nowSec = serverTime()
local front = frontOf(s[6])
local nextN = tonumber(s[7]) or 1
local numbers = front and nextN - front or 0
local inLine = redis.call('ZCARD', lineKey) + numbers
local prequeued = 0
if room.opensAt > nowMs then
  -- The pre-queue is everyone drawn after the last number (enter.lua).
  prequeued = redis.call('ZCOUNT', lineKey, '(' .. string.format('%d', nextN - 1), '+inf')
end
-- Active: the live tokens, and the numbers admitted and not yet claimed
-- (claim.lua), which hold their place in maxActive as tokens do.
local active = redis.call('ZCOUNT', liveKey, '(' .. nowMs, '+inf') + (tonumber(s[8]) or 0)
local minute, recent = 0, 0
local counts = redis.call('HGETALL', admitsKey)
for i = 1, #counts, 2 do
  local sec, c = tonumber(counts[i]), tonumber(counts[i + 1])
  if sec > nowSec - 60 then minute = minute + c end
  if sec >= nowSec - 5 and sec < nowSec then recent = recent + c end
end
local oldest = 0
-- The first in line: the sorted set's first or the front, whichever is
-- ahead (line.lua).
local first = tonumber((redis.call('ZRANGE', lineKey, 0, 0, 'WITHSCORES'))[2])
if numbers > 0 then
  first = math.min(first or front, front)
end
if first then
  local mark = redis.call('ZREVRANGEBYSCORE', marksKey, string.format('%.17g', first), '-inf', 'LIMIT', 0, 1)
  if mark[1] then oldest = math.max(0, nowSec - markSecond(mark[1])) end
end
local hasKeys = redis.call('EXISTS', lineKey, liveKey) + (s[7] and 1 or 0)
local state = 'open'
if roomHas(room, closedBit) then
  state = 'closed'
elseif roomHas(room, pausedBit) then
  state = 'paused'
elseif room.opensAt > nowMs then
  state = 'prequeue'
end
local control = redis.call('HMGET', controlKey, 'at', 'p95', 'err')
if not control[1] or nowMs - tonumber(control[1]) > 2 * windowMs then
  control = {'', '', ''}
end
return {room.stored and 1 or 0, hasKeys, s[4] or '', s[3] or room.rateText, room.hot, room.page, s[5] or '', state,
  inLine - prequeued, prequeued, active, minute, recent, oldest, control[2] or '', control[3] or ''}
