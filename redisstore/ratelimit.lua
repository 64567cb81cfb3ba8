-- Shared abuse limiter (issue 12), prepended to the scripts of enter,
-- position, the event stream's seat and the order gate's check: two token
-- buckets, the caller's and its source IP's, taken inside the script call
-- the operation already makes (no extra round trip). Both keys live in the
-- room's hash slot, so a caller's budget is per room.
-- rateLimit(clientKey, ipKey, a): ARGV[a..a+3] are the client's rate per
-- second and burst, then the IP's; a rate of 0 (or no argument) skips that
-- bucket. Returns 0 when allowed (a token taken from each bucket), the ms
-- until a token is back when refused (nothing taken), or -1 when a bucket
-- could not be read or written: the request proceeds (fail open) and the
-- caller reports it.
local function bucketWait(b, rate, burst, nowMs)
  local tokens = math.min(burst, (tonumber(b[1]) or burst) + math.max(0, nowMs - (tonumber(b[2]) or nowMs)) * rate / 1000)
  if tokens >= 1 then
    return 0, tokens
  end
  return math.ceil((1 - tokens) * 1000 / rate), tokens
end

local function takeBuckets(keys, rates, bursts)
  local t = redis.call('TIME')
  local nowMs = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local wait, left = 0, {}
  for i = 1, #keys do
    local w, tokens = bucketWait(redis.call('HMGET', keys[i], 't', 'at'), rates[i], bursts[i], nowMs)
    -- Two statements, not 'wait, left[i] = math.max(wait, w), tokens': the
    -- embedded store's Lua reads a name assigned on the left of a multiple
    -- assignment after assigning it (yuin/gopher-lua#440; luacheck).
    wait = math.max(wait, w)
    left[i] = tokens
  end
  if wait > 0 then
    return wait
  end
  for i = 1, #keys do
    redis.call('HSET', keys[i], 't', string.format('%.6f', left[i] - 1), 'at', nowMs)
    redis.call('PEXPIRE', keys[i], math.ceil(bursts[i] * 1000 / rates[i]) + 1000)
  end
  return 0
end

local function rateLimit(clientKey, ipKey, a)
  local keys, rates, bursts = {}, {}, {}
  for i, key in ipairs({clientKey, ipKey}) do
    local rate = tonumber(ARGV[a + 2 * (i - 1)]) or 0
    if rate > 0 and key then
      keys[#keys + 1], rates[#rates + 1], bursts[#bursts + 1] = key, rate, tonumber(ARGV[a + 2 * (i - 1) + 1])
    end
  end
  if #keys == 0 then
    return 0
  end
  local ok, wait = pcall(takeBuckets, keys, rates, bursts)
  if not ok then
    return -1
  end
  return wait
end
