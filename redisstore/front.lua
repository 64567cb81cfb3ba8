-- The front of a room's line for live streams, and whether the room is
-- closed and what its operator tells the line: one read a room and
-- interval, for every stream of the room.
local settingsKey = KEYS[1] -- the room's hash (settings.lua)
local lineKey = KEYS[2] -- the line's sorted part (line.lua)
local placesKey = KEYS[3] -- places (line.lua)
-- Returns {the front's sequence number (-1 when the line is empty), the room's
--   'hot' field ('' when none is stored: not closed, no message)}
local seq, sorted = frontOf(redis.call('HGET', placesKey, ''))
seq = seq or -1
if sorted then
  -- The sorted set's first, when it is ahead of the queue's.
  local first = redis.call('ZRANGE', lineKey, 0, 0, 'WITHSCORES')
  if first[2] and (seq < 0 or tonumber(first[2]) < seq) then
    seq = tonumber(first[2])
  end
end
return {seq, redis.call('HGET', settingsKey, 'hot') or ''}
