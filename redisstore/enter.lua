-- Join a room's line, or report where the user already stands.
-- One script, so that no request slips between the capacity check and the insert.
local settingsKey = KEYS[1] -- the room's hash (settings.lua): the line's front, counter and start (line.lua)
local lineKey = KEYS[2] -- the line's sorted set (line.lua)
local recordKey = KEYS[3] -- the user's entry-token record
local marksKey = KEYS[4] -- marks: a zset, member second -> the first number of that second
local budgetKey = KEYS[5] -- admission's budget (admit.lua): enter sets 'since', admitNow (instant.lua) spends it
local liveKey = KEYS[6] -- live tokens: a zset, user -> expiry ms
local admitsKey = KEYS[7] -- admissions per second
local accountKey = KEYS[8] -- the account's bucket of records (line.lua; not read for a visitor whose place is its number alone)
local batchesKey = KEYS[9] -- admission's batches (claim.lua)
local unclaimedKey = KEYS[10] -- each batch's numbers not yet claimed (claim.lua)
local markKey = KEYS[11] -- the user's claim (claim.lua)
local challengeKey = KEYS[12] -- the caller's solved challenge's record, only when challengeMs is not '0' (challenge.lua)
local user = ARGV[1]
local draw = ARGV[2] -- random in (0, 1): a pre-queue place
local limitArg = 3 -- ARGV[3..6]: the limiter's time and the fields of the caller's, its address's and its new visitors' buckets (ratelimit.lua)
local challengeMs = ARGV[7] -- the solved challenge's remaining life, ms ('0': none)
local token = ARGV[8] -- the entry token an instant admission or a claim issues ("room.random")
local place = tonumber(ARGV[9]) -- the number of the place the caller's credential carries (0: none)
local placeAtMs = tonumber(ARGV[10]) -- when it was signed
local field = ARGV[11] -- the account's field in its bucket ('': a visitor whose place is its number alone, its ticket's or a new one's: line.lua)
local anonymous = field == ''
-- The stall check's horizon and time, and the batch interval, are the
-- store's (configHead: stallHorizonMs, stallAfterUs, batchSeconds).
-- Returns answer(kind, …) with the room's page: {'READY', record, admitted}
--   (admitted: 0 held already, 2 admitted now, 3 admitted now as the room's only live token)
--   | {'WAITING', position, joined} (and the place's number: answer)
--   | {'PREQUEUE', place in line (not told: the draw is secret until the opening), joined}
--   | {'FULL', waiting} | {'CLOSED'} | {'NOROOM'} | {'LIMITED', ms until allowed} | {'SPENT'}
local s = redis.call('HMGET', settingsKey, 'hot', 'page', 'mark', ARGV[limitArg + 1], ARGV[limitArg + 2], ARGV[limitArg + 3], 'front', 'next', 'born')
local room, refused, limitNow = visit(settingsKey, roomOf(s[1], s[2], false, true), s, 3, limitArg, 3)
if refused then
  return refused
end
local born = s[9]
local placed, recorded, current = callerPlace(accountKey, field, place, placeAtMs, born)
if roomHas(room, closedBit) then
  -- Sold out: a live entry token keeps its chance at checkout, as does a
  -- number admitted before the closing (its claim); nobody joins, and the
  -- line (released by admission) is not read.
  local n = placed and math.min(recorded or placed, placed) or recorded
  local held = redis.call('GET', recordKey)
    or (n and claim(markKey, batchesKey, recordKey, liveKey, unclaimedKey, settingsKey, accountKey, user, field, n, token, room.ttl))
  return held and answer('READY', held, 0, room) or answer('CLOSED', 0, 0, room)
end
-- The clock: the caller's (the limiter's time, ARGV[limitArg]) for the
-- second's mark and the stall check, where a millisecond between two
-- clocks is nothing; the store's for a scheduled opening, which every
-- caller must see at the same instant (pre-queue places are drawn until
-- then), and for an instant admission or a claim. A TIME is a tenth of a
-- new user's enter.
local nowUs, nowMs
if roomHas(room, scheduledBit) then
  nowUs, nowMs = serverTime()
else
  nowUs = limitNow or tonumber(ARGV[limitArg])
  nowMs = math.floor(nowUs / 1000)
end
local prequeue = room.opensAt > nowMs
local front, sorted = frontOf(s[7])
local nextN = tonumber(s[8]) or 1
local n, rank, _, counted = placeOf(settingsKey, lineKey, user, recorded, placed, front, sorted, nextN)
nextN = counted
if rank then
  if n and n ~= recorded and not anonymous then
    -- An account's record a failover lost (its credential carries the
    -- number), put back for its other devices.
    keepAccount(accountKey, field, string.format('%d', n), born, current, accountMs(rank + 1, room))
  end
  if prequeue then
    return answer('PREQUEUE', rank + 1, 0, room)
  end
  return answer('WAITING', rank + 1, 0, room, stalled(room, rank + 1, budgetKey, liveKey, stallHorizonMs, stallAfterUs, nowUs, settingsKey), n)
end
local record = redis.call('GET', recordKey)
if record then
  return answer('READY', record, 0, room)
end
-- A number the front has passed: its turn, claimed (claim.lua).
record = n and front and claim(markKey, batchesKey, recordKey, liveKey, unclaimedKey, settingsKey, accountKey, user, field, n, token, room.ttl)
if record then
  return answer('READY', record, 0, room)
end
-- Everyone in line: the numbers the front has not passed, and the sorted
-- set unless the front says it is empty.
local drawn = sorted and redis.call('ZCARD', lineKey) or 0
local waiting = (front and nextN - front or 0) + drawn
if waiting >= room.capacity then
  return answer('FULL', waiting, 0, room)
end
if challengeSpent(challengeKey, challengeMs) then
  return {'SPENT'}
end
-- A fresh counter: born now, its front at its first number.
local fields = {}
if not front then
  front = nextN
  fields = {'born', string.format('%d', nowMs)}
end
if waiting == 0 and not prequeue and not roomHas(room, pausedBit) and roomHas(room, instantBit) then
  local admittedNow, only = admitNow({budget = budgetKey, live = liveKey, record = recordKey, admits = admitsKey,
    batches = batchesKey, mark = markKey, settings = settingsKey}, user, token, room, nextN, fields)
  if admittedNow then
    return answer('READY', admittedNow, only and 3 or 2, room, 0, nextN)
  end
end
if prequeue then
  -- Before the opening, the place is a random draw between the last number
  -- given out and the next: the pre-queue is ahead of everyone who enters
  -- after the opening and behind anyone already in line, in a uniformly
  -- random order that re-entering (drawRank above) never changes. Nobody
  -- takes a number during a pre-queue, so the base is the same for all.
  local base = nextN - 1
  if waiting == 0 then
    redis.call('PERSIST', marksKey) -- an idle room's expiry (admit.lua)
  end
  redis.call('ZADD', lineKey, string.format('%.17g', base + tonumber(draw)), user)
  table.insert(fields, 'front')
  table.insert(fields, string.format('%d', -front))
  table.insert(fields, 'next')
  table.insert(fields, string.format('%d', nextN))
  redis.call('HSET', settingsKey, unpack(fields))
  -- Pre-queued users have waited since the opening, for the wait metric.
  redis.call('ZADD', marksKey, 'NX', string.format('%.17g', base + 2 ^ -33), string.format('%d', math.floor(room.opensAt / 1000)) .. ':open')
  return answer('PREQUEUE', waiting + 1, 1, room)
end
-- A new number, once as text: a number argument of redis.call is printed
-- with %.17g at every call that carries it. An account's is recorded
-- (line.lua), in a bucket of this line (a fresh counter's is born now).
local seq = string.format('%d', nextN)
if not anonymous then
  keepAccount(accountKey, field, seq, born or fields[2], current, accountMs(waiting + 1, room))
end
table.insert(fields, 'next')
table.insert(fields, string.format('%d', nextN + 1))
if waiting == 0 then
  -- The line's start, which the room's view reads (waitroom.View.Since),
  -- and its front (a fresh counter's, or the line's that emptied).
  table.insert(fields, 'since')
  table.insert(fields, string.format('%d', nowUs))
  table.insert(fields, 'front')
  table.insert(fields, string.format('%d', drawn > 0 and -front or front))
  -- An idle room sees no batches (admission skips its budget, or idles
  -- itself): admission has not stalled before someone waits.
  redis.call('HSET', budgetKey, 'since', string.format('%d', nowUs))
  -- Its marks were set to expire (admit.lua, only ever with an empty
  -- line): someone waits again.
  redis.call('PERSIST', marksKey)
end
-- One mark a second lets admission tell how long a user waited without
-- storing a timestamp per user: the first number of each second, the
-- second of the clock above. The room's hash holds the last second marked
-- ('mark', read with the settings), so that the second's later enters
-- write nothing: a ZADD NX that finds its member costs as much as a new
-- user's ZADD to the line. The marks go only with an empty line
-- (admit.lua), whose first enter always marks.
local second = string.format('%d', math.floor(nowUs / 1000000))
if waiting == 0 or s[3] ~= second then
  redis.call('ZADD', marksKey, 'NX', seq, second)
  table.insert(fields, 'mark')
  table.insert(fields, second)
end
redis.call('HSET', settingsKey, unpack(fields))
return answer('WAITING', waiting + 1, 1, room, stalled(room, waiting + 1, budgetKey, liveKey, stallHorizonMs, stallAfterUs, nowUs, settingsKey), nextN)
