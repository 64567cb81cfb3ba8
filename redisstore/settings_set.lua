-- Store a room's settings if nobody changed them since they were read
-- (compare-and-set on the version), so that two operators' changes never
-- silently mix. The settings key has no expiry: it is the operator's.
local settingsKey = KEYS[1] -- the room's hash (settings.lua)
-- What a reopened room starts afresh (line.lua, enter.lua, admit.lua):
local lineKey = KEYS[2]
local marksKey = KEYS[3]
local budgetKey = KEYS[4]
local version = ARGV[1] -- the version read ('' when none was stored)
local rate = ARGV[2]
local capacity = ARGV[3]
local ttlMs = ARGV[4]
local maxActive = ARGV[5]
local paused = ARGV[6] == '1'
local opensAtMs = ARGV[7] -- 0: none
local closed = ARGV[8] == '1'
local message = ARGV[9]
local title, brandColor, logoUrl, language = ARGV[10], ARGV[11], ARGV[12], ARGV[13]
local adaptive = ARGV[14] -- '' off: waitroom.Adaptive.String
-- '1' to start the effective rate afresh from the rate (adaptive turned on,
-- or the rate changed); else the adaptive rate the admitter reached is
-- kept, within the (new) bounds
local freshRate = ARGV[15] == '1'
local instant = ARGV[16] == '1'
-- Returns the new version, or 0 when the settings changed in between.
local was = redis.call('HMGET', settingsKey, 'v', 'hot', 'next')
local v = was[1] or ''
if v ~= version then
  return 0
end
if not closed and was[2] and hasBit(string.byte(was[2], 1) - 64, closedBit) then
  -- Reopened: a fresh line. Admission releases a closed room's line in
  -- slices (admit.lua); whatever it has not released yet goes now, freed
  -- off the main thread.
  -- The counter goes on (line.lua): no number of the old line is given out
  -- again, and those admitted before the closing can still be claimed; an
  -- account's record of a number released with the line counts for nothing
  -- (no batch holds it) and is overwritten when the account enters again.
  redis.call('UNLINK', lineKey, marksKey, budgetKey)
  if was[3] then
    redis.call('HSET', settingsKey, 'front', was[3])
  end
end
local next = (tonumber(v) or 0) + 1
-- The adaptive rate reached so far is the hot rate of an adaptive room.
local erate = rate
if not freshRate and was[2] and hasBit(string.byte(was[2], 1) - 64, adaptiveBit) then
  erate = string.match(was[2], '^.([^:]*)')
end
erate = clampRate(adaptive, erate)
local hot = packHot(paused, closed, erate ~= nil, instant, erate or rate, maxActive, opensAtMs,
  capacity, ttlMs, message)
redis.call('HSET', settingsKey, 'hot', hot, 'page', packPage(title, brandColor, logoUrl, language), 'rate', rate,
  'v', next, 'layout', layout)
if erate then
  redis.call('HSET', settingsKey, 'adaptive', adaptive)
else
  redis.call('HDEL', settingsKey, 'adaptive')
end
-- A room nobody had created kept only its callers' buckets here, set to
-- expire with the idle room (admit.lua): the operator's settings stay.
redis.call('PERSIST', settingsKey)
return next
