-- Shared abuse limiter, prepended to the scripts of enter, position (and
-- the stream's seat), the broker's accept and the order gate's check: the
-- caller's identity's bucket, its source address's, and (enter and accept)
-- the bucket of new visitors from that address, taken inside the script
-- call the operation already makes (no extra round trip). The buckets are
-- fields of one hash per room, in the room's hash slot: a caller's budget is
-- per room, and one read and one write serve every bucket of a call.
--
-- A bucket is a GCRA: one number, its theoretical arrival time (µs), the
-- field's value. A call advances it by the bucket's step (1 s / rate) from
-- now or from where it was, whichever is later, and is allowed while that
-- stays within the bucket's limit (burst steps) ahead of now. A bucket whose
-- time has passed is full again: admission sweeps such fields away
-- (admit.lua), so a poller's bucket is gone soon after its call and costs
-- nothing until its next.
--
-- The time is the caller's (ARGV): the store's TIME would be one more
-- command on every poll, and the callers' clocks agree to a millisecond
-- (NTP), which moves a bucket by a millisecond's worth. There is no pcall:
-- a protected call costs as much as the rest of a poll, and a limiter
-- that cannot read or write its buckets (a store out of memory) fails the
-- call, never lets it through.
--
-- rateLimit(k, n, a): KEYS[k] the room's buckets; ARGV[a] now (µs), then per
-- bucket its field, step and limit (µs; a step of '0' skips the bucket), n
-- buckets. Returns 0 when allowed (each bucket advanced), else the ms until
-- allowed (nothing taken).
local function rateLimit(k, n, a)
  local fields = {}
  for i = 1, n do
    if ARGV[a + 3 * i - 1] ~= '0' then
      fields[#fields + 1] = ARGV[a + 3 * i - 2]
    end
  end
  if #fields == 0 then
    return 0
  end
  local nowUs = tonumber(ARGV[a])
  local held = redis.call('HMGET', KEYS[k], unpack(fields))
  local due, over, j = {}, 0, 0
  for i = 1, n do
    if ARGV[a + 3 * i - 1] ~= '0' then
      j = j + 1
      local step = tonumber(ARGV[a + 3 * i - 1])
      local tat = math.max(tonumber(held[j]) or 0, nowUs) + step
      local ahead = tat - nowUs - tonumber(ARGV[a + 3 * i])
      if ahead > 0 then
        over = math.max(over, ahead)
      else
        due[#due + 1] = fields[j]
        due[#due + 1] = string.format('%d', tat)
      end
    end
  end
  if over > 0 then
    return math.ceil(over / 1000)
  end
  redis.call('HSET', KEYS[k], unpack(due))
  return 0
end
