-- The order gate's measurements of the order API, per room: a hash of
-- counters, one per outcome and log-scale latency bucket ("o123": 2xx in
-- bucket 123; waitroom.DownstreamCall.Field), so a room's measurements take
-- a fixed set of fields whatever its traffic. 'at' is when the current
-- control window began; admission hands the window over (admit.lua).
-- recordCall counts one call in KEYS[key] from ARGV[arg] (the counter,
-- '' for none) and ARGV[arg + 1] (the hash's expiry ms, renewed by every
-- call: a room without orders lets it go).
local function recordCall(key, arg)
  local field = ARGV[arg]
  if not field or field == '' then
    return
  end
  redis.call('HINCRBY', KEYS[key], field, 1)
  redis.call('PEXPIRE', KEYS[key], ARGV[arg + 1])
end
