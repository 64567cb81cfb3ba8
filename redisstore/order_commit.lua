-- After a successful order: consume the token (freeing the user's place),
-- keep the answer for idempotent replays, and release the lock if we own it.
-- KEYS[1] the user's entry-token record  KEYS[2] the user's order lock
-- KEYS[3] the idempotency record  KEYS[4] live tokens (zset)
-- ARGV[1] token  ARGV[2] lock value  ARGV[3] user  ARGV[4] '1' with an idempotency key
-- ARGV[5] answer  ARGV[6] answer TTL seconds
-- KEYS[5] the room's downstream counters  ARGV[7] the call's counter ('' none)
-- ARGV[8] the counters' expiry ms (downstream.lua)
-- Returns 1 when the token was consumed by this call.
local consumed = 0
local record = redis.call('GET', KEYS[1])
if record and string.sub(record, -#ARGV[1] - 1) == ':' .. ARGV[1] then -- expiry:issued:token
  redis.call('DEL', KEYS[1])
  redis.call('ZREM', KEYS[4], ARGV[3])
  consumed = 1
end
if ARGV[4] == '1' then
  redis.call('SET', KEYS[3], ARGV[5], 'EX', ARGV[6])
end
if redis.call('GET', KEYS[2]) == ARGV[2] then
  -- Counted with the lock's release: a retried commit finds the lock gone
  -- and counts nothing twice.
  recordCall(5, 7)
  redis.call('DEL', KEYS[2])
end
return consumed
