-- Where a user stands, read atomically so that an admission in between
-- cannot make a waiting user look absent.
-- KEYS[1] line  KEYS[2] the user's entry-token record   ARGV[1] user
-- Returns {'READY', record} | {'WAITING', position} | {'NOT_IN_QUEUE'}
local record = redis.call('GET', KEYS[2])
if record then
  return {'READY', record}
end
local rank = redis.call('ZRANK', KEYS[1], ARGV[1])
if rank then
  return {'WAITING', rank + 1}
end
return {'NOT_IN_QUEUE'}
