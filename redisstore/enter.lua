-- Join a room's line, or report where the user already stands.
-- One script, so that no request slips between the capacity check and the insert.
local settingsKey = KEYS[1] -- the room's hash (settings.lua)
local lineKey = KEYS[2] -- the line's sorted part (line.lua)
local seqKey = KEYS[3] -- the sequence counter (line.lua)
local recordKey = KEYS[4] -- the user's entry-token record
local marksKey = KEYS[5] -- marks: a zset, member second -> the first sequence of that second
local budgetKey = KEYS[6] -- admission's budget (admit.lua): enter sets 'since', admitNow spends it
local liveKey = KEYS[7] -- live tokens: a zset, user -> expiry ms
local admitsKey = KEYS[8] -- admissions per second
local queueKey = KEYS[9] -- the queue (line.lua)
local placesKey = KEYS[10] -- places (line.lua)
local challengeKey = KEYS[11] -- the caller's solved challenge's record, only when challengeMs is not '0' (challenge.lua)
local user = ARGV[1]
local draw = ARGV[2] -- random in (0, 1): a pre-queue place
local limitArg = 3 -- ARGV[3..6]: the limiter's time and the fields of the caller's, its address's and its new visitors' buckets (ratelimit.lua)
local challengeMs = ARGV[7] -- the solved challenge's remaining life, ms ('0': none)
local instantToken = ARGV[8] -- the entry token an instant admission issues ("room.random")
local place = ARGV[9] -- the number of the place the caller's credential carries ('0': none), restored if the store lost it (restore.lua)
-- The stall check's horizon and time, and the batch interval, are the
-- store's (configHead: stallHorizonMs, stallAfterUs, batchSeconds).
-- Returns answer(kind, …) with the room's page: {'READY', record, admitted}
--   (admitted: 0 held already, 2 admitted now, 3 admitted now as the room's only live token)
--   | {'WAITING', position, joined}
--   | {'PREQUEUE', place in line (not told: the draw is secret until the opening), joined}
--   | {'FULL', waiting} | {'CLOSED'} | {'NOROOM'} | {'LIMITED', ms until allowed} | {'SPENT'}
-- admitNow is instant admission: nobody waits, so the caller is admitted
-- at once when the rate budget holds a whole user and live tokens are
-- below maxActive, spending the budget admit.lua's batches spend (refill):
-- the rate and maxActive hold whoever admits. The token record and the
-- live token are admit.lua's. Returns the record (nil: the caller queues)
-- and whether no other live token exists (the room may be unregistered).
-- Its clock is the store's, as admit.lua's, whose budget it spends.
local function admitNow(room)
  local nowUs, nowMs, nowSec, nowSecText = serverTime()
  local burst = math.max(1, room.rate * batchSeconds)
  local avail = refill(room, burst, nowUs, redis.call('HMGET', budgetKey, 'at', 'avail'))
  if avail < 1 then
    return nil
  end
  local nowMsText = string.format('%d', nowMs)
  local live = redis.call('ZCOUNT', liveKey, '(' .. nowMsText, '+inf')
  if room.maxActive > 0 and live >= room.maxActive then
    return nil
  end
  redis.call('HSET', budgetKey, 'at', string.format('%d', nowUs), 'avail', string.format('%.9f', avail - 1))
  local expiresText = string.format('%d', nowMs + room.ttl)
  local record = expiresText .. ':' .. nowMsText .. ':' .. instantToken
  redis.call('SET', recordKey, record, 'PXAT', expiresText)
  redis.call('ZADD', liveKey, expiresText, user)
  countAdmitted(admitsKey, 1, nowSec, nowSecText)
  return record, live == 0
end

local s = redis.call('HMGET', settingsKey, 'hot', 'page', 'mark', ARGV[limitArg + 1], ARGV[limitArg + 2], ARGV[limitArg + 3], 'front')
local room, refused, limitNow = visit(settingsKey, roomOf(s[1], s[2], false, true), s, 3, limitArg, 3)
if refused then
  return refused
end
if roomHas(room, closedBit) then
  -- Sold out: a live entry token keeps its chance at checkout; nobody
  -- joins, and the line (being released by admission) is not read.
  return heldOr('CLOSED', recordKey, room)
end
-- The clock: the caller's (the limiter's time, ARGV[limitArg]) for the second's
-- mark and the stall check, where a millisecond between two clocks is
-- nothing; the store's for a scheduled opening, which every caller must
-- see at the same instant (pre-queue places are drawn until then), and for
-- an instant admission (admitNow). A TIME is a tenth of a new user's enter.
local nowUs, nowMs
if roomHas(room, scheduledBit) then
  nowUs, nowMs = serverTime()
else
  nowUs = limitNow or tonumber(ARGV[limitArg])
  nowMs = math.floor(nowUs / 1000)
end
local prequeue = room.opensAt > nowMs
-- The line first: a user in it holds no token (admission moves a user
-- from the line to its token in one script). The common cases inline
-- (line.lua): a queue with its front's copy and nobody in the sorted set.
local seq = redis.call('HGET', placesKey, user)
local front, sorted = tonumber(s[7]), true
local rank
if front and front > 0 then
  sorted = false
  rank = seq and seq - front
else
  rank = placeOf(settingsKey, lineKey, placesKey, user, seq, s[7])
  front, sorted = frontOf(s[7] or redis.call('HGET', placesKey, ''))
end
if rank then
  if prequeue then
    return answer('PREQUEUE', rank + 1, 0, room)
  end
  return answer('WAITING', rank + 1, 0, room, stalled(room, rank + 1, budgetKey, liveKey, stallHorizonMs, stallAfterUs, nowUs), seq and tonumber(seq))
end
local record = redis.call('GET', recordKey)
if record then
  return answer('READY', record, 0, room)
end
-- A place a failover lost goes back at the number the caller's credential
-- carries (restore.lua): no new place at the back, no capacity.
if place ~= '0' and restore(settingsKey, lineKey, placesKey, seqKey, user, tonumber(place), s[7]) then
  rank = placeOf(settingsKey, lineKey, placesKey, user, nil, nil)
  return answer('WAITING', rank + 1, 0, room, stalled(room, rank + 1, budgetKey, liveKey, stallHorizonMs, stallAfterUs, nowUs))
end
-- Everyone in line: the queue, and the sorted set unless the front says
-- it is empty.
local queued = front and redis.call('LLEN', queueKey) or 0
local waiting = queued
if sorted then
  waiting = waiting + redis.call('ZCARD', lineKey)
end
if waiting >= room.capacity then
  return answer('FULL', waiting, 0, room)
end
if challengeSpent(challengeKey, challengeMs) then
  return {'SPENT'}
end
if waiting == 0 and not prequeue and not roomHas(room, pausedBit) and roomHas(room, instantBit) then
  local admittedNow, only = admitNow(room)
  if admittedNow then
    return answer('READY', admittedNow, only and 3 or 2, room)
  end
end
if prequeue then
  -- Before the opening, the place is a random draw between the last
  -- sequence given out and the next one: the pre-queue is ahead of everyone
  -- who enters after the opening and behind anyone already in line, in a
  -- uniformly random order that re-entering (ZRANK above) never changes.
  -- Nobody takes a sequence during a pre-queue, so base is the same for all:
  -- the queue's last, else the counter's (line.lua).
  local base = front and front + queued - 1 or tonumber(redis.call('GET', seqKey) or '0')
  if waiting == 0 then
    redis.call('SET', seqKey, base) -- keeps base and drops an idle room's expiry
    redis.call('PERSIST', marksKey)
  end
  redis.call('ZADD', lineKey, string.format('%.17g', base + tonumber(draw)), user)
  if not sorted then -- the front says so, in both copies (line.lua)
    local negated = string.format('%d', -front)
    redis.call('HSET', placesKey, '', negated)
    redis.call('HSET', settingsKey, 'front', negated)
  end
  -- Pre-queued users have waited since the opening, for the wait metric.
  redis.call('ZADD', marksKey, 'NX', string.format('%.17g', base + 2 ^ -33), string.format('%d', math.floor(room.opensAt / 1000)) .. ':open')
  return answer('PREQUEUE', waiting + 1, 1, room)
end
-- The sequence as text once: a number argument of redis.call is printed
-- with %.17g at every call that carries it. Behind a queue it follows the
-- queue's last; the first of a queue follows the last given out, which the
-- counter holds while there is no queue (line.lua).
if front then
  seq = string.format('%d', front + queued)
else
  seq = string.format('%d', tonumber(redis.call('GET', seqKey) or '0') + 1)
end
redis.call('RPUSH', queueKey, user)
if queued == 0 then
  -- The queue's first: the front (line.lua, both copies), negated when
  -- the sorted set holds anyone.
  local stored = waiting > 0 and '-' .. seq or seq
  redis.call('HSET', placesKey, user, seq, '', stored)
  if waiting == 0 then -- and the line's start, which the room's view reads (waitroom.View.Since)
    redis.call('HSET', settingsKey, 'front', stored, 'since', string.format('%d', nowUs))
  else
    redis.call('HSET', settingsKey, 'front', stored)
  end
else
  redis.call('HSET', placesKey, user, seq)
end
if waiting == 0 then
  -- An idle room sees no batches (admission skips its budget, or idles
  -- itself): admission has not stalled before someone waits.
  redis.call('HSET', budgetKey, 'since', string.format('%d', nowUs))
  -- Its keys were set to expire (admit.lua, only ever with an empty line):
  -- someone waits again.
  redis.call('PERSIST', seqKey)
  redis.call('PERSIST', marksKey)
end
-- One mark a second lets admission tell how long a user waited without
-- storing a timestamp per user: the first sequence of each second, the
-- second of the clock above. The room's hash holds the last second marked
-- ('mark', read with the settings), so that the second's later enters
-- write nothing: a ZADD NX that finds its member costs as much as a new
-- user's ZADD to the line. The marks go only with an empty line
-- (admit.lua), whose first enter always marks.
local second = string.format('%d', math.floor(nowUs / 1000000))
if waiting == 0 or s[3] ~= second then
  redis.call('ZADD', marksKey, 'NX', seq, second)
  redis.call('HSET', settingsKey, 'mark', second)
end
return answer('WAITING', waiting + 1, 1, room, stalled(room, waiting + 1, budgetKey, liveKey, stallHorizonMs, stallAfterUs, nowUs), tonumber(seq))
