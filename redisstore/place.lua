-- A caller's place in the line (line.lua), prepended after it to the
-- scripts a waiting caller runs: enter and position.

-- rankOf is the rank (0 first) of the place numbered n, which the front
-- has not passed.
local function rankOf(line, n, front, sorted)
  local rank = n - front
  if sorted then
    rank = rank + redis.call('ZCOUNT', line, '-inf', '(' .. string.format('%d', n))
  end
  return rank
end

-- drawRank is the rank of a pre-queue draw (the sorted set's member user)
-- and its number, or nil when user drew none: its rank among the draws,
-- plus the numbers ahead of it that the front has not passed (those below
-- its number; nextN is the counter's next).
local function drawRank(line, user, front, nextN)
  local rank = redis.call('ZRANK', line, user)
  if not rank then
    return nil
  end
  local n = tonumber(redis.call('ZSCORE', line, user))
  if front then
    rank = rank + math.max(0, math.min(nextN - front, math.ceil(n) - front))
  end
  return rank, n
end

-- ofThisLine: a place numbered place (0: none), signed at placeAtMs (the
-- signer's clock), is of the line whose counter was born at born (the
-- store's clock; nil: none yet). A place of an earlier line was signed
-- before that line's hash expired, an idle room's, at least a minute
-- (redisstore's idleExpiry) before the counter was born again: 10 s leave
-- room for the clocks of the functions and the store to differ.
local function ofThisLine(place, placeAtMs, born)
  return place > 0 and born ~= nil and born ~= false and placeAtMs + 10000 >= tonumber(born)
end

-- counterPast moves the counter (nextN, the room's hash's 'next') past a
-- credential's number n when it is behind it: a failover's replica never
-- saw the enter that gave n out, and admission must still reach it.
-- Returns the counter's next number.
local function counterPast(hash, n, nextN)
  if n < nextN then
    return nextN
  end
  redis.call('HSET', hash, 'next', string.format('%d', n + 1))
  return n + 1
end

-- accountOf reads an account's record (line.lua): its number, nil when
-- it has none in this line (born: the counter's, as read), and whether
-- its bucket is of this line (false: none, or an earlier line's, whose
-- records count for nothing).
local function accountOf(bucket, field, born)
  local r = redis.call('HMGET', bucket, field, 'b')
  if not born or r[2] ~= born then
    return nil, false
  end
  return tonumber(r[1]), true
end

-- callerPlace is what a caller brings of its place: the number its
-- credential carries (place, signed at placeAtMs: false unless of this
-- line, born), and its account's record (accountOf's number and bucket
-- state; none for a visitor whose place is its number alone, field '').
local function callerPlace(bucket, field, place, placeAtMs, born)
  local placed = ofThisLine(place, placeAtMs, born) and place
  if field == '' then
    return placed, nil, false
  end
  return placed, accountOf(bucket, field, born)
end

-- keepAccount records an account's number n (seq, as text) in its bucket
-- (current: the bucket is of this line, born), for ttlMs at least. A
-- bucket of an earlier line is dropped first: its 'b' rewritten would make
-- its other records count. Every record of a bucket lives as long as its
-- latest (PEXPIRE GT: a later number waits longer).
local function keepAccount(bucket, field, seq, born, current, ttlMs)
  local ttl = string.format('%d', ttlMs)
  if current then
    redis.call('HSET', bucket, field, seq)
    redis.call('PEXPIRE', bucket, ttl, 'GT')
    return
  end
  redis.call('DEL', bucket)
  redis.call('HSET', bucket, field, seq, 'b', born)
  redis.call('PEXPIRE', bucket, ttl)
end

-- placeOf finds a caller's place: the number its credential carries
-- (place: signed, of this line; nil: none), an account's record
-- (recorded; the earlier of the two), or its pre-queue draw. Returns its
-- number (nil: none), its rank while it waits (nil: not waiting; the front
-- passed it, or it has none), a draw's number when the sorted set holds
-- it, and the counter's next number (moved past a credential's number
-- beyond it).
local function placeOf(hash, line, user, recorded, place, front, sorted, nextN)
  local n = recorded
  if place then
    n = math.min(n or place, place)
    nextN = counterPast(hash, place, nextN)
  end
  if n and front and n >= front then
    return n, rankOf(line, n, front, sorted), nil, nextN
  elseif not n and sorted then
    local rank, drawn = drawRank(line, user, front, nextN)
    return n, rank, drawn, nextN
  end
  return n, nil, nil, nextN
end

-- accountMs is how long an account's record must last at least, for a
-- place at position in room (with its numbers: roomNumbers): twice its
-- wait at the room's rate, its claim window (the token's life), and an
-- hour beyond (a pause, a slower rate). A record that expires while its
-- holder still waits leaves the place its credential carries.
local function accountMs(position, room)
  return 2 * position * 1000 / math.max(room.rate, 0.001) + tonumber(room.ttl) + 3600000
end

-- stalled: nobody's turn can be foreseen because no batch ran for stallUs
-- while someone waited (the later of the last batch, 'at', and the moment
-- the line stopped being empty, 'since'), or live tokens and the numbers
-- admitted not yet claimed (the room's hash, hash: 'pending', claim.lua)
-- fill maxActive. Checked only for a position whose turn is nearer than
-- horizonMs: farther back the answer is the far tier anyway, so most calls
-- skip the reads (and the clock, when the caller has not read it: nowUs
-- nil). A poll's room has no numbers yet (roomNumbers): the rate alone
-- decides most calls. horizonMs and stallUs are numbers (configHead's
-- constants).
local function stalled(room, position, budgetKey, tokensKey, horizonMs, stallUs, nowUs, hash)
  local rate = room.rate or tonumber(string.match(room.hot, '^.([^:]*)'))
  if position * 1000 / rate >= horizonMs then
    return 0
  end
  local maxActive = (room.rate and room or roomOf(room.hot, nil, true, true)).maxActive -- roomNumbers, not read as an upvalue
  if not nowUs then
    nowUs = serverTime()
  end
  local b = redis.call('HMGET', budgetKey, 'at', 'since')
  local last = math.max(tonumber(b[1] or '0'), tonumber(b[2] or '0'))
  if last > 0 and nowUs - last > stallUs then
    return 2
  end
  if maxActive > 0 and redis.call('ZCARD', tokensKey) + tonumber(redis.call('HGET', hash, 'pending') or '0') >= maxActive then
    return 2
  end
  return 0
end
