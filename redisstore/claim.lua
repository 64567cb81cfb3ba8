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
-- has passed, to user: keys k (the caller's script's), field the
-- account's field in its bucket k.account ('': an anonymous visitor's),
-- token the random part, ttl the room's token life (ms), nowMs the store's
-- clock. It writes the token's record and live token, as an admission
-- does, and the claim's mark (the number claimed), which outlives the
-- window: a number claimed once, or one before it, is never claimed again,
-- even after the order consumed the token (its record gone); a later
-- number (the caller entered again after its order) is. An account's
-- record (line.lua) goes: the mark and the token say the rest, and an idle
-- room keeps no record of a claimed turn.
-- Returns the record, or nil: no batch holds n (released: a closed room),
-- its window is over, or user claimed already.
local function claim(k, user, field, n, token, ttl, nowMs)
  local claimed = tonumber(redis.call('GET', k.mark))
  if claimed and n <= claimed then
    return nil
  end
  local batch = redis.call('ZRANGEBYSCORE', k.batches, string.format('%d', n), '+inf', 'LIMIT', 0, 1)[1]
  local first, at = string.match(batch or '', '^(%d+):(%d+)$')
  if not first or tonumber(first) > n or tonumber(at) + ttl <= nowMs then
    return nil
  end
  local expires = nowMs + ttl
  local expiresText = string.format('%d', expires)
  local record = expiresText .. ':' .. string.format('%d', nowMs) .. ':' .. token
  redis.call('SET', k.record, record, 'PXAT', expiresText)
  redis.call('ZADD', k.live, expiresText, user)
  redis.call('SET', k.mark, string.format('%d', n), 'PXAT', expiresText)
  if redis.call('HINCRBY', k.unclaimed, first, -1) >= 0 then
    redis.call('HINCRBY', k.settings, 'pending', -1)
  end
  if field ~= '' then
    redis.call('HDEL', k.account, field)
    if redis.call('HLEN', k.account) == 1 then -- its line's 'b' alone
      redis.call('DEL', k.account)
    end
  end
  return record
end
