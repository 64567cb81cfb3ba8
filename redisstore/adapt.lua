-- Store the admitter's decision for one handed-over control window
-- (admit.lua): the controller's state and, for status, the window's p95
-- and error rate; for an adaptive room, the next effective rate within the
-- bounds as they are now (an operator may have changed them meanwhile; a
-- room no longer adaptive keeps its fixed rate). A compare-and-set on the
-- window: a slower admitter's decision for an older window never
-- overwrites a newer one. A decision may also owe a pause (waitroom.Decision.Debt):
-- the room's budget, which refills at the rate, then owes that many users, and
-- admission resumes at the rate once they are paid back (a budget not there, an
-- idle room's, owes nothing).
-- KEYS[1] settings (the room's hash: settings.lua)  KEYS[2] control (hash: at state p95 err)
-- KEYS[3] budget (admit.lua)
-- ARGV[1] the window's end (ms, the store's clock)  ARGV[2] state
-- ARGV[3] p95 ms ('' none)  ARGV[4] error rate ('' none)  ARGV[5] rate ('' none)
-- ARGV[6] the control hash's expiry ms  ARGV[7] the pause owed, in users ('' none)
-- Returns 1 when stored, 0 when a newer window's decision is there.
local last = redis.call('HGET', KEYS[2], 'at')
if last and tonumber(last) >= tonumber(ARGV[1]) then
  return 0
end
redis.call('HSET', KEYS[2], 'at', ARGV[1], 'state', ARGV[2], 'p95', ARGV[3], 'err', ARGV[4])
redis.call('PEXPIRE', KEYS[2], ARGV[6])
if ARGV[5] ~= '' then
  local room = redis.call('HMGET', KEYS[1], 'adaptive', 'hot')
  local rate = clampRate(room[1], ARGV[5])
  if rate and room[2] then
    redis.call('HSET', KEYS[1], 'hot', withRate(room[2], rate))
    if ARGV[7] ~= '' and redis.call('EXISTS', KEYS[3]) == 1 then
      redis.call('HSET', KEYS[3], 'avail', string.format('%.9f', -tonumber(ARGV[7])))
    end
  end
end
return 1
