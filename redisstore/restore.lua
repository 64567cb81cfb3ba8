-- Prepended (after line.lua) to the scripts a waiting caller runs: enter and
-- position.

-- restore puts back an account's place the store lost: a failover to a
-- replica that had not received the enter that made it (docs/design.md,
-- "Failover"). The caller's credential still carries the place's number
-- (n, signed, of this line: waitroom.Caller.Place), so the place goes back
-- at that number, in the sorted set, which admission merges with the
-- numbers: the caller keeps its turn. Only a number the front has not
-- passed (a passed one was admitted or released). An anonymous visitor's
-- place needs none: its number is all there is of it (line.lua). hash is
-- the room's hash, line the sorted set, front the front as read (nil: no
-- line yet). Returns whether the place was restored.
local function restore(hash, line, user, n, front)
  if not front or n < front then
    return false
  end
  redis.call('ZADD', line, string.format('%d', n), user)
  storeFront(hash, front, true)
  return true
end
