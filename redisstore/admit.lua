-- Admit the front of one room's line as far as its settings and its rate
-- budget allow, and issue the entry tokens in the same atomic step: nobody
-- leaves the line without a token.
--
-- The budget is a token bucket on the server's own clock (room.lua's
-- refill, which enter.lua's instant admissions spend too): it fills at the
-- room's rate and holds at most one batch (plus the fraction of a user
-- carried over). Any number of overlapping admitters therefore admit at most
-- rate x window + one batch, rounded up to a whole user, and a late admitter
-- catches up by at most one batch. A lowered rate lowers the cap at once, so
-- what was saved at the old rate never over-admits. No lock to lose.
--
local settingsKey = KEYS[1] -- the room's hash (settings.lua; with the limiter's buckets)
local lineKey = KEYS[2] -- the line's sorted part (line.lua)
local budgetKey = KEYS[3] -- the budget (hash: at = microseconds, avail = users)
local marksKey = KEYS[4] -- marks (enter.lua)
local liveKey = KEYS[5] -- live tokens (zset user -> expiry ms)
local seqKey = KEYS[6] -- the sequence counter (line.lua)
local admitsKey = KEYS[7] -- admissions per second (hash second -> count)
local downstreamKey = KEYS[8] -- the order gate's downstream counters (downstream.lua)
local controlKey = KEYS[9] -- the controller's state (adapt.lua)
local queueKey = KEYS[10] -- the queue (line.lua)
local placesKey = KEYS[11] -- places (line.lua)
-- ARGV[1] the store's rooms ('1' or '0', OPEN_ROOMS, then defaultHot: room.lua), read by roomsArgHead
local intervalSeconds = tonumber(ARGV[2]) -- the batch interval
local recordPrefix = ARGV[3] -- the prefix of token records ("wr:{room}:u:")
local roomName = ARGV[4]
local idleExpiryMs = tonumber(ARGV[5]) -- how long an idle room's keys outlive it, at least
local windowMs = tonumber(ARGV[6]) -- the control window
local countersExpiryMs = ARGV[7]
local firstPart = 8 -- ARGV[8..]: random token parts, one per user that may be admitted
-- Returns {waiting, activeTokens, expired, expiresAtMs, tokensWanted, stored,
--          effectiveRate, windowEndMs (0: no window handed over), windowMs, counters,
--          controlState, adaptive, user1, token1, waited1, ...}

-- admitTokens writes the admitted users' token records and live tokens and
-- appends user, token and wait to out. The record: expiry, issue time (the
-- signed token's iat, so that every answer for this admission carries the
-- same token), then the token. The waits come from the marks: the one at
-- or before the first user, then those up to the last, read once for the
-- batch; marks older than the newest one used are no longer needed.
local function admitTokens(popped, admitted, expiresText, recordHead, nowSec, out)
  local mark = redis.call('ZREVRANGEBYSCORE', marksKey, popped[2], '-inf', 'WITHSCORES', 'LIMIT', 0, 1)
  local later = redis.call('ZRANGEBYSCORE', marksKey, '(' .. popped[2], popped[2 * admitted], 'WITHSCORES')
  local live, j = {}, 1
  local function addLive()
    redis.call('ZADD', liveKey, unpack(live))
    live = {}
  end
  for i = 1, admitted do
    local user, seq = popped[2 * i - 1], tonumber(popped[2 * i])
    while later[2 * j] and tonumber(later[2 * j]) <= seq do
      mark = {later[2 * j - 1], later[2 * j]}
      j = j + 1
    end
    local token = roomName .. '.' .. ARGV[firstPart - 1 + i]
    redis.call('SET', recordPrefix .. user, recordHead .. token, 'PXAT', expiresText)
    live[#live + 1] = expiresText
    live[#live + 1] = user
    if #live == 1000 then -- Lua's unpack takes a few thousand values at most
      addLive()
    end
    out[#out + 1] = user
    out[#out + 1] = token
    out[#out + 1] = mark[1] and math.max(0, nowSec - markSecond(mark[1])) or 0
  end
  if #live > 0 then
    addLive()
  end
  if mark[2] then
    redis.call('ZREMRANGEBYSCORE', marksKey, '-inf', '(' .. mark[2])
  end
end

-- forget takes users out of places (line.lua) when they leave the queue.
local function forget(users)
  for i = 1, #users, 1000 do -- Lua's unpack takes a few thousand values at most
    redis.call('HDEL', placesKey, unpack(users, i, math.min(#users, i + 999)))
  end
end

-- popLine takes the line's first n users, the sorted set's and the
-- queue's merged by number (line.lua), and returns them as ZPOPMIN would:
-- user, sequence, user, sequence, ... The front moves past the queue's,
-- and says so once the sorted set is empty.
local function popLine(n)
  local front, maySort = frontOf(redis.call('HGET', placesKey, ''))
  local sorted, queued = {}, {}
  if maySort then
    sorted = redis.call('ZRANGE', lineKey, 0, n - 1, 'WITHSCORES')
  end
  if front then
    queued = redis.call('LRANGE', queueKey, 0, n - 1)
  end
  local popped, i, j = {}, 1, 1
  for k = 1, 2 * n, 2 do
    local seq = queued[j] and front + j - 1
    if sorted[2 * i] and (not seq or tonumber(sorted[2 * i]) < seq) then
      popped[k] = sorted[2 * i - 1]
      popped[k + 1] = sorted[2 * i]
      i = i + 1
    elseif seq then
      popped[k] = queued[j]
      popped[k + 1] = string.format('%d', seq)
      j = j + 1
    else
      break
    end
  end
  if i > 1 then
    redis.call('ZREMRANGEBYRANK', lineKey, 0, i - 2)
  end
  if not front or (j == 1 and not (maySort and i > 1)) then
    return popped -- no queue, or its front as it was
  end
  redis.call('LTRIM', queueKey, j - 1, -1)
  for k = #queued, j, -1 do
    queued[k] = nil
  end
  forget(queued)
  -- The front's both copies (line.lua) move, or go with the queue's last
  -- user, whose sequence the counter then holds.
  if redis.call('EXISTS', queueKey) == 0 then
    redis.call('HDEL', placesKey, '')
    redis.call('HDEL', settingsKey, 'front')
    redis.call('SET', seqKey, string.format('%d', front + j - 2))
    return popped
  end
  local stored = string.format('%d', front + j - 1)
  if maySort and redis.call('EXISTS', lineKey) == 1 then
    stored = '-' .. stored
  end
  redis.call('HSET', placesKey, '', stored)
  redis.call('HSET', settingsKey, 'front', stored)
  return popped
end

-- handOver ends the control window once it has lasted windowMs ms: the
-- counters go to the admitter (this reply) and a new window starts, in
-- one step, so that overlapping admitters never both take one window. A
-- window without calls just starts the next; the counters' expiry, renewed
-- by the gate's calls, lets an idle room's go. Appends the window (or 0
-- and empty values) to out.
local function handOver(nowMs, nowMsText, out)
  local at = redis.call('HGET', downstreamKey, 'at')
  local window = nil
  if at and nowMs - tonumber(at) >= windowMs then
    local all = redis.call('HGETALL', downstreamKey)
    local counts = ''
    for i = 1, #all, 2 do -- strings all: the hash's fields and values
      if all[i] ~= 'at' then
        counts = counts .. (counts == '' and '' or ',') .. all[i] .. '=' .. all[i + 1]
      end
    end
    if counts ~= '' then
      redis.call('DEL', downstreamKey)
      window = {nowMsText, nowMs - tonumber(at), counts,
        redis.call('HGET', controlKey, 'state') or '', redis.call('HGET', settingsKey, 'adaptive') or ''}
    end
    redis.call('HSET', downstreamKey, 'at', nowMsText)
    if window then
      redis.call('PEXPIRE', downstreamKey, countersExpiryMs)
    end
  elseif not at and redis.call('EXISTS', downstreamKey) == 1 then
    redis.call('HSET', downstreamKey, 'at', nowMsText) -- the first call since the counters were gone
  end
  window = window or {0, 0, '', '', ''}
  for i = 1, 5 do
    out[#out + 1] = window[i]
  end
end

-- sweepBuckets removes the limiter's buckets that are full again (their
-- time has passed: they hold nothing a call would not start afresh), a
-- tenth of the room's hash a batch, so that it holds the buckets of the
-- last second or so of callers, not of everyone who ever called. A
-- bucket's field has ':' for its second character (ratelimit.go), no
-- settings field has. The scan's cursor is the budget's 'gc'. The hash
-- never empties (the settings stay), and after a crowd its table stays
-- sparse (Redis shrinks it only so far), where HSCAN visits up to ten empty
-- slots per field asked for: so a pass made in one scan that found no
-- bucket leaves the hash's length as 'gcq' (quiet), and batches skip the
-- scan while the length stays that (any new bucket is a new field).
-- Returns the cursor and the quiet length ('' for none).
local function sweepBuckets(nowUs, cursor, quiet)
  local size = redis.call('HLEN', settingsKey)
  if size == 0 or tonumber(quiet) == size then
    return '0', quiet or ''
  end
  local count = math.max(128, math.ceil(size / 10))
  local scan = redis.call('HSCAN', settingsKey, cursor or '0', 'COUNT', string.format('%d', count))
  local found, stale, buckets = scan[2], {}, 0
  for i = 2, #found, 2 do
    if string.sub(found[i - 1], 2, 2) == ':' then
      buckets = buckets + 1
      if (tonumber(found[i]) or 0) <= nowUs then
        stale[#stale + 1] = found[i - 1]
        if #stale == 1000 then -- Lua's unpack takes a few thousand values at most
          redis.call('HDEL', settingsKey, unpack(stale))
          stale = {}
        end
      end
    end
  end
  if #stale > 0 then
    redis.call('HDEL', settingsKey, unpack(stale))
  end
  if buckets == 0 and (cursor or '0') == '0' and scan[1] == '0' then
    return '0', size
  end
  return scan[1], ''
end

-- releasePerBatch is how many places of a closed room's line one batch
-- releases: a bounded slice of work per call (about a millisecond of the
-- server's time), so that closing a long line never blocks the hot path.
local releasePerBatch = 5000

-- releaseClosed is a closed room's batch: nobody is admitted; up to
-- releasePerBatch places leave the line, and once it is empty its sequence,
-- marks and budget go too (reopening starts a fresh line). Live entry
-- tokens stay until they expire; then the room's keys expire as an idle
-- room's do. The reply is admit's, without admissions.
local function releaseClosed(room, burst, nowUs, nowMs, nowMsText)
  local gone = redis.call('ZREMRANGEBYSCORE', liveKey, '-inf', nowMsText)
  -- Callers still poll a closed room: their buckets go as an open room's.
  local sweep = redis.call('HMGET', budgetKey, 'gc', 'gcq')
  local cursor, quiet = sweepBuckets(nowUs, sweep[1], sweep[2])
  redis.call('HSET', budgetKey, 'gc', cursor, 'gcq', quiet)
  local waiting = 0
  if redis.call('EXISTS', lineKey, queueKey) > 0 then
    popLine(releasePerBatch)
    waiting = redis.call('ZCARD', lineKey) + redis.call('LLEN', queueKey)
    if waiting == 0 then
      redis.call('DEL', budgetKey, marksKey, seqKey)
    end
  end
  local active = redis.call('ZCARD', liveKey)
  local idleMs = math.max(idleExpiryMs, math.ceil(burst / room.rate * 1000))
  if waiting == 0 and active == 0 and redis.call('EXISTS', budgetKey, marksKey, seqKey, admitsKey) > 0 then
    -- Set once (not pushed back by every batch): what is left expires.
    -- A closed room is an operator's: its hash stays, swept by every batch.
    for _, k in ipairs({budgetKey, marksKey, seqKey, admitsKey}) do
      if redis.call('PTTL', k) == -1 then
        redis.call('PEXPIRE', k, idleMs)
      end
    end
  end
  local out = {waiting, active, gone, nowMsText, math.ceil(burst), room.stored and 1 or 0, room.rateText}
  handOver(nowMs, nowMsText, out)
  return out
end

local room = roomOf(redis.call('HGET', settingsKey, 'hot'), nil, true, true)
local rate = room.rate
local burst = math.max(1, rate * intervalSeconds)
local nowUs, nowMs, nowSec, nowSecText = serverTime()
local nowMsText = string.format('%d', nowMs)
if roomHas(room, closedBit) then
  return releaseClosed(room, burst, nowUs, nowMs, nowMsText)
end

local budget = redis.call('HMGET', budgetKey, 'at', 'avail', 'gc', 'gcq')
local avail = refill(room, burst, nowUs, budget)

local expired = redis.call('ZREMRANGEBYSCORE', liveKey, '-inf', nowMsText)

local n = 0
if not roomHas(room, pausedBit) and room.opensAt <= nowMs then
  n = math.min(math.floor(avail), #ARGV - firstPart + 1)
  if room.maxActive > 0 then
    -- Closed loop: the live tokens never exceed maxActive, whatever the
    -- number of admitters, because this check and the issue are one step.
    n = math.min(n, room.maxActive - redis.call('ZCARD', liveKey))
  end
end
local popped = {}
if n > 0 then
  popped = popLine(n)
end
local admitted = #popped / 2
avail = avail - admitted
-- An empty line leaves the budget alone (a missing one is a full one), so
-- that visiting an idle created room writes nothing.
local cursor, quiet = sweepBuckets(nowUs, budget[3], budget[4])
if admitted > 0 or redis.call('EXISTS', lineKey, queueKey) > 0 then
  redis.call('HSET', budgetKey, 'at', string.format('%d', nowUs), 'avail', string.format('%.9f', avail), 'gc', cursor, 'gcq', quiet)
end

local expiresText = string.format('%d', nowMs + room.ttl)
local out = {0, 0, expired, expiresText, math.ceil(burst), room.stored and 1 or 0, room.rateText}
handOver(nowMs, nowMsText, out)
if admitted > 0 then
  admitTokens(popped, admitted, expiresText, expiresText .. ':' .. nowMsText .. ':', nowSec, out)
  countAdmitted(admitsKey, admitted, nowSec, nowSecText)
end
out[1] = redis.call('ZCARD', lineKey) + redis.call('LLEN', queueKey)
out[2] = redis.call('ZCARD', liveKey)
-- The room's view (waitroom.View, read in one HMGET of the room's hash by
-- every process every 100 ms) tells stalled admission by the last batch and
-- whether live tokens fill maxActive: kept beside the settings while
-- someone waits.
if out[1] > 0 then
  redis.call('HSET', settingsKey, 'batch', string.format('%d', nowUs), 'full', room.maxActive > 0 and out[2] >= room.maxActive and '1' or '0')
end
-- An idle room (nobody waiting, no live token) lets its keys expire, so an
-- abandoned room costs nothing. Not at once: the budget must outlive a
-- refill, or a room emptied by quick orders would start each user with a
-- full batch. enter.lua takes the expiry off again. The room's hash is
-- the operator's when it holds settings; else it holds only its callers'
-- buckets, which go with the room.
local idleMs = math.max(idleExpiryMs, math.ceil(burst / rate * 1000))
if out[1] == 0 and out[2] == 0 then
  for _, k in ipairs({budgetKey, marksKey, seqKey, admitsKey}) do
    redis.call('PEXPIRE', k, idleMs)
  end
else
  redis.call('PEXPIRE', budgetKey, idleMs)
end
if not room.stored then
  redis.call('PEXPIRE', settingsKey, idleMs) -- while registered, a batch comes every interval
end
return out
