-- Check an entry token and take the user's order lock in one step.
-- The lock lives at least as long as the token: when the commit after a
-- successful order cannot reach the store, the surviving lock keeps that
-- token from ordering again (at most once wins over a retry; issue 12).
local recordKey = KEYS[1] -- the user's entry-token record
local lockKey = KEYS[2] -- the user's order lock
local answerKey = KEYS[3] -- the stored answer of the idempotency key (read only when keyed)
local settingsKey = KEYS[4] -- the room's hash (settings.lua), whose fields the limiter's buckets are
local token = ARGV[1]
local lockValue = ARGV[2] -- random
local lockTTLMs = ARGV[3]
local keyed = ARGV[4] == '1' -- the call has an idempotency key
local limitArg = 5 -- ARGV[5..7]: the limiter's time and the fields of the caller's and its address's buckets (ratelimit.lua)
local createdOnly = ARGV[8] == '1' -- only a room an operator created sells (ORDER_ROOMS unset):
-- its settings hold 'rate' (settings_set.lua), which no visitor can write
-- Returns {'REPLAY', answer} | {'INVALID'} | {'BUSY'} | {'OK', token expiry (Unix ms)}
--   | {'LIMITED', ms until allowed} | {'UNSOLD'}
if ARGV[limitArg + 1] ~= '' or ARGV[limitArg + 2] ~= '' then
  local limitWait = rateLimit(settingsKey, redis.call('HMGET', settingsKey, ARGV[limitArg + 1], ARGV[limitArg + 2]), 0, limitArg, 2)
  if limitWait > 0 then
    return {'LIMITED', limitWait}
  end
end
if createdOnly and redis.call('HEXISTS', settingsKey, 'rate') == 0 then
  return {'UNSOLD'}
end
if keyed then
  local answer = redis.call('GET', answerKey)
  if answer then
    return {'REPLAY', answer}
  end
end
local record = redis.call('GET', recordKey)
if not record then
  return {'INVALID'}
end
-- The record is expiry:issued:token: the token is its end, after a ':' (a
-- plain comparison; a pattern would scan the record from every position).
if string.sub(record, -#token - 1) ~= ':' .. token then
  return {'INVALID'}
end
-- The caller's clock (the limiter's, ARGV[limitArg]) is good enough for how
-- long the token has left: the lock outlives it by a lock TTL anyway.
local tokenLeftMs = tonumber(string.sub(record, 1, string.find(record, ':', 1, true) - 1)) - math.floor(tonumber(ARGV[limitArg]) / 1000)
local lockMs = math.max(tonumber(lockTTLMs), tokenLeftMs)
if not redis.call('SET', lockKey, lockValue, 'NX', 'PX', string.format('%d', lockMs)) then
  -- Ours already when a client retry runs this script a second time.
  if redis.call('GET', lockKey) ~= lockValue then
    return {'BUSY'}
  end
end
-- The token's expiry is the order record's TTL (orderrecord, issue 33).
return {'OK', string.sub(record, 1, string.find(record, ':', 1, true) - 1)}
