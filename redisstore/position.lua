-- Where a user stands, read atomically so that an admission in between
-- cannot make a waiting user look absent. The line first: most polls come
-- from users in it, who hold no token (admission takes a user out of the
-- line and writes its token in one script), so their poll reads no record.
-- KEYS[1] the room's hash (settings.lua)  KEYS[2] line (sorted set: line.lua)  KEYS[3] the user's entry-token record
-- KEYS[4] budget  KEYS[5] live tokens  KEYS[6] places  KEYS[7] sequence counter (line.lua)
-- ARGV[1] user  ARGV[2..4] the limiter's time and the fields of the caller's and its
--   address's buckets (ratelimit.lua)
-- ARGV[5] the number of the place the caller's credential carries ('0': none),
--   restored if the store lost it (restore.lua)
-- ARGV[6] 'seat' for a live stream's read (Store.Seat): a WAITING answer then
--   carries two more elements, the place's sequence number and 1, or 0 in a
--   room with stored settings, whose answers depend on more than the line,
--   or while the sorted set may hold anyone, whose places are not consecutive
--   (the stream then reads the seat again at every move instead of
--   computing from the front; the number still tells it whether the front
--   has passed the place)
-- Returns answer(kind, …): {'READY', record} | {'WAITING', position}
--   | {'PREQUEUE'} | {'NOT_IN_QUEUE'} | {'CLOSED'} | {'NOROOM'} | {'LIMITED', ms until allowed}
local s = redis.call('HMGET', KEYS[1], 'hot', ARGV[3], ARGV[4], 'front')
local room, refused = visit(roomOf(s[1]), s, 1, 2, 2)
if refused then
  return refused
end
if roomHas(room, closedBit) then
  -- Sold out: the line is being released (admit.lua); a live entry token
  -- stays valid, everyone else is told CLOSED without a read of the line.
  return heldOr('CLOSED', KEYS[3], room)
end
-- The common case inline (line.lua): a user in the queue, the front's
-- copy in the room's hash, and nobody in the sorted set.
local queued = redis.call('HGET', KEYS[6], ARGV[1])
local front = queued and tonumber(s[4])
local rank, seq
if front and front > 0 then
  rank, seq = queued - front, queued
else
  rank, seq = placeOf(KEYS[2], KEYS[6], ARGV[1], queued, s[4])
end
-- Not in line: a token holder's READY, else a place a failover lost, put
-- back at the number the caller's credential carries (restore.lua).
if not rank and (ARGV[5] == '0' or redis.call('EXISTS', KEYS[3]) == 1 or
    not restore(KEYS[2], KEYS[6], KEYS[7], ARGV[1], tonumber(ARGV[5]), s[4])) then
  return heldOr('NOT_IN_QUEUE', KEYS[3], room)
end
if not rank then
  rank, seq = placeOf(KEYS[2], KEYS[6], ARGV[1], nil, nil)
end
if roomHas(room, scheduledBit) then -- the clock only for a scheduled opening
  local _, nowMs = serverTime()
  if roomNumbers(room).opensAt > nowMs then
    return answer('PREQUEUE', 0, 0, room)
  end
end
local out = answer('WAITING', rank + 1, 0, room, stalled(room, rank + 1, KEYS[4], KEYS[5], stallHorizonMs, stallAfterUs), queued and tonumber(queued))
if ARGV[6] == 'seat' then
  local _, sorted = frontOf(s[4])
  table.insert(out, tonumber(seq))
  table.insert(out, (room.stored or sorted) and 0 or 1)
end
return out
