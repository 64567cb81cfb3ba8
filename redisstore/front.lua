-- The front of a room's line for live streams, and whether the room is
-- closed and what its operator tells the line: one read a room and
-- interval, for every stream of the room.
-- KEYS[1] line  KEYS[2] the room's hash (settings.lua)
-- Returns {the front's sequence number (-1 when the line is empty), the room's
--   'hot' field ('' when none is stored: not closed, no message)}
local front = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local seq = -1
if front[2] then
  seq = tonumber(front[2])
end
return {seq, redis.call('HGET', KEYS[2], 'hot') or ''}
