-- Instant admission, prepended to enter.lua (and apply.lua through it).

-- admitNow is instant admission: nobody waits, so user is admitted
-- at once when the rate budget holds a whole user and live tokens are
-- below maxActive, spending the budget admit.lua's batches spend (refill):
-- the rate and maxActive hold whoever admits. The token record and the
-- live token are admit.lua's. The admission takes the next number, n,
-- passed at once in a batch of its own that the caller has claimed
-- (claim.lua), so that the caller's credential carries the number: a
-- failover that loses this write still lets it claim its turn again
-- (docs/design.md, "Failover"); fields are the room's hash's to write
-- (line.lua's front and counter). Returns the record (nil: the caller
-- queues) and whether no other live token exists (the room may be
-- unregistered). Its clock is the store's, as admit.lua's, whose budget it
-- spends. k are the enter's keys it writes (budget, live, record, admits,
-- batches, mark, settings), built only when nobody waits; token is the
-- entry token it issues. A function of the enter's own would be a closure
-- over those keys, made at every enter (docs/design.md, "What a poll costs
-- Redis").
local function admitNow(k, user, token, room, n, fields)
  local nowUs, nowMs, nowSec, nowSecText = serverTime()
  local burst = math.max(1, room.rate * batchSeconds)
  local avail = refill(room, burst, nowUs, redis.call('HMGET', k.budget, 'at', 'avail'))
  if avail < 1 then
    return nil
  end
  local nowMsText = string.format('%d', nowMs)
  local live = redis.call('ZCOUNT', k.live, '(' .. nowMsText, '+inf')
  if room.maxActive > 0 and live >= room.maxActive then
    return nil
  end
  redis.call('HSET', k.budget, 'at', string.format('%d', nowUs), 'avail', string.format('%.9f', avail - 1))
  local expiresText = string.format('%d', nowMs + room.ttl)
  local record = expiresText .. ':' .. nowMsText .. ':' .. token
  redis.call('SET', k.record, record, 'PXAT', expiresText)
  redis.call('ZADD', k.live, expiresText, user)
  countAdmitted(k.admits, 1, nowSec, nowSecText)
  local seq = string.format('%d', n)
  redis.call('ZADD', k.batches, seq, seq .. ':' .. nowMsText)
  redis.call('SET', k.mark, seq, 'PXAT', expiresText)
  local following = string.format('%d', n + 1)
  table.insert(fields, 'next')
  table.insert(fields, following)
  table.insert(fields, 'front')
  table.insert(fields, following)
  redis.call('HSET', k.settings, unpack(fields))
  return record, live == 0
end
