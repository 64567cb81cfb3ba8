-- The broker's accept (INTAKE=broker, and fallback while the store answers
-- again): before an entry goes to the broker, the two checks enter makes
-- first, in one script: the room exists (OPEN_ROOMS=false refuses unknown
-- rooms here too, and nothing is written for them) and the abuse limiter
-- (ratelimit.lua) lets the caller through.
local settingsKey = KEYS[1] -- the room's hash (settings.lua)
local challengeKey = KEYS[2] -- the caller's solved challenge's record, only when challengeMs is not '0' (challenge.lua)
local limitArg = 1 -- ARGV[1..4]: the limiter's time and the fields of the caller's, its address's and its new visitors' buckets (ratelimit.lua)
local challengeMs = ARGV[5] -- the solved challenge's remaining life, ms ('0': none)
-- Returns {'NOROOM'} | {'LIMITED', ms until allowed} | {'CLOSED', hot} | {'SPENT'} | {'OK'}
local s = redis.call('HMGET', settingsKey, 'hot', ARGV[limitArg + 1], ARGV[limitArg + 2], ARGV[limitArg + 3])
local room, refused = visit(settingsKey, roomOf(s[1]), s, 1, limitArg, 3)
if refused then
  return refused
end
if roomHas(room, closedBit) then
  return {'CLOSED', room.hot}
end
-- A closed room spends no solution: the visitor may use it elsewhere.
if challengeSpent(challengeKey, challengeMs) then
  return {'SPENT'}
end
return {'OK'}
