-- Join a room's line, or report where the user already stands.
-- One script, so that no request slips between the capacity check and the insert.
-- KEYS[1] line (zset user -> sequence)   KEYS[2] sequence counter
-- KEYS[3] the user's entry-token record  KEYS[4] marks (zset second -> first sequence of that second)
-- KEYS[5] second of the newest mark
-- ARGV[1] user  ARGV[2] capacity
-- Returns {'READY', record} | {'WAITING', position, joined} | {'FULL', waiting}
local record = redis.call('GET', KEYS[3])
if record then
  return {'READY', record}
end
local rank = redis.call('ZRANK', KEYS[1], ARGV[1])
if rank then
  return {'WAITING', rank + 1, 0}
end
local waiting = redis.call('ZCARD', KEYS[1])
if waiting >= tonumber(ARGV[2]) then
  return {'FULL', waiting}
end
local seq = redis.call('INCR', KEYS[2])
redis.call('ZADD', KEYS[1], seq, ARGV[1])
-- One mark a second lets admission tell how long a user waited without
-- storing a timestamp per user.
local second = tonumber(redis.call('TIME')[1])
if tonumber(redis.call('GET', KEYS[5]) or '0') < second then
  redis.call('SET', KEYS[5], second)
  redis.call('ZADD', KEYS[4], seq, second)
end
return {'WAITING', waiting + 1, 1}
