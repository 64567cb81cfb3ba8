-- Shared abuse limiter, prepended to the scripts of enter, position (and
-- the stream's seat), the broker's accept and the order gate's check: the
-- caller's identity's bucket, its source address's, and (enter and accept)
-- the bucket of new visitors from that address, taken inside the script
-- call the operation already makes (no extra round trip). Every key lives
-- in the room's hash slot, so a caller's budget is per room.
--
-- A bucket is a GCRA: one number, its theoretical arrival time (µs), in a
-- key that expires when the bucket is full again. A call advances it by the
-- bucket's step (1 s / rate) from now or from where it was, whichever is
-- later, and is allowed while that stays within the bucket's limit (burst
-- steps) ahead of now. One MGET reads every bucket and one SET a bucket
-- writes it; a poller's keys are gone a step after its call, so it finds
-- none at its next poll and costs no memory meanwhile.
--
-- The time is the caller's (ARGV): the store's TIME would be one more
-- command on every poll, and the callers' clocks agree to a millisecond
-- (NTP), which moves a bucket by a millisecond's worth. There is no pcall:
-- a protected call costs as much as the rest of a poll, and a limiter
-- that cannot read or write its bucket (a store out of memory) fails the
-- call, never lets it through.
--
-- rateLimit(k, n, a): n buckets at KEYS[k..k+n-1]; ARGV[a] now (µs), then
-- per bucket its step and limit (µs; a step of '0' skips the bucket).
-- Returns 0 when allowed (each bucket advanced), else the ms until allowed
-- (nothing taken).
local function rateLimit(k, n, a)
  local on = false
  for i = 1, n do
    on = on or ARGV[a + 2 * i - 1] ~= '0'
  end
  if not on then
    return 0
  end
  local nowUs = tonumber(ARGV[a])
  local held = redis.call('MGET', unpack(KEYS, k, k + n - 1))
  local due, over = {}, 0
  for i = 1, n do
    local step = tonumber(ARGV[a + 2 * i - 1])
    if step > 0 then
      local tat = math.max(tonumber(held[i]) or 0, nowUs) + step
      local ahead = tat - nowUs - tonumber(ARGV[a + 2 * i])
      if ahead > 0 then
        over = math.max(over, ahead)
      else
        due[i] = tat
      end
    end
  end
  if over > 0 then
    return math.ceil(over / 1000)
  end
  for i, tat in pairs(due) do
    redis.call('SET', KEYS[k + i - 1], string.format('%d', tat), 'PX', string.format('%d', math.ceil((tat - nowUs) / 1000)))
  end
  return 0
end
