-- The front of a room's line for live streams, and whether the room is
-- closed and what its operator tells the line: one read a room and
-- interval, for every stream of the room.
local settingsKey = KEYS[1] -- the room's hash (settings.lua): the line's front and counter (line.lua)
local lineKey = KEYS[2] -- the line's sorted set (line.lua)
-- Returns {the first number in line (-1 when the line is empty), the room's
--   'hot' field ('' when none is stored: not closed, no message)}
local s = redis.call('HMGET', settingsKey, 'front', 'next', 'hot')
local front, sorted = frontOf(s[1])
local seq = -1
if front and front < (tonumber(s[2]) or 1) then
  seq = front
end
if sorted then
  -- The sorted set's first, when it is ahead of the numbers'.
  local first = redis.call('ZRANGE', lineKey, 0, 0, 'WITHSCORES')
  if first[2] and (seq < 0 or tonumber(first[2]) < seq) then
    seq = tonumber(first[2])
  end
end
return {seq, s[3] or ''}
