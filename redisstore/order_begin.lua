-- Check an entry token and take the user's order lock in one step.
-- KEYS[1] the user's entry-token record  KEYS[2] the user's order lock
-- KEYS[3] the idempotency record (read only when ARGV[4] == '1')
-- ARGV[1] token  ARGV[2] lock value (random)  ARGV[3] lock TTL ms  ARGV[4] '1' with an idempotency key
-- The lock lives at least as long as the token: when the commit after a
-- successful order cannot reach the store, the surviving lock keeps that
-- token from ordering again (at most once wins over a retry; issue 12).
-- KEYS[4] the room's hash (settings.lua), whose fields the limiter's buckets are
-- ARGV[5..7] the limiter's time and the fields of the caller's and its address's
--   buckets (ratelimit.lua)
-- ARGV[8] '1' when only a room an operator created sells (ORDER_ROOMS unset):
--   its settings hold 'rate' (settings_set.lua), which no visitor can write
-- Returns {'REPLAY', answer} | {'INVALID'} | {'BUSY'} | {'OK', token expiry (Unix ms)}
--   | {'LIMITED', ms until allowed} | {'UNSOLD'}
if ARGV[6] ~= '' or ARGV[7] ~= '' then
  local limitWait = rateLimit(4, redis.call('HMGET', KEYS[4], ARGV[6], ARGV[7]), 0, 5, 2)
  if limitWait > 0 then
    return {'LIMITED', limitWait}
  end
end
if ARGV[8] == '1' and redis.call('HEXISTS', KEYS[4], 'rate') == 0 then
  return {'UNSOLD'}
end
if ARGV[4] == '1' then
  local answer = redis.call('GET', KEYS[3])
  if answer then
    return {'REPLAY', answer}
  end
end
local record = redis.call('GET', KEYS[1])
if not record then
  return {'INVALID'}
end
-- The record is expiry:issued:token: the token is its end, after a ':' (a
-- plain comparison; a pattern would scan the record from every position).
if string.sub(record, -#ARGV[1] - 1) ~= ':' .. ARGV[1] then
  return {'INVALID'}
end
-- The caller's clock (the limiter's, ARGV[5]) is good enough for how long
-- the token has left: the lock outlives it by a lock TTL anyway.
local tokenLeftMs = tonumber(string.sub(record, 1, string.find(record, ':', 1, true) - 1)) - math.floor(tonumber(ARGV[5]) / 1000)
local lockMs = math.max(tonumber(ARGV[3]), tokenLeftMs)
if not redis.call('SET', KEYS[2], ARGV[2], 'NX', 'PX', string.format('%d', lockMs)) then
  -- Ours already when a client retry runs this script a second time.
  if redis.call('GET', KEYS[2]) ~= ARGV[2] then
    return {'BUSY'}
  end
end
-- The token's expiry is the order record's TTL (orderrecord, issue 33).
return {'OK', string.sub(record, 1, string.find(record, ':', 1, true) - 1)}
