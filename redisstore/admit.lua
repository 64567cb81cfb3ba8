-- Admit the front of one room's line as far as its settings and its rate
-- budget allow, and issue the entry tokens in the same atomic step: nobody
-- leaves the line without a token.
--
-- The budget is a token bucket on the server's own clock: it fills at the
-- room's rate and holds at most one batch (plus the fraction of a user
-- carried over). Any number of overlapping admitters therefore admit at most
-- rate x window + one batch, rounded up to a whole user, and a late admitter
-- catches up by at most one batch. A lowered rate lowers the cap at once, so
-- what was saved at the old rate never over-admits. No lock to lose.
--
-- KEYS[1] settings  KEYS[2] line  KEYS[3] budget (hash: at = microseconds, avail = users)
-- KEYS[4] marks  KEYS[5] live tokens (zset user -> expiry ms)  KEYS[6] sequence counter
-- KEYS[7] second of the newest mark  KEYS[8] admissions per second (hash second -> count)
-- ARGV[1..4] defaults (room.lua)  ARGV[5] batch interval seconds
-- ARGV[6] prefix of token records ("wr:{room}:u:")  ARGV[7] room  ARGV[8] idle expiry ms
-- ARGV[9..] random token parts, one per user that may be admitted
-- Returns {waiting, activeTokens, expired, expiresAtMs, tokensWanted, stored,
--          user1, token1, waited1, ...}
local room = roomSettings()
local rate = room.rate
local burst = math.max(1, rate * tonumber(ARGV[5]))
local nowUs, nowMs, nowSec = serverTime()

local avail = burst
local budget = redis.call('HMGET', KEYS[3], 'at', 'avail')
if budget[1] then
  local elapsed = nowUs - tonumber(budget[1])
  if elapsed < 0 then elapsed = 0 end -- a failover to a node with a slower clock
  local left = tonumber(budget[2])
  -- The cap is one batch plus the fraction of a user left from the last
  -- batch: capping at one batch exactly drops that fraction at nearly every
  -- batch, which loses up to half the rate when batches are small.
  avail = math.min(burst + left - math.floor(left), left + elapsed * rate / 1000000)
end

local expired = redis.call('ZREMRANGEBYSCORE', KEYS[5], '-inf', nowMs)

local n = 0
if not room.paused and room.opensAt <= nowMs then
  n = math.min(math.floor(avail), #ARGV - 8)
  if room.maxActive > 0 then
    -- Closed loop: the live tokens never exceed maxActive, whatever the
    -- number of admitters, because this check and the issue are one step.
    n = math.min(n, room.maxActive - redis.call('ZCARD', KEYS[5]))
  end
end
local popped = {}
if n > 0 then
  popped = redis.call('ZPOPMIN', KEYS[2], n)
end
local admitted = #popped / 2
avail = avail - admitted
-- An empty line leaves the budget alone (a missing one is a full one), so
-- that visiting an idle created room writes nothing.
if admitted > 0 or redis.call('EXISTS', KEYS[2]) == 1 then
  redis.call('HSET', KEYS[3], 'at', string.format('%d', nowUs), 'avail', string.format('%.9f', avail))
end

local expiresAt = nowMs + room.ttl
local out = {0, 0, expired, string.format('%d', expiresAt), math.ceil(burst), room.stored and 1 or 0}
local lastMark = nil
for i = 1, admitted do
  local user = popped[2 * i - 1]
  local seq = popped[2 * i]
  local token = ARGV[7] .. '.' .. ARGV[8 + i]
  -- The record: expiry, issue time (the signed token's iat, so that every
  -- answer for this admission carries the same token), then the token.
  redis.call('SET', ARGV[6] .. user, string.format('%d:%d:', expiresAt, nowMs) .. token, 'PXAT', string.format('%d', expiresAt))
  redis.call('ZADD', KEYS[5], string.format('%d', expiresAt), user)
  local waited = 0
  local mark = redis.call('ZREVRANGEBYSCORE', KEYS[4], seq, '-inf', 'WITHSCORES', 'LIMIT', 0, 1)
  if mark[1] then
    waited = math.max(0, nowSec - markSecond(mark[1]))
    lastMark = mark[2]
  end
  table.insert(out, user)
  table.insert(out, token)
  table.insert(out, waited)
end
-- Marks older than the newest one used are no longer needed by anyone in line.
if lastMark then
  redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', '(' .. lastMark)
end
if admitted > 0 then
  redis.call('HINCRBY', KEYS[8], nowSec, admitted)
  redis.call('HDEL', KEYS[8], nowSec - 61, nowSec - 62)
  redis.call('PEXPIRE', KEYS[8], 120000) -- a minute of history, gone a minute after the last admission
end
out[1] = redis.call('ZCARD', KEYS[2])
out[2] = redis.call('ZCARD', KEYS[5])
-- An idle room (nobody waiting, no live token) lets its keys expire, so an
-- abandoned room costs nothing. Not at once: the budget must outlive a
-- refill, or a room emptied by quick orders would start each user with a
-- full batch. enter.lua takes the expiry off again.
local idleMs = math.max(tonumber(ARGV[8]), math.ceil(burst / rate * 1000))
if out[1] == 0 and out[2] == 0 then
  for _, k in ipairs({KEYS[3], KEYS[4], KEYS[6], KEYS[7], KEYS[8]}) do
    redis.call('PEXPIRE', k, idleMs)
  end
else
  redis.call('PEXPIRE', KEYS[3], idleMs)
end
return out
