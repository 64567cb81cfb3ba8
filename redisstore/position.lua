-- Where a user stands, read atomically so that an admission in between
-- cannot make a waiting user look absent.
-- KEYS[1] settings  KEYS[2] line  KEYS[3] the user's entry-token record
-- KEYS[4] budget  KEYS[5] live tokens
-- ARGV[1..4] defaults (room.lua)  ARGV[5] user  ARGV[6] stall after µs
-- ARGV[7] stall horizon ms (room.lua, stalled)
-- Returns answer(kind, …): {'READY', record} | {'WAITING', position}
--   | {'PREQUEUE'} | {'NOT_IN_QUEUE'} | {'NOROOM'} | {'LIMITED', ms until allowed}
-- KEYS[6..8] the caller's, its address's and its new visitors' buckets  ARGV[8..13] limits (ratelimit.lua)
-- ARGV[14] 'seat' for a live stream's read (Store.Seat): a WAITING answer then
--   carries an eighth element, the place's sequence number, or 0 in a room with
--   stored settings, whose answers depend on more than the line (the stream
--   then reads the seat again at every move instead of computing from the front)
local room = roomSettings()
if not room.open then
  return {'NOROOM'}
end
-- The abuse limiter (ratelimit.lua) right after the one read that refuses
-- unknown rooms, so that those still write nothing; a refused call does nothing else.
local limitWait, nowUs = rateLimit(6, 8)
if limitWait > 0 then
  return {'LIMITED', limitWait}
end
local record = redis.call('GET', KEYS[3])
if record then
  return answer('READY', record, 0, room)
end
local rank = redis.call('ZRANK', KEYS[2], ARGV[5])
if not rank then
  return answer('NOT_IN_QUEUE', 0, 0, room)
end
if room.opensAt > 0 then -- the clock only for a scheduled opening
  if not nowUs then
    nowUs = serverTime()
  end
  if room.opensAt > math.floor(nowUs / 1000) then
    return answer('PREQUEUE', 0, 0, room)
  end
end
local out = answer('WAITING', rank + 1, 0, room, stalled(room, rank + 1, KEYS[4], KEYS[5], tonumber(ARGV[6]), tonumber(ARGV[7]), nowUs))
if ARGV[14] == 'seat' then
  table.insert(out, room.stored and 0 or tonumber(redis.call('ZSCORE', KEYS[2], ARGV[5])))
end
return out
