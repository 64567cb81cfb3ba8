-- Where a user stands, read atomically so that an admission in between
-- cannot make a waiting user look absent. The line first: most polls come
-- from users in it, who hold no token (admission takes a user out of the
-- line and writes its token in one script), so their poll reads no record.
local settingsKey = KEYS[1] -- the room's hash (settings.lua)
local lineKey = KEYS[2] -- the line's sorted part (line.lua)
local recordKey = KEYS[3] -- the user's entry-token record
local budgetKey = KEYS[4] -- admission's budget (admit.lua)
local liveKey = KEYS[5] -- live tokens
local placesKey = KEYS[6] -- places (line.lua)
local seqKey = KEYS[7] -- the sequence counter (line.lua)
local user = ARGV[1]
local limitArg = 2 -- ARGV[2..4]: the limiter's time and the fields of the caller's and its address's buckets (ratelimit.lua)
local place = ARGV[5] -- the number of the place the caller's credential carries ('0': none), restored if the store lost it (restore.lua)
-- 'seat' for a live stream's read (Store.Seat): a WAITING answer then
-- carries two more elements, the place's sequence number and 1, or 0 in a
-- room with stored settings, whose answers depend on more than the line,
-- or while the sorted set may hold anyone, whose places are not consecutive
-- (the stream then reads the seat again at every move instead of
-- computing from the front; the number still tells it whether the front
-- has passed the place)
local seat = ARGV[6] == 'seat'
-- Returns answer(kind, …): {'READY', record} | {'WAITING', position}
--   | {'PREQUEUE'} | {'NOT_IN_QUEUE'} | {'CLOSED'} | {'NOROOM'} | {'LIMITED', ms until allowed}
local s = redis.call('HMGET', settingsKey, 'hot', ARGV[limitArg + 1], ARGV[limitArg + 2], 'front')
local room, refused = visit(settingsKey, roomOf(s[1]), s, 1, limitArg, 2)
if refused then
  return refused
end
if roomHas(room, closedBit) then
  -- Sold out: the line is being released (admit.lua); a live entry token
  -- stays valid, everyone else is told CLOSED without a read of the line.
  return heldOr('CLOSED', recordKey, room)
end
-- The common case inline (line.lua): a user in the queue, the front's
-- copy in the room's hash, and nobody in the sorted set.
local queued = redis.call('HGET', placesKey, user)
local front = queued and tonumber(s[4])
local rank, seq
if front and front > 0 then
  rank, seq = queued - front, queued
else
  rank, seq = placeOf(settingsKey, lineKey, placesKey, user, queued, s[4])
end
-- Not in line: a token holder's READY, else a place a failover lost, put
-- back at the number the caller's credential carries (restore.lua).
if not rank and (place == '0' or redis.call('EXISTS', recordKey) == 1 or
    not restore(settingsKey, lineKey, placesKey, seqKey, user, tonumber(place), s[4])) then
  return heldOr('NOT_IN_QUEUE', recordKey, room)
end
if not rank then
  rank, seq = placeOf(settingsKey, lineKey, placesKey, user, nil, nil)
end
if roomHas(room, scheduledBit) then -- the clock only for a scheduled opening
  local _, nowMs = serverTime()
  if roomNumbers(room).opensAt > nowMs then
    return answer('PREQUEUE', 0, 0, room)
  end
end
local out = answer('WAITING', rank + 1, 0, room, stalled(room, rank + 1, budgetKey, liveKey, stallHorizonMs, stallAfterUs), queued and tonumber(queued))
if seat then
  local _, sorted = frontOf(s[4])
  table.insert(out, tonumber(seq))
  table.insert(out, (room.stored or sorted) and 0 or 1)
end
return out
