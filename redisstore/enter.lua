-- Join a room's line, or report where the user already stands.
-- One script, so that no request slips between the capacity check and the insert.
-- KEYS[1] settings  KEYS[2] line (zset user -> sequence)  KEYS[3] sequence counter
-- KEYS[4] the user's entry-token record  KEYS[5] marks (zset member second -> first sequence of that second)
-- KEYS[6] second of the newest mark  KEYS[7] budget (enter sets 'since')  KEYS[8] live tokens
-- ARGV[1..4] defaults (room.lua)  ARGV[5] user  ARGV[6] random draw in (0, 1)
-- ARGV[7] stall after µs  ARGV[8] stall horizon ms (room.lua, stalled)
-- KEYS[9..11] the caller's, its address's and its new visitors' buckets  ARGV[9..14] limits (ratelimit.lua)
-- Returns answer(kind, …): {'READY', record} | {'WAITING', position, joined}
--   | {'PREQUEUE', place in line (not told: the draw is secret until the opening), joined}
--   | {'FULL', waiting} | {'NOROOM'} | {'LIMITED', ms until allowed}
local room = roomSettings()
if not room.open then
  return {'NOROOM'}
end
-- The abuse limiter (ratelimit.lua) right after the one read that refuses
-- unknown rooms, so that those still write nothing; a refused call does nothing else.
local nowUs, nowMs, second = serverTime()
local limitWait = rateLimit(9, 9, nowUs)
if limitWait > 0 then
  return {'LIMITED', limitWait}
end
local record = redis.call('GET', KEYS[4])
if record then
  return answer('READY', record, 0, room)
end
local prequeue = room.opensAt > nowMs
local rank = redis.call('ZRANK', KEYS[2], ARGV[5])
if rank then
  if prequeue then
    return answer('PREQUEUE', rank + 1, 0, room)
  end
  return answer('WAITING', rank + 1, 0, room, stalled(room, rank + 1, KEYS[7], KEYS[8], tonumber(ARGV[7]), tonumber(ARGV[8]), nowUs))
end
local waiting = redis.call('ZCARD', KEYS[2])
if waiting >= room.capacity then
  return answer('FULL', waiting, 0, room)
end
if prequeue then
  -- Before the opening, the place is a random draw between the last
  -- sequence given out and the next one: the pre-queue is ahead of everyone
  -- who enters after the opening and behind anyone already in line, in a
  -- uniformly random order that re-entering (ZRANK above) never changes.
  -- Nobody takes a sequence during a pre-queue, so base is the same for all.
  local base = tonumber(redis.call('GET', KEYS[3]) or '0')
  if waiting == 0 then
    redis.call('SET', KEYS[3], base) -- keeps base and drops an idle room's expiry
    redis.call('PERSIST', KEYS[5])
  end
  redis.call('ZADD', KEYS[2], string.format('%.17g', base + tonumber(ARGV[6])), ARGV[5])
  -- Pre-queued users have waited since the opening, for the wait metric.
  redis.call('ZADD', KEYS[5], 'NX', string.format('%.17g', base + 2 ^ -33), string.format('%d', math.floor(room.opensAt / 1000)) .. ':open')
  return answer('PREQUEUE', waiting + 1, 1, room)
end
local seq = redis.call('INCR', KEYS[3])
redis.call('ZADD', KEYS[2], seq, ARGV[5])
if waiting == 0 then
  -- An idle room sees no batches (admission skips its budget, or idles
  -- itself): admission has not stalled before someone waits.
  redis.call('HSET', KEYS[7], 'since', string.format('%d', nowUs))
  -- Its keys were set to expire (admit.lua, only ever with an empty line):
  -- someone waits again.
  redis.call('PERSIST', KEYS[3])
  redis.call('PERSIST', KEYS[5])
  redis.call('PERSIST', KEYS[6])
end
-- One mark a second lets admission tell how long a user waited without
-- storing a timestamp per user.
if tonumber(redis.call('GET', KEYS[6]) or '0') < second then
  redis.call('SET', KEYS[6], second)
  redis.call('ZADD', KEYS[5], seq, second)
end
return answer('WAITING', waiting + 1, 1, room, stalled(room, waiting + 1, KEYS[7], KEYS[8], tonumber(ARGV[7]), tonumber(ARGV[8]), nowUs))
