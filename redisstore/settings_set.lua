-- Store a room's settings if nobody changed them since they were read
-- (compare-and-set on the version), so that two operators' changes never
-- silently mix. The settings key has no expiry: it is the operator's.
-- KEYS[1] settings  ARGV[1] version read ('' when none was stored)
-- ARGV[2..7] rate capacity ttlMs maxActive paused('1'|'0') opensAtMs (0 = none)
-- Returns the new version, or 0 when the settings changed in between.
local v = redis.call('HGET', KEYS[1], 'v') or ''
if v ~= ARGV[1] then
  return 0
end
local next = (tonumber(v) or 0) + 1
redis.call('HSET', KEYS[1], 'rate', ARGV[2], 'capacity', ARGV[3], 'ttl', ARGV[4], 'maxActive', ARGV[5],
  'paused', ARGV[6], 'opensAt', ARGV[7], 'v', next)
return next
