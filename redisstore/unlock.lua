-- Release a lock only if we still own it (compare-and-delete).
-- KEYS[1] lock  ARGV[1] lock value
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
