-- Where a user stands and the sequence number of their place, read
-- atomically: a live stream computes the position from it and the front of
-- the line alone, so that open streams cost the store nothing per stream.
-- KEYS[1] line  KEYS[2] the user's entry-token record   ARGV[1] user
-- Returns {'READY', record} | {'WAITING', position, sequence} | {'NOT_IN_QUEUE'}
local record = redis.call('GET', KEYS[2])
if record then
  return {'READY', record}
end
local seq = redis.call('ZSCORE', KEYS[1], ARGV[1])
if seq then
  return {'WAITING', redis.call('ZRANK', KEYS[1], ARGV[1]) + 1, tonumber(seq)}
end
return {'NOT_IN_QUEUE'}
