-- Shared abuse limiter, prepended to the scripts of enter, position (and
-- the stream's seat), the broker's accept and the order gate's check: up
-- to three buckets, the caller's identity, its source address, and new
-- visitors from that address, taken inside the script call the operation
-- already makes (no extra round trip). Every key lives in the room's hash
-- slot, so a caller's budget is per room.
--
-- A bucket is a GCRA: one number, its theoretical arrival time (µs on the
-- server's clock), in a key that expires when the bucket is full again. A
-- call advances it by one interval (1 s / rate) from now or from where it
-- was, whichever is later, and is allowed while that stays within the burst
-- of intervals ahead of now. One MGET reads every bucket and one SET a
-- bucket writes it; an idle caller's keys are gone an interval after its call.
--
-- There is no pcall: a protected call costs as much as the rest of a poll,
-- and a limiter that cannot read or write its bucket (a key of another
-- type, a store out of memory) fails the call, never lets it through.
--
-- rateLimit(k, a, nowUs): KEYS[k..k+2] the buckets; ARGV[a..a+5] each one's
-- rate per second and burst (a rate of 0 skips the bucket); nowUs the time
-- when the script has read it already (order_begin.lua always passes it:
-- it has no room.lua, whose serverTime reads it otherwise). Returns 0 and
-- the time when allowed (each bucket advanced), or the ms until allowed
-- when refused (nothing taken).
local function rateLimit(k, a, nowUs)
  local rates = {tonumber(ARGV[a]) or 0, tonumber(ARGV[a + 2]) or 0, tonumber(ARGV[a + 4]) or 0}
  if rates[1] + rates[2] + rates[3] <= 0 then
    return 0, nowUs
  end
  if not nowUs then
    nowUs = serverTime()
  end
  local held = redis.call('MGET', KEYS[k], KEYS[k + 1], KEYS[k + 2])
  local due, over = {}, 0
  for i = 1, 3 do
    if rates[i] > 0 then
      local step = 1000000 / rates[i]
      local tat = math.max(tonumber(held[i]) or 0, nowUs) + step
      local ahead = tat - nowUs - tonumber(ARGV[a + 2 * i - 1]) * step
      if ahead > 0 then
        over = math.max(over, ahead)
      else
        due[i] = tat
      end
    end
  end
  if over > 0 then
    return math.ceil(over / 1000), nowUs
  end
  for i, tat in pairs(due) do
    redis.call('SET', KEYS[k + i - 1], string.format('%d', tat), 'PX', math.ceil((tat - nowUs) / 1000))
  end
  return 0, nowUs
end
