-- The sequence number at the front of a room's line, -1 when it is empty.
-- KEYS[1] line
local front = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if front[2] then
  return tonumber(front[2])
end
return -1
