-- Release a lock only if we still own it (compare-and-delete), and count
-- the order API call made under it (downstream.lua): a failed one once per
-- token holder while the token lives (firstFailure).
local lockKey = KEYS[1]
local downstreamKey = KEYS[2] -- the room's downstream counters
local failedKey = KEYS[3] -- the holder's failure mark (wr:{room}:failed:<user>)
local lockValue = ARGV[1]
local counter = ARGV[2] -- the call's counter ('' or absent: none)
local countersExpiryMs = ARGV[3]
if redis.call('GET', lockKey) == lockValue then
  if firstFailure(failedKey, counter, redis.call('PTTL', lockKey)) then
    recordCall(downstreamKey, counter, countersExpiryMs)
  end
  return redis.call('DEL', lockKey)
end
return 0
