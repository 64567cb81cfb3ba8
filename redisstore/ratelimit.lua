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
-- The buckets' steps and limits are the store's configuration, not the
-- call's: they are compiled into the script's text when the store is built
-- (limitStep, limitSpan: configHead in ratelimit.go), so a call carries one
-- argument per bucket, its field, and the script parses no number but the
-- time (every argument and every tonumber is a measurable share of a poll:
-- docs/design.md, "What a poll costs Redis").
--
-- rateLimit(k, n, a): KEYS[k] the room's buckets; ARGV[a] now (µs), then
-- ARGV[a + i] bucket i's field ('' skips the bucket: its rate is 0, or the
-- caller has no such bucket), n buckets. Returns 0 when allowed (each
-- bucket advanced), else the ms until allowed (nothing taken).
-- The field 'L' holds a value longer than hash-max-listpack-value (64
-- bytes, Redis's and Valkey's default): a hash holding it is a hash table
-- for good. A hash of a few dozen buckets would otherwise be a listpack,
-- which HMGET and HSET scan field by field: at 60 live buckets that cost a
-- call more than the rest of the limiter (docs/design.md, "What a poll costs
-- Redis"). The value is 72 zeros, the number 0, a time long past: admission
-- sweeps it with the full buckets (admit.lua), and the next call that
-- misses it writes it again.
local bucketsLayout = '000000000000000000000000000000000000000000000000000000000000000000000000'

local function rateLimit(k, n, a)
  local fields, kinds = {}, {}
  for i = 1, n do
    local field = ARGV[a + i]
    if field ~= '' then
      fields[#fields + 1] = field
      kinds[#kinds + 1] = i
    end
  end
  if #fields == 0 then
    return 0
  end
  local nowUs = tonumber(ARGV[a])
  local held = redis.call('HMGET', KEYS[k], 'L', unpack(fields))
  local due, over = {}, 0
  for j = 1, #fields do
    -- A bucket absent, or whose time has passed, starts from now; a
    -- value that is no number (nobody's but an operator's) is full too.
    local tat = nowUs
    if held[j + 1] then
      local was = tonumber(held[j + 1])
      if was and was > nowUs then
        tat = was
      end
    end
    tat = tat + limitStep[kinds[j]]
    local ahead = tat - nowUs - limitSpan[kinds[j]]
    if ahead > over then
      over = ahead
    end
    due[2 * j - 1] = fields[j]
    due[2 * j] = string.format('%d', tat)
  end
  if over > 0 then
    return math.ceil(over / 1000)
  end
  if not held[1] then
    due[#due + 1] = 'L'
    due[#due + 1] = bucketsLayout
  end
  redis.call('HSET', KEYS[k], unpack(due))
  return 0
end
