-- Shared by the scripts that admit or count admissions (enter.lua's
-- instant admission, admit.lua, status.lua), prepended after room.lua:
-- position and accept, the hot paths, do without them.

-- refill is the room's rate budget now, in users: a token bucket on the
-- server's clock that fills at the room's rate and holds at most one batch
-- (burst) plus the fraction of a user carried over (capping at one batch
-- exactly drops that fraction at nearly every batch, which loses up to half
-- the rate when batches are small). budget is the hash's {at (µs), avail};
-- a missing budget is a full one. admit.lua's batches and enter.lua's
-- instant admissions both spend it, so together they admit at most
-- rate x window + one batch, whatever the number of callers.
local function refill(room, burst, nowUs, budget)
  if not budget[1] then
    return burst
  end
  local elapsed = nowUs - tonumber(budget[1])
  if elapsed < 0 then elapsed = 0 end -- a failover to a node with a slower clock
  local left = tonumber(budget[2])
  return math.min(burst + left - math.floor(left), left + elapsed * room.rate / 1000000)
end

-- countAdmitted adds n admissions to the admissions-per-second hash (status'
-- admittedLastMinute and admittedPerSec): a minute of history, gone a
-- minute after the last admission. The seconds past the minute go at the
-- second's first count (the field was absent: HINCRBY answers n), not at
-- each of its batches: the same seconds go, and the second's other
-- batches spare the HDEL and its two numbers' texts.
local function countAdmitted(key, n, nowSec, nowSecText)
  if redis.call('HINCRBY', key, nowSecText, n) == n then
    redis.call('HDEL', key, string.format('%d', nowSec - 61), string.format('%d', nowSec - 62))
  end
  redis.call('PEXPIRE', key, 120000)
end

