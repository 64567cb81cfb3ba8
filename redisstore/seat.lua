-- Where a user stands and the sequence number of their place, read
-- atomically: a live stream computes the position from it and the front of
-- the line alone, so that open streams cost the store nothing per stream.
-- That arithmetic holds only for a line of whole sequence numbers whose
-- answers depend on nothing else: a room without stored settings. Otherwise
-- the sequence is 0 and the stream reads the seat again at every move.
-- KEYS[1] settings  KEYS[2] line  KEYS[3] the user's entry-token record
-- KEYS[4] budget  KEYS[5] live tokens
-- ARGV[1..4] defaults (room.lua)  ARGV[5] user  ARGV[6] stall after µs  ARGV[7] stall horizon ms
-- KEYS[6] the caller's bucket  KEYS[7] its IP's bucket  ARGV[8..11] limits (ratelimit.lua)
-- Returns answer(kind, …) as position.lua, and for WAITING a ninth element: the sequence or 0
local room = roomSettings()
if not room.open then
  return {'NOROOM'}
end
-- The abuse limiter (ratelimit.lua) right after the one read that refuses
-- unknown rooms, so that those still write nothing; a refused call does nothing else.
local limitWait = rateLimit(KEYS[6], KEYS[7], 8)
if limitWait > 0 then
  return {'LIMITED', limitWait}
end
limiterState.failedOpen = limitWait < 0 and 1 or 0
local record = redis.call('GET', KEYS[3])
if record then
  return answer('READY', record, 0, room)
end
local rank = redis.call('ZRANK', KEYS[2], ARGV[5])
if not rank then
  return answer('NOT_IN_QUEUE', 0, 0, room)
end
if room.opensAt > 0 then
  local _, nowMs = serverTime()
  if room.opensAt > nowMs then
    return answer('PREQUEUE', 0, 0, room)
  end
end
local out = answer('WAITING', rank + 1, 0, room, stalled(room, rank + 1, KEYS[4], KEYS[5], tonumber(ARGV[6]), tonumber(ARGV[7])))
local seq = 0
if not room.stored then
  seq = tonumber(redis.call('ZSCORE', KEYS[2], ARGV[5]))
end
table.insert(out, seq)
return out
