-- Admit the front of one room's line as far as its settings and its rate
-- budget allow, in one atomic step: a pre-queue draw leaves the line with
-- its entry token; a number (line.lua) leaves it in a batch its holder
-- claims the token from (claim.lua).
--
-- The budget is a token bucket on the server's own clock (room.lua's
-- refill, which enter.lua's instant admissions spend too): it fills at the
-- room's rate and holds at most one batch (plus the fraction of a user
-- carried over). Any number of overlapping admitters therefore admit at most
-- rate x window + one batch, rounded up to a whole user, and a late admitter
-- catches up by at most one batch. A lowered rate lowers the cap at once, so
-- what was saved at the old rate never over-admits. No lock to lose.
--
local settingsKey = KEYS[1] -- the room's hash (settings.lua; with the limiter's buckets, and the line's front and counter: line.lua)
local lineKey = KEYS[2] -- the line's sorted set (line.lua)
local budgetKey = KEYS[3] -- the budget (hash: at = microseconds, avail = users)
local marksKey = KEYS[4] -- marks (enter.lua)
local liveKey = KEYS[5] -- live tokens (zset user -> expiry ms)
local admitsKey = KEYS[6] -- admissions per second (hash second -> count)
local downstreamKey = KEYS[7] -- the order gate's downstream counters (downstream.lua)
local controlKey = KEYS[8] -- the controller's state (adapt.lua)
local batchesKey = KEYS[9] -- the batches numbers are claimed from (claim.lua)
local unclaimedKey = KEYS[10] -- each batch's numbers not yet claimed (claim.lua)
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
--          controlState, adaptive, then per place admitted: user, token, waited
--          (a draw) or number, '', waited (a number, claimed later)}

-- popLine passes the line's first n places, the sorted set's draws and
-- the numbers the front has not passed, merged by number (line.lua):
-- returns them in order, users[k] a draw's holder (false for a number,
-- whose holder claims its turn: claim.lua) and nums[k] its number (as
-- text), and moves the front past them. nextN is the counter's next number.
local function popLine(n, front, maySort, nextN)
  local users, nums = {}, {}
  local sorted = maySort and redis.call('ZRANGE', lineKey, 0, n - 1, 'WITHSCORES') or {}
  local i, x = 1, front
  for k = 1, n do
    local drawn = sorted[2 * i] and tonumber(sorted[2 * i])
    if drawn and (x >= nextN or drawn < x) then
      users[k], nums[k] = sorted[2 * i - 1], sorted[2 * i]
      i = i + 1
    elseif x < nextN then
      users[k], nums[k] = false, string.format('%d', x)
      x = x + 1
    else
      break
    end
  end
  if i > 1 then
    redis.call('ZREMRANGEBYRANK', lineKey, 0, i - 2)
  end
  if x > front or i > 1 then -- an empty line's hash is left alone
    storeFront(settingsKey, x, maySort and redis.call('EXISTS', lineKey) == 1)
  end
  return users, nums
end

-- admitPlaces admits the count places popLine passed: a draw gets its
-- token record and live token; the numbers a batch record their holders
-- claim from (claim.lua), counted as pending. Appends each place's user,
-- token and wait to out (a number's number, '' and wait). The record:
-- expiry, issue time (the signed token's iat, so that every answer for
-- this admission carries the same token), then the token. The waits come
-- from the marks: the one at or before the first place, then those up to
-- the last, read once for the batch; marks older than the newest one used
-- are no longer needed.
local function admitPlaces(users, nums, count, expiresText, recordHead, nowSec, nowMsText, out)
  local mark = redis.call('ZREVRANGEBYSCORE', marksKey, nums[1], '-inf', 'WITHSCORES', 'LIMIT', 0, 1)
  local later = redis.call('ZRANGEBYSCORE', marksKey, '(' .. nums[1], nums[count], 'WITHSCORES')
  local live, j, part, first, last, numbers = {}, 1, firstPart, nil, nil, 0
  for i = 1, count do
    local user, seq = users[i], tonumber(nums[i])
    while later[2 * j] and tonumber(later[2 * j]) <= seq do
      mark = {later[2 * j - 1], later[2 * j]}
      j = j + 1
    end
    if user then
      local token = roomName .. '.' .. ARGV[part]
      part = part + 1
      redis.call('SET', recordPrefix .. user, recordHead .. token, 'PXAT', expiresText)
      live[#live + 1] = expiresText
      live[#live + 1] = user
      if #live == 1000 then -- Lua's unpack takes a few thousand values at most
        redis.call('ZADD', liveKey, unpack(live))
        live = {}
      end
      out[#out + 1] = user
      out[#out + 1] = token
    else
      numbers = numbers + 1
      first = first or nums[i]
      last = nums[i]
      out[#out + 1] = seq
      out[#out + 1] = ''
    end
    out[#out + 1] = mark[1] and math.max(0, nowSec - markSecond(mark[1])) or 0
  end
  if #live > 0 then
    redis.call('ZADD', liveKey, unpack(live))
  end
  if numbers > 0 then
    redis.call('ZADD', batchesKey, last, first .. ':' .. nowMsText)
    redis.call('HSET', unclaimedKey, first, numbers)
    redis.call('HINCRBY', settingsKey, 'pending', numbers)
  end
  if mark[2] then
    redis.call('ZREMRANGEBYSCORE', marksKey, '-inf', '(' .. mark[2])
  end
end

-- expireBatches ends the batches whose claim window (the token's life,
-- ttl ms) is over: their numbers not claimed leave pending (maxActive
-- counts them no more) and can no longer be claimed. Oldest first: one
-- read when none is over. Returns pending as it is then.
local function expireBatches(nowMs, ttl, pending)
  repeat
    local oldest = redis.call('ZRANGE', batchesKey, 0, 0)[1]
    local first, at = string.match(oldest or '', '^(%d+):(%d+)$')
    if not first or tonumber(at) + ttl > nowMs then
      return pending
    end
    local left = tonumber(redis.call('HGET', unclaimedKey, first) or '0')
    if left > 0 then
      pending = pending - left
      redis.call('HINCRBY', settingsKey, 'pending', -left)
    end
    redis.call('HDEL', unclaimedKey, first)
    redis.call('ZREM', batchesKey, oldest)
  until false
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

-- releaseClosed is a closed room's batch: nobody is admitted; the line
-- leaves at once (its front jumps to the counter; the draws are freed off
-- the main thread) with its marks and budget (reopening starts a
-- fresh line). Live entry tokens stay until they expire, and numbers
-- admitted before the closing can be claimed until their window ends;
-- then the room's keys expire as an idle room's do. The reply is admit's,
-- without admissions.
local function releaseClosed(room, line, burst, nowUs, nowMs, nowMsText)
  local gone = redis.call('ZREMRANGEBYSCORE', liveKey, '-inf', nowMsText)
  -- Callers still poll a closed room: their buckets go as an open room's.
  local sweep = redis.call('HMGET', budgetKey, 'gc', 'gcq')
  local cursor, quiet = sweepBuckets(nowUs, sweep[1], sweep[2])
  redis.call('HSET', budgetKey, 'gc', cursor, 'gcq', quiet)
  local front, _ = frontOf(line[2])
  local nextN = tonumber(line[3]) or 1
  if front and (front < nextN or redis.call('EXISTS', lineKey) > 0) then
    redis.call('UNLINK', lineKey, budgetKey, marksKey)
    storeFront(settingsKey, nextN, false)
  end
  local active = redis.call('ZCARD', liveKey) + expireBatches(nowMs, tonumber(room.ttl), tonumber(line[4]) or 0)
  local idleMs = math.max(idleExpiryMs, math.ceil(burst / room.rate * 1000))
  if active == 0 and redis.call('EXISTS', budgetKey, marksKey, admitsKey) > 0 then
    -- Set once (not pushed back by every batch): what is left expires.
    -- A closed room is an operator's: its hash stays, swept by every batch.
    for _, k in ipairs({budgetKey, marksKey, admitsKey}) do
      if redis.call('PTTL', k) == -1 then
        redis.call('PEXPIRE', k, idleMs)
      end
    end
  end
  local out = {0, active, gone, nowMsText, math.ceil(burst), room.stored and 1 or 0, room.rateText}
  handOver(nowMs, nowMsText, out)
  return out
end

local line = redis.call('HMGET', settingsKey, 'hot', 'front', 'next', 'pending')
local room = roomOf(line[1], nil, true, true)
local rate = room.rate
local burst = math.max(1, rate * intervalSeconds)
local nowUs, nowMs, nowSec, nowSecText = serverTime()
local nowMsText = string.format('%d', nowMs)
if roomHas(room, closedBit) then
  return releaseClosed(room, line, burst, nowUs, nowMs, nowMsText)
end

local budget = redis.call('HMGET', budgetKey, 'at', 'avail', 'gc', 'gcq')
local avail = refill(room, burst, nowUs, budget)

local expired = redis.call('ZREMRANGEBYSCORE', liveKey, '-inf', nowMsText)
local pending = expireBatches(nowMs, tonumber(room.ttl), tonumber(line[4]) or 0)
local nextN = tonumber(line[3]) or 1
local front, maySort = frontOf(line[2])
front = front or nextN -- no counter yet: a sorted set alone (line.lua)

local n = 0
if not roomHas(room, pausedBit) and room.opensAt <= nowMs then
  n = math.min(math.floor(avail), #ARGV - firstPart + 1)
  if room.maxActive > 0 then
    -- Closed loop: the live tokens and the numbers admitted but not yet
    -- claimed never exceed maxActive, whatever the number of admitters,
    -- because this check and the admission are one step.
    n = math.min(n, room.maxActive - redis.call('ZCARD', liveKey) - pending)
  end
end
local users, nums = {}, {}
if n > 0 then
  users, nums = popLine(n, front, maySort, nextN)
  front, maySort = frontOf(redis.call('HGET', settingsKey, 'front'))
end
local admitted = #nums
avail = avail - admitted
local waiting = (front and nextN - front or 0) + (maySort and redis.call('ZCARD', lineKey) or 0)
-- An empty line leaves the budget alone (a missing one is a full one), so
-- that visiting an idle created room writes nothing.
local cursor, quiet = sweepBuckets(nowUs, budget[3], budget[4])
if admitted > 0 or waiting > 0 then
  redis.call('HSET', budgetKey, 'at', string.format('%d', nowUs), 'avail', string.format('%.9f', avail), 'gc', cursor, 'gcq', quiet)
end

local expiresText = string.format('%d', nowMs + room.ttl)
local out = {waiting, 0, expired, expiresText, math.ceil(burst), room.stored and 1 or 0, room.rateText}
handOver(nowMs, nowMsText, out)
if admitted > 0 then
  admitPlaces(users, nums, admitted, expiresText, expiresText .. ':' .. nowMsText .. ':', nowSec, nowMsText, out)
  countAdmitted(admitsKey, admitted, nowSec, nowSecText)
end
out[2] = redis.call('ZCARD', liveKey) + tonumber(redis.call('HGET', settingsKey, 'pending') or '0')
-- The room's view (waitroom.View, read in one HMGET of the room's hash by
-- every process every 100 ms) tells stalled admission by the last batch and
-- whether live tokens fill maxActive: kept beside the settings while
-- someone waits.
if waiting > 0 then
  redis.call('HSET', settingsKey, 'batch', string.format('%d', nowUs), 'full', room.maxActive > 0 and out[2] >= room.maxActive and '1' or '0')
end
-- An idle room (nobody waiting, no live token, no number left to claim)
-- lets its keys expire, so an abandoned room costs nothing. Not at once:
-- the budget must outlive a refill, or a room emptied by quick orders
-- would start each user with a full batch. enter.lua takes the expiry off
-- again. The room's hash is the operator's when it holds settings; else it
-- holds only its callers' buckets and its line's counter, which go with
-- the room.
local idleMs = math.max(idleExpiryMs, math.ceil(burst / rate * 1000))
if waiting == 0 and out[2] == 0 then
  for _, k in ipairs({budgetKey, marksKey, admitsKey, batchesKey, unclaimedKey}) do
    redis.call('PEXPIRE', k, idleMs)
  end
else
  redis.call('PEXPIRE', budgetKey, idleMs)
end
if not room.stored then
  redis.call('PEXPIRE', settingsKey, idleMs) -- while registered, a batch comes every interval
end
return out
