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
-- (limitStep1..3, limitSpan1..3: limitsLine in ratelimit.go, written at
-- rateLimit's marker line as its own locals: neither a table built at every
-- call nor six locals of the script, which rateLimit would read as
-- upvalues, each made at every call), so a call carries one argument per bucket,
-- its field, and the script parses no number but the time and the
-- buckets' values (every argument and every tonumber is a measurable share
-- of a poll: docs/design.md, "What a poll costs Redis", which measures each
-- construct). The three buckets are written out, not looped over: a
-- function or a table per bucket costs more than the lines.
--
-- rateLimit(hash, held, h, a, n): hash the room's hash (its key); ARGV[a] now (µs),
-- then ARGV[a + i] bucket i's field ('' skips the bucket: its rate is 0,
-- or the caller has no such bucket), n buckets (2 or 3); held[h + i] bucket i's
-- value as the script's HMGET read it. Returns 0 when allowed (each bucket
-- advanced) and the time as a number (the store's when a refusal was
-- decided again; nil: no bucket read it), else the ms
-- until allowed (nothing taken).
local function rateLimit(hash, held, h, a, n)
  --@limits
  local f1, f2, f3 = ARGV[a + 1], ARGV[a + 2], ''
  if n > 2 then
    f3 = ARGV[a + 3]
  end
  if f1 == '' and f2 == '' and f3 == '' then
    return 0
  end
  -- A bucket's time: its value, or now when absent or passed (a value that
  -- is no number, nobody's but an operator's, is full too), plus its step;
  -- over: how far the farthest bucket would run past its limit.
  local nowUs, again = tonumber(ARGV[a]), true
  local t1, t2, t3, over
  repeat
    over = 0
    if f1 ~= '' then
      t1 = tonumber(held[h + 1])
      if not t1 or t1 < nowUs then t1 = nowUs end
      t1 = t1 + limitStep1
      over = t1 - nowUs - limitSpan1
    end
    if f2 ~= '' then
      t2 = tonumber(held[h + 2])
      if not t2 or t2 < nowUs then t2 = nowUs end
      t2 = t2 + limitStep2
      if t2 - nowUs - limitSpan2 > over then over = t2 - nowUs - limitSpan2 end
    end
    if f3 ~= '' then
      t3 = tonumber(held[h + 3])
      if not t3 or t3 < nowUs then t3 = nowUs end
      t3 = t3 + limitStep3
      if t3 - nowUs - limitSpan3 > over then over = t3 - nowUs - limitSpan3 end
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
  -- One HSET of the buckets taken. A bucket not taken before one that is
  -- (a caller without identity or address, a rate of 0) is written as the
  -- first one taken, twice (HSET takes a field twice, the last value
  -- winning): no table of the fields is built and unpacked at every call.
  if f1 == '' then
    f1, t1 = f2, t2
    if f1 == '' then f1, t1 = f3, t3 end
  end
  if f2 == '' then f2, t2 = f1, t1 end
  if f3 == '' then
    redis.call('HSET', hash, f1, string.format('%d', t1), f2, string.format('%d', t2))
  else
    redis.call('HSET', hash, f1, string.format('%d', t1), f2, string.format('%d', t2), f3, string.format('%d', t3))
  end
  return 0, nowUs
end
