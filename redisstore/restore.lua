-- Prepended (after line.lua) to the scripts a waiting caller runs: enter and
-- position.

-- restore puts back a place the store lost: a failover to a replica that
-- had not received the enter that made it (docs/design.md, "Failover").
-- The caller's credential still carries the place's number (n, signed, of
-- this line: waitroom.Caller.Place), so the place goes back at that number,
-- in the sorted set, which admission merges with the queue by number: the
-- caller keeps its turn. Only a number the line has not passed: below the
-- front (or, with no queue, at or below the counter) it was admitted or
-- released. hash is the room's hash, line, places and counter (the
-- sequence counter) line.lua's keys, stored the front as the room's hash
-- held it. The counter is kept from expiring (an idle
-- room's is set to: admit.lua): its numbers go on after the restored one.
-- Returns whether the place was restored.
local function restore(hash, line, places, counter, user, n, stored)
  local front = frontOf(stored or redis.call('HGET', places, ''))
  local lowest = front or tonumber(redis.call('GET', counter) or '0') + 1
  if n < lowest then
    return false
  end
  redis.call('ZADD', line, string.format('%d', n), user)
  redis.call('PERSIST', counter)
  if front then -- the sorted set now holds someone: the front says so (line.lua)
    local negated = string.format('%d', -front)
    redis.call('HSET', places, '', negated)
    redis.call('HSET', hash, 'front', negated)
  end
  return true
end
