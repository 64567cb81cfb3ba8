-- Shared abuse limiter, prepended to the scripts of enter, position (and
-- the stream's seat), the broker's accept and the order gate's check: the
-- caller's identity's bucket, its source address's, and (enter and accept)
-- the bucket of new visitors from that address, taken inside the script
-- call the operation already makes (no extra round trip). The buckets are
-- fields of the room's hash (settings.lua), in the room's hash slot: a
-- caller's budget is per room, and the buckets are read in the very HMGET
-- that reads the room's settings, and written in one HSET.
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
-- (NTP), which moves a bucket by a millisecond's worth. But a call is
-- stamped before it travels, and calls arrive out of their stamps' order
-- (two processes, or two goroutines scheduled apart): one stamped before
-- the call that last moved the bucket sees the bucket ahead of its now by
-- that difference, and at the burst's edge a microsecond refuses a whole
-- call the limit had room for. So a refusal, the rare path, is decided
-- again on the store's clock (TIME, when it is later than the stamp; a
-- stamp is earlier than its arrival): only a call refused on the store's
-- own now is refused, and an allowed one costs no command more.
--
-- There is no pcall: a protected call costs as much as the rest of a
-- poll, and a limiter that cannot read or write its buckets (a store out
-- of memory) fails the call, never lets it through.
--
-- The buckets' steps and limits are the store's configuration, not the
-- call's: they are compiled into the script's text when the store is built
-- (limitStep, limitSpan: configHead in ratelimit.go), so a call carries one
-- argument per bucket, its field, and the script parses no number but the
-- time (every argument and every tonumber is a measurable share of a poll:
-- docs/design.md, "What a poll costs Redis").
--
-- rateLimit(hash, held, h, a, n): hash the room's hash (its key); ARGV[a] now (µs),
-- then ARGV[a + i] bucket i's field ('' skips the bucket: its rate is 0,
-- or the caller has no such bucket), n buckets; held[h + i] bucket i's
-- value as the script's HMGET read it. Returns 0 when allowed (each bucket
-- advanced) and the time as a number (the store's when a refusal was
-- decided again; nil: no bucket read it), else the ms
-- until allowed (nothing taken).
local function rateLimit(hash, held, h, a, n)
  -- due is sized at once for three buckets' fields and values: grown
  -- element by element it would be reallocated three times.
  local nowUs, due, d, over, again = nil, {false, false, false, false, false, false}, 0, 0, true
  repeat
    d, over = 0, 0
    for i = 1, n do
      local field = ARGV[a + i]
      if field ~= '' then
        nowUs = nowUs or tonumber(ARGV[a])
        -- A bucket absent, or whose time has passed, starts from now; a
        -- value that is no number (nobody's but an operator's) is full too.
        local tat = tonumber(held[h + i])
        if not tat or tat < nowUs then
          tat = nowUs
        end
        tat = tat + limitStep[i]
        local ahead = tat - nowUs - limitSpan[i]
        if ahead > over then
          over = ahead
        end
        due[d + 1] = field
        due[d + 2] = string.format('%d', tat)
        d = d + 2
      end
    end
    if over <= 0 or not again then
      break
    end
    -- Refused on the caller's stamp: once more on the store's clock.
    local t = redis.call('TIME')
    local storeUs = tonumber(t[1]) * 1000000 + tonumber(t[2])
    if storeUs <= nowUs then
      break
    end
    nowUs, again = storeUs, false
  until false
  if over > 0 then
    return math.ceil(over / 1000)
  end
  if nowUs then
    redis.call('HSET', hash, unpack(due, 1, d))
  end
  return 0, nowUs
end
