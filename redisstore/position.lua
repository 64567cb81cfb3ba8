-- Where a user stands, read atomically so that an admission in between
-- cannot make a waiting user look absent, and the claim of its turn once
-- the front has passed its number (claim.lua).
local settingsKey = KEYS[1] -- the room's hash (settings.lua): the line's front, counter and start (line.lua)
local lineKey = KEYS[2] -- the line's sorted set (line.lua)
local recordKey = KEYS[3] -- the user's entry-token record
local budgetKey = KEYS[4] -- admission's budget (admit.lua)
local liveKey = KEYS[5] -- live tokens
local accountKey = KEYS[6] -- the account's bucket of records (line.lua; not read for a visitor whose place is its number alone)
local batchesKey = KEYS[7] -- admission's batches (claim.lua)
local unclaimedKey = KEYS[8] -- each batch's numbers not yet claimed (claim.lua)
local markKey = KEYS[9] -- the user's claim (claim.lua)
local user = ARGV[1]
local limitArg = 2 -- ARGV[2..4]: the limiter's time and the fields of the caller's and its address's buckets (ratelimit.lua)
local place = tonumber(ARGV[5]) -- the number of the place the caller's credential carries (0: none)
local placeAtMs = tonumber(ARGV[6]) -- when it was signed
local field = ARGV[7] -- the account's field in its bucket ('': a visitor whose place is its number alone, its ticket's or a new one's: line.lua)
local anonymous = field == ''
local token = ARGV[8] -- the entry token a claim issues ("room.random")
-- 'seat' for a live stream's read (Store.Seat): a WAITING answer then
-- carries two more elements, the place's number and 1, or 0 in a room with
-- stored settings, whose answers depend on more than the line, or while
-- the sorted set may hold anyone, whose places are not consecutive (the
-- stream then reads the seat again at every move instead of computing from
-- the front; the number still tells it whether the front has passed the
-- place)
local seat = ARGV[9] == 'seat'
-- Returns answer(kind, …): {'READY', record} | {'WAITING', position}
--   | {'PREQUEUE'} | {'NOT_IN_QUEUE'} | {'CLOSED'} | {'NOROOM'} | {'LIMITED', ms until allowed}
local s = redis.call('HMGET', settingsKey, 'hot', ARGV[limitArg + 1], ARGV[limitArg + 2], 'front', 'next', 'born')
local room, refused = visit(settingsKey, roomOf(s[1]), s, 1, limitArg, 2)
if refused then
  return refused
end
local born = s[6]
local placed, recorded, current = callerPlace(accountKey, field, place, placeAtMs, born)
if roomHas(room, closedBit) then
  -- Sold out: the line is released (admit.lua); a live entry token stays
  -- valid, as does a number admitted before the closing (its claim);
  -- everyone else is told CLOSED without a read of the line.
  local n = placed and math.min(recorded or placed, placed) or recorded
  local held = redis.call('GET', recordKey)
    or (n and claim(markKey, batchesKey, recordKey, liveKey, unclaimedKey, settingsKey, accountKey, user, field, n, token, roomNumbers(room).ttl))
  return held and answer('READY', held, 0, room) or answer('CLOSED', 0, 0, room)
end
local front, sorted = frontOf(s[4])
local nextN = tonumber(s[5]) or 1
local n, rank, drawn, counted = placeOf(settingsKey, lineKey, user, recorded, placed, front, sorted, nextN)
nextN = counted
-- Not in line: a token holder's READY, or the claim of a number the front
-- has passed (claim.lua).
if not rank then
  local record = redis.call('GET', recordKey)
  if not record and n and front then
    record = claim(markKey, batchesKey, recordKey, liveKey, unclaimedKey, settingsKey, accountKey, user, field, n, token, roomNumbers(room).ttl)
  end
  if record then
    return answer('READY', record, 0, room)
  end
  return answer('NOT_IN_QUEUE', 0, 0, room)
end
if n and n ~= recorded and not anonymous then
  -- An account's record a failover lost (its credential carries the
  -- number), put back for its other devices.
  keepAccount(accountKey, field, string.format('%d', n), born, current, accountMs(rank + 1, roomNumbers(room)))
end
if roomHas(room, scheduledBit) then -- the clock only for a scheduled opening
  local _, nowMs = serverTime()
  if roomNumbers(room).opensAt > nowMs then
    return answer('PREQUEUE', 0, 0, room)
  end
end
local out = answer('WAITING', rank + 1, 0, room, stalled(room, rank + 1, budgetKey, liveKey, stallHorizonMs, stallAfterUs, nil, settingsKey), n)
if seat then
  table.insert(out, n or drawn)
  table.insert(out, (room.stored or sorted) and 0 or 1)
end
return out
