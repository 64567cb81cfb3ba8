-- The broker's accept (INTAKE=broker, and fallback while the store answers
-- again): before an entry goes to the broker, the two checks enter makes
-- first, in one script: the room exists (OPEN_ROOMS=false refuses unknown
-- rooms here too, and nothing is written for them) and the abuse limiter
-- (ratelimit.lua) lets the caller through.
-- KEYS[1] settings  KEYS[2..4] the caller's, its address's and its new visitors' buckets
-- ARGV[1..4] defaults (room.lua)  ARGV[5..10] limits (ratelimit.lua)
-- Returns {'NOROOM'} | {'LIMITED', ms until allowed} | {'OK', 1 when the limiter failed open}
local room = roomSettings()
if not room.open then
  return {'NOROOM'}
end
local limitWait = rateLimit(2, 5)
if limitWait > 0 then
  return {'LIMITED', limitWait}
end
return {'OK', limitWait < 0 and 1 or 0}
