-- Release a lock only if we still own it (compare-and-delete), and count
-- the order API call made under it (downstream.lua): a failed one once per
-- token holder while the token lives (firstFailure).
-- KEYS[1] lock  ARGV[1] lock value
-- KEYS[2] the room's downstream counters  ARGV[2] the call's counter ('' or absent: none)
-- ARGV[3] the counters' expiry ms
-- KEYS[3] the holder's failure mark (wr:{room}:failed:<user>)
if redis.call('GET', KEYS[1]) == ARGV[1] then
  if firstFailure(3, 2, redis.call('PTTL', KEYS[1])) then
    recordCall(2, 2)
  end
  return redis.call('DEL', KEYS[1])
end
return 0
