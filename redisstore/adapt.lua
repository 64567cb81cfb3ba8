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
local settingsKey = KEYS[1] -- the room's hash (settings.lua)
local controlKey = KEYS[2] -- the controller's state (hash: at state p95 err)
local budgetKey = KEYS[3] -- admission's budget (admit.lua)
local windowEnd = tonumber(ARGV[1]) -- ms, the store's clock
local windowEndText = ARGV[1]
local state = ARGV[2]
local p95 = ARGV[3] -- ms ('' none)
local errorRate = ARGV[4] -- ('' none)
local nextRate = ARGV[5] -- ('' none)
local controlExpiryMs = ARGV[6]
local owed = ARGV[7] -- the pause owed, in users ('' none)
-- Returns 1 when stored, 0 when a newer window's decision is there.
local last = redis.call('HGET', controlKey, 'at')
if last and tonumber(last) >= windowEnd then
  return 0
end
redis.call('HSET', controlKey, 'at', windowEndText, 'state', state, 'p95', p95, 'err', errorRate)
redis.call('PEXPIRE', controlKey, controlExpiryMs)
if nextRate ~= '' then
  local room = redis.call('HMGET', settingsKey, 'adaptive', 'hot')
  local rate = clampRate(room[1], nextRate)
  if rate and room[2] then
    redis.call('HSET', settingsKey, 'hot', withRate(room[2], rate))
    if owed ~= '' and redis.call('EXISTS', budgetKey) == 1 then
      redis.call('HSET', budgetKey, 'avail', string.format('%.9f', -tonumber(owed)))
    end
  end
end
return 1
