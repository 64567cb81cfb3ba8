-- The broker's accept (INTAKE=broker, and fallback while the store answers
-- again): before an entry goes to the broker, the two checks enter makes
-- first, in one script: the room exists (OPEN_ROOMS=false refuses unknown
-- rooms here too, and nothing is written for them) and the abuse limiter
-- (ratelimit.lua) lets the caller through.
-- KEYS[1] settings  KEYS[2] the room's buckets (ratelimit.lua)
-- ARGV[1] defaults (room.lua)  ARGV[2..5] the limiter's time and the fields of the caller's,
--   its address's and its new visitors' buckets (ratelimit.lua)
-- KEYS[3] the caller's solved challenge  ARGV[6] its remaining life ms (challenge.lua)
-- Returns {'NOROOM'} | {'LIMITED', ms until allowed} | {'CLOSED', message} | {'SPENT'} | {'OK'}
local room = roomSettings(true)
if not room.open then
  return {'NOROOM'}
end
local limitWait = rateLimit(2, 3, 2)
if limitWait > 0 then
  return {'LIMITED', limitWait}
end
if room.closed then
  return {'CLOSED', room.message}
end
-- A closed room spends no solution: the visitor may use it elsewhere.
if challengeSpent(3, 6) then
  return {'SPENT'}
end
return {'OK'}
