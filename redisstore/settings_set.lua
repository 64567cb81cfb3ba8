-- Store a room's settings if nobody changed them since they were read
-- (compare-and-set on the version), so that two operators' changes never
-- silently mix. The settings key has no expiry: it is the operator's.
-- KEYS[1] settings (the room's hash: settings.lua)  ARGV[1] version read ('' when none was stored)
-- ARGV[2..7] rate capacity ttlMs maxActive paused('1'|'0') opensAtMs (0 = none)
-- KEYS[2..7] line, sequence, marks, budget, queue, places: what a reopened room starts afresh
-- ARGV[8..13] closed('1'|'0') message title brandColor logoUrl language
-- ARGV[14] adaptive ('' off: waitroom.Adaptive.String)  ARGV[15] '1' to start the effective
--   rate afresh from the rate (adaptive turned on, or the rate changed); else the
--   adaptive rate the admitter reached is kept, within the (new) bounds
-- ARGV[16] instant('1'|'0')
-- Returns the new version, or 0 when the settings changed in between.
local was = redis.call('HMGET', KEYS[1], 'v', 'hot')
local v = was[1] or ''
if v ~= ARGV[1] then
  return 0
end
if ARGV[8] == '0' and was[2] and hasBit(string.byte(was[2], 1) - 64, closedBit) then
  -- Reopened: a fresh line. Admission releases a closed room's line in
  -- slices (admit.lua); whatever it has not released yet goes now, freed
  -- off the main thread.
  redis.call('UNLINK', KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7])
  redis.call('HDEL', KEYS[1], 'front') -- the queue's front (line.lua)
end
local next = (tonumber(v) or 0) + 1
-- The adaptive rate reached so far is the hot rate of an adaptive room.
local erate = ARGV[2]
if ARGV[15] ~= '1' and was[2] and hasBit(string.byte(was[2], 1) - 64, adaptiveBit) then
  erate = string.match(was[2], '^.([^:]*)')
end
erate = clampRate(ARGV[14], erate)
local hot = packHot(ARGV[6] == '1', ARGV[8] == '1', erate ~= nil, ARGV[16] == '1', erate or ARGV[2], ARGV[5], ARGV[7],
  ARGV[3], ARGV[4], ARGV[9])
redis.call('HSET', KEYS[1], 'hot', hot, 'page', packPage(ARGV[10], ARGV[11], ARGV[12], ARGV[13]), 'rate', ARGV[2],
  'v', next, 'layout', layout)
if erate then
  redis.call('HSET', KEYS[1], 'adaptive', ARGV[14])
else
  redis.call('HDEL', KEYS[1], 'adaptive')
end
-- A room nobody had created kept only its callers' buckets here, set to
-- expire with the idle room (admit.lua): the operator's settings stay.
redis.call('PERSIST', KEYS[1])
return next
