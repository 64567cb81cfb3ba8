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

-- drawRank is the rank of a member of the sorted set and its number, or
-- nil when user is none: its rank among them, plus the numbers ahead of
-- it that the front has not passed (those below its number; nextN is the
-- counter's next).
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

-- counterPast moves the counter (nextN, the room's hash's 'next') past an
-- anonymous visitor's number n when it is behind it: a failover's replica
-- never saw the enter that gave n out, and admission must still reach it.
-- Returns the counter's next number.
local function counterPast(hash, n, nextN)
  if n < nextN then
    return nextN
  end
  redis.call('HSET', hash, 'next', string.format('%d', n + 1))
  return n + 1
end

-- placeOf finds a caller's place: an anonymous visitor's number is its
-- ticket's (place, when placed: of this line), an account's its places'
-- (places, the hash; line, the sorted set). Returns its number (nil:
-- none), its rank while it waits (nil: not waiting; the front passed it,
-- or it has none), a draw's number when the sorted set holds it, and the
-- counter's next number (moved past an anonymous number beyond it).
local function placeOf(hash, line, places, user, anonymous, place, front, sorted, nextN)
  local n
  if anonymous and place then
    n = place
    nextN = counterPast(hash, n, nextN)
  else
    n = tonumber(redis.call('HGET', places, user))
  end
  if n and front and n >= front then
    return n, rankOf(line, n, front, sorted), nil, nextN
  elseif not n and sorted then
    local rank, drawn = drawRank(line, user, front, nextN)
    return n, rank, drawn, nextN
  end
  return n, nil, nil, nextN
end
