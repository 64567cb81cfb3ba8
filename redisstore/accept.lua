-- The broker's accept (INTAKE=broker, and fallback while the store answers
-- again): before an entry goes to the broker, the two checks enter makes
-- first, in one script: the room exists (OPEN_ROOMS=false refuses unknown
-- rooms here too, and nothing is written for them) and the abuse limiter
-- (ratelimit.lua) lets the caller through.
-- KEYS[1] the room's hash (settings.lua)
-- ARGV[1..4] the limiter's time and the fields of the caller's, its address's and its
--   new visitors' buckets (ratelimit.lua)
-- ARGV[5] the caller's solved challenge's remaining life ms, KEYS[2] its record,
--   present only when ARGV[5] is not '0' (challenge.lua)
-- Returns {'NOROOM'} | {'LIMITED', ms until allowed} | {'CLOSED', hot} | {'SPENT'} | {'OK'}
local s = redis.call('HMGET', KEYS[1], 'hot', ARGV[2], ARGV[3], ARGV[4])
local room, refused = visit(roomOf(s[1]), s, 1, 1, 3)
if refused then
  return refused
end
if roomHas(room, closedBit) then
  return {'CLOSED', room.hot}
end
-- A closed room spends no solution: the visitor may use it elsewhere.
if challengeSpent(2, 5) then
  return {'SPENT'}
end
return {'OK'}
