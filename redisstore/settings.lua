-- The room's hash (wr:{room}:settings) as the scripts keep it: shared by
-- settings_set.lua, adapt.lua and every room script (room.lua).
--
-- Every call of a room reads its settings, so they are kept for the read:
-- what a call needs is one field, 'hot', packed once when the settings
-- change, not a dozen fields read and parsed at every call (each field
-- read costs Redis about 1,500 instructions, each number parsed about as
-- many: docs/design.md, "What a poll costs Redis"). 'hot' is
--   <flags><rate>:<maxActive>:<opensAt ms, 0 none>:<capacity>:<entry-token TTL ms>:<message>
-- flags one character, 64 + the bits below; rate the rate admission uses
-- (the adaptive rate while adaptive is on, else ratePerSec) as text; the
-- message last, as it may hold ':'. The room's page is 'page', packed by
-- packPage, read by enter and status alone. The rest is the operator's
-- record, read by status and settings_set.lua: 'rate' (ratePerSec),
-- 'adaptive' (waitroom.Adaptive.String, absent when off), 'v' (the
-- version of the compare-and-set), and 'layout'. The hash also holds the
-- abuse limiter's buckets (ratelimit.lua): fields whose second character
-- is ':'. The Go side decodes 'hot' and 'page' (redisstore/hot.go).
local pausedBit, closedBit, adaptiveBit, instantBit, scheduledBit = 1, 4, 8, 16, 32 -- 2: stalled, in answers

local function hasBit(bits, mask)
  return math.floor(bits / mask) % 2 == 1
end
