-- Claiming one's turn, prepended (after line.lua) to the scripts a waiting
-- caller runs: enter and position. Admission moves the front past a
-- number without knowing who holds it (line.lua), and
-- records each batch: the sorted set 'batches', member "<first>:<at ms>"
-- scored by the batch's last number, and in the hash 'unclaimed' each
-- batch's numbers not yet claimed (by its first number), whose sum the
-- room's hash keeps as 'pending': admitted, not yet live, and counted
-- against maxActive (admit.lua). The holder's next call claims its entry
-- token, once: a claim window of the token's life from the batch.

-- claim issues the entry token of the place numbered n, which the front
-- has passed, to user. markKey … accountKey are the caller's script's keys
-- (the claim's mark, the batches, the token's record, the live tokens, the
-- unclaimed counts, the room's hash, the account's bucket), field the
-- account's field in its bucket ('': a visitor kept by number alone),
-- token the entry token to issue, ttl the room's token life (ms, as text).
-- The keys come as arguments: a function of the script's own would be a
-- closure over them, made at every call (docs/design.md, "What a poll
-- costs Redis"). Its clock is the store's. It writes the token's record
-- and live token, as an admission does, and the claim's mark (the number
-- claimed), which outlives the window: a number claimed once, or one
-- before it, is never claimed again, even after the order consumed the
-- token (its record gone); a later number (the caller entered again after
-- its order) is. An account's record (line.lua) goes: the mark and the
-- token say the rest, and an idle room keeps no record of a claimed turn.
-- Returns the record, or nil: no batch holds n (released: a closed room),
-- its window is over, or user claimed already.
local function claim(markKey, batchesKey, recordKey, liveKey, unclaimedKey, settingsKey, accountKey, user, field, n, token, ttl)
  local _, nowMs = serverTime()
  ttl = tonumber(ttl)
  local claimed = tonumber(redis.call('GET', markKey))
  if claimed and n <= claimed then
    return nil
  end
  local batch = redis.call('ZRANGEBYSCORE', batchesKey, string.format('%d', n), '+inf', 'LIMIT', 0, 1)[1]
  local first, at = string.match(batch or '', '^(%d+):(%d+)$')
  if not first or tonumber(first) > n or tonumber(at) + ttl <= nowMs then
    return nil
  end
  local expires = nowMs + ttl
  local expiresText = string.format('%d', expires)
  local record = expiresText .. ':' .. string.format('%d', nowMs) .. ':' .. token
  redis.call('SET', recordKey, record, 'PXAT', expiresText)
  redis.call('ZADD', liveKey, expiresText, user)
  redis.call('SET', markKey, string.format('%d', n), 'PXAT', expiresText)
  if redis.call('HINCRBY', unclaimedKey, first, -1) >= 0 then
    redis.call('HINCRBY', settingsKey, 'pending', -1)
  end
  if field ~= '' then
    redis.call('HDEL', accountKey, field)
    if redis.call('HLEN', accountKey) == 1 then -- its line's 'b' alone
      redis.call('DEL', accountKey)
    end
  end
  return record
end
