-- The line, prepended to the scripts that read or move it. Every place has
-- a number, handed out in order by the room's counter ('next' in the room's
-- hash); 'front' there is the first number admission has not passed, so
-- the place numbered n waits at n - front + 1 (plus, while the sorted set
-- may hold anyone, its members ahead). What is kept of a place depends on
-- who holds it (docs/design.md, "The line at any size"):
--   an anonymous visitor: nothing. Its number lives in its ticket, signed
--     (waitroom.Caller.Anonymous and Place): its polls read no record, and
--     admission moves the front past it and records the batch, from which
--     the visitor then claims its entry token (claim.lua);
--   an account (and an entry the broker applied): one record, its
--     number, in a bucket hash a digest of its id picks (place.lua's
--     accountOf and keepAccount), so that the account keeps one place
--     whatever it presents. Admission never reads it: the account claims
--     its turn as a visitor does, and the claim removes the record;
--   the sorted set ('line'): the pre-queue's random draws (enter.lua),
--     user -> a number between two numbers. While it may hold anyone the
--     front is stored negated; a rank then counts its members ahead, and
--     admission serves them merged by number.
-- 'born' is when the counter started (ms). A place signed before it is of
-- an earlier line (an idle room's hash expires, its counter with it), and
-- counts for nothing. Finding a caller's place is place.lua's, prepended
-- to the scripts a waiting caller runs alone.

-- frontOf reads the stored front: the front's number and whether the
-- sorted set may hold anyone; nil (and true: nobody can say that it holds
-- nobody) before the counter is born.
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

-- storeFront writes the front, negated while the sorted set may hold anyone.
local function storeFront(hash, front, sorted)
  redis.call('HSET', hash, 'front', string.format('%d', sorted and -front or front))
end
