-- After a successful order: consume the token (freeing the user's place),
-- keep the answer for idempotent replays, and release the lock if we own it.
local recordKey = KEYS[1] -- the user's entry-token record
local lockKey = KEYS[2] -- the user's order lock
local answerKey = KEYS[3] -- the stored answer of the idempotency key
local liveKey = KEYS[4] -- live tokens (zset)
local downstreamKey = KEYS[5] -- the room's downstream counters (downstream.lua)
local token = ARGV[1]
local lockValue = ARGV[2]
local user = ARGV[3]
local keyed = ARGV[4] == '1' -- the call has an idempotency key
local answer = ARGV[5]
local answerTTLSeconds = ARGV[6]
local counter = ARGV[7] -- the call's downstream counter ('' none)
local countersExpiryMs = ARGV[8]
-- Returns 1 when the token was consumed by this call.
local consumed = 0
local record = redis.call('GET', recordKey)
if record and string.sub(record, -#token - 1) == ':' .. token then -- expiry:issued:token
  redis.call('DEL', recordKey)
  redis.call('ZREM', liveKey, user)
  consumed = 1
end
if keyed then
  redis.call('SET', answerKey, answer, 'EX', answerTTLSeconds)
end
if redis.call('GET', lockKey) == lockValue then
  -- Counted with the lock's release: a retried commit finds the lock gone
  -- and counts nothing twice.
  recordCall(downstreamKey, counter, countersExpiryMs)
  redis.call('DEL', lockKey)
end
return consumed
