-- The front of a room's line for live streams, and whether the room is
-- closed and what its operator tells the line: one read a room and
-- interval, for every stream of the room.
-- KEYS[1] line  KEYS[2] settings
-- Returns {the front's sequence number (-1 when the line is empty), closed (1|0), message}
local front = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local s = redis.call('HMGET', KEYS[2], 'closed', 'message')
local seq = -1
if front[2] then
  seq = tonumber(front[2])
end
return {seq, s[1] == '1' and 1 or 0, s[2] or ''}
