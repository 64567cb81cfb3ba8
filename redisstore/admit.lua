-- Admit the front of one room's line as far as its rate budget allows, and
-- issue the entry tokens in the same atomic step: nobody leaves the line
-- without a token.
--
-- The budget is a token bucket on the server's own clock: it fills at the
-- admission rate and holds at most one batch (plus the fraction of a user
-- carried over). Any number of overlapping admitters therefore admit at most
-- rate x window + one batch, rounded up to a whole user, and a late admitter
-- catches up by at most one batch. No lock to lose.
--
-- KEYS[1] line  KEYS[2] budget (hash: at = microseconds, avail = users)
-- KEYS[3] marks KEYS[4] live tokens (zset user -> expiry ms)
-- ARGV[1] rate per second  ARGV[2] batch size  ARGV[3] token TTL ms
-- ARGV[4] prefix of token records ("wr:{room}:u:")  ARGV[5] room
-- ARGV[6..] random token parts, one per user that may be admitted
-- Returns {waiting, activeTokens, expired, expiresAtMs, user1, token1, waited1, ...}
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local ttl = tonumber(ARGV[3])
local time = redis.call('TIME')
local nowUs = tonumber(time[1]) * 1000000 + tonumber(time[2])
local nowMs = math.floor(nowUs / 1000)
local nowSec = tonumber(time[1])

local avail = burst
local budget = redis.call('HMGET', KEYS[2], 'at', 'avail')
if budget[1] then
  local elapsed = nowUs - tonumber(budget[1])
  if elapsed < 0 then elapsed = 0 end -- a failover to a node with a slower clock
  local left = tonumber(budget[2])
  -- The cap is one batch plus the fraction of a user left from the last
  -- batch: capping at one batch exactly drops that fraction at nearly every
  -- batch, which loses up to half the rate when batches are small.
  avail = math.min(burst + left - math.floor(left), left + elapsed * rate / 1000000)
end

local expired = redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', nowMs)

local n = math.min(math.floor(avail), #ARGV - 5)
local popped = {}
if n > 0 then
  popped = redis.call('ZPOPMIN', KEYS[1], n)
end
local admitted = #popped / 2
avail = avail - admitted
redis.call('HSET', KEYS[2], 'at', string.format('%d', nowUs), 'avail', string.format('%.9f', avail))
redis.call('PEXPIRE', KEYS[2], 86400000)

local expiresAt = nowMs + ttl
local out = {0, 0, expired, string.format('%d', expiresAt)}
local lastMark = nil
for i = 1, admitted do
  local user = popped[2 * i - 1]
  local seq = popped[2 * i]
  local token = ARGV[5] .. '.' .. ARGV[5 + i]
  redis.call('SET', ARGV[4] .. user, string.format('%d', expiresAt) .. ':' .. token, 'PXAT', string.format('%d', expiresAt))
  redis.call('ZADD', KEYS[4], string.format('%d', expiresAt), user)
  local waited = 0
  local mark = redis.call('ZREVRANGEBYSCORE', KEYS[3], seq, '-inf', 'WITHSCORES', 'LIMIT', 0, 1)
  if mark[1] then
    waited = nowSec - tonumber(mark[1])
    lastMark = mark[2]
  end
  table.insert(out, user)
  table.insert(out, token)
  table.insert(out, waited)
end
-- Marks older than the newest one used are no longer needed by anyone in line.
if lastMark then
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', '(' .. lastMark)
end
out[1] = redis.call('ZCARD', KEYS[1])
out[2] = redis.call('ZCARD', KEYS[4])
return out
