-- The line, prepended to the scripts that read or move it: where a user
-- stands. A sorted set's member costs Redis a skiplist node and a dict
-- entry; the line's common case, users who joined after the opening in the
-- order they joined, needs no sort, so it is kept in structures that cost a
-- few bytes of a list and one dict entry a user (docs/design.md, "Fair
-- order"; BENCHMARKS.md, "What it is made of"):
--   the queue: a list of users, in their order (admit.lua pops its head);
--   places: a hash of user -> sequence, and under the field '' (no user's
--     id is empty: Store.Enter refuses one) the front, the sequence of the
--     queue's head. A user's rank is its sequence minus the front: the
--     queue's sequences are consecutive, since nobody leaves it but from
--     the head. The front goes with the queue's last user (admit.lua), so
--     places exists exactly while the queue does;
--   the sequence counter: the last sequence given out when the queue last
--     emptied (admit.lua); while a queue exists, its last user's sequence
--     (front + length - 1) is the last given out, and a newcomer takes the
--     next: nobody writes the counter but admission;
--   'front' in the room's hash: a copy of the front, read in the HMGET a
--     poll already makes (an HMGET of the places would return a table,
--     dearer to a script than a field more of a read it makes anyway).
--     Whoever writes the one writes the other; a room's hash that expired
--     (an idle unregistered room's: admit.lua) loses the copy, and the next
--     call that needs it copies it again from places.
-- The sorted set ('line') holds what needs its order: the pre-queue's
-- random draws (enter.lua) and places a failover lost (restore.lua). While it
-- may hold anyone, the front is stored negated: a rank then counts the
-- members of both ahead, and admission serves them merged by number. With
-- no queue there is no front, and a caller that needs to know looks at the
-- sorted set itself.

-- frontOf reads a stored front (either copy): the front's sequence and
-- whether the sorted set may hold anyone; nil, and true (nobody can say
-- that it holds nobody), when there is no queue.
local function frontOf(stored)
  local front = tonumber(stored)
  if not front then
    return nil, true
  end
  if front < 0 then
    return -front, true
  end
  return front, false
end

-- placeOf is the user's rank in the line (0 first) and its sequence
-- (fractional for a pre-queue draw), or nil when the user is not in line;
-- hash is the room's hash (its key), line and places line.lua's keys, seq
-- places' value for the user (nil: not in the queue) and stored the front
-- as the room's hash held it (nil: to be copied from places).
local function placeOf(hash, line, places, user, seq, stored)
  if seq and not stored then
    stored = redis.call('HGET', places, '')
    redis.call('HSET', hash, 'front', stored)
  end
  local front, sorted = frontOf(stored)
  if seq then
    local rank = tonumber(seq) - front
    if sorted then
      rank = rank + redis.call('ZCOUNT', line, '-inf', '(' .. seq)
    end
    return rank, seq
  end
  -- Not in the queue: a pre-queue draw or a line stored before the queue.
  if not sorted then
    return nil
  end
  local rank = redis.call('ZRANK', line, user)
  if not rank then
    return nil
  end
  local score = redis.call('ZSCORE', line, user)
  front = front or frontOf(redis.call('HGET', places, ''))
  if front then
    -- The queue's users ahead: those whose sequence is below the score
    -- (places holds the queue's users and the front).
    local queued = redis.call('HLEN', places) - 1
    rank = rank + math.max(0, math.min(queued, math.ceil(tonumber(score)) - front))
  end
  return rank, score
end
