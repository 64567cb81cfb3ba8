-- Store a room's settings if nobody changed them since they were read
-- (compare-and-set on the version), so that two operators' changes never
-- silently mix. The settings key has no expiry: it is the operator's.
-- KEYS[1] settings  ARGV[1] version read ('' when none was stored)
-- ARGV[2..7] rate capacity ttlMs maxActive paused('1'|'0') opensAtMs (0 = none)
-- KEYS[2..5] line, sequence, marks, budget: what a reopened room starts afresh
-- ARGV[8..13] closed('1'|'0') message title brandColor logoUrl language
-- ARGV[14] adaptive ('' off: waitroom.Adaptive.String)  ARGV[15] '1' to start the effective
--   rate afresh from the rate (adaptive turned on, or the rate changed); else the
--   adaptive rate the admitter reached is kept, within the (new) bounds
-- ARGV[16] instant('1'|'0')
-- Returns the new version, or 0 when the settings changed in between.
local v = redis.call('HGET', KEYS[1], 'v') or ''
if v ~= ARGV[1] then
  return 0
end
if ARGV[8] == '0' and redis.call('HGET', KEYS[1], 'closed') == '1' then
  -- Reopened: a fresh line. Admission releases a closed room's line in
  -- slices (admit.lua); whatever it has not released yet goes now, freed
  -- off the main thread.
  redis.call('UNLINK', KEYS[2], KEYS[3], KEYS[4], KEYS[5])
end
local next = (tonumber(v) or 0) + 1
-- A value longer than hash-max-listpack-value (64 bytes, Redis's and
-- Valkey's default) makes Redis keep the hash as a hash table for good:
-- every poll reads seven of its fields, and a hash table finds each for
-- about 600 instructions less than a listpack's scan (docs/design.md, "What
-- a poll costs Redis"). Nothing reads the field.
local layout = 'a hash table, not a listpack: a poll finds its fields for less than in a scan'
redis.call('HSET', KEYS[1], 'rate', ARGV[2], 'capacity', ARGV[3], 'ttl', ARGV[4], 'maxActive', ARGV[5],
  'paused', ARGV[6], 'opensAt', ARGV[7], 'v', next, 'closed', ARGV[8], 'message', ARGV[9], 'title', ARGV[10],
  'brandColor', ARGV[11], 'logoUrl', ARGV[12], 'language', ARGV[13], 'instant', ARGV[16], 'layout', layout)
local erate = redis.call('HGET', KEYS[1], 'erate')
if ARGV[15] == '1' or not erate then
  erate = ARGV[2]
end
erate = clampRate(ARGV[14], erate)
if erate then
  redis.call('HSET', KEYS[1], 'adaptive', ARGV[14], 'erate', erate)
else
  redis.call('HDEL', KEYS[1], 'adaptive', 'erate')
end
return next
