-- The order gate's measurements of the order API, per room: a hash of
-- counters, one per outcome and log-scale latency bucket ("o123": 2xx in
-- bucket 123; waitroom.DownstreamCall.Field), so a room's measurements take
-- a fixed set of fields whatever its traffic. 'at' is when the current
-- control window began; admission hands the window over (admit.lua).
-- recordCall counts one call in the hash counters (its key): its counter
-- field ('' or nil for none), and expiryMs the hash's expiry, renewed by
-- every call: a room without orders lets it go.
local function recordCall(counters, field, expiryMs)
  if not field or field == '' then
    return
  end
  redis.call('HINCRBY', counters, field, 1)
  redis.call('PEXPIRE', counters, expiryMs)
end

-- firstFailure: the call's counter field is no failure (an overload
-- answer 'e…' or a timeout 't…'), or the token holder's first while its
-- token lives: mark, the holder's mark (its key), is set for ttlMs (its order
-- lock's life, which is at least the token's: order_begin.lua). A holder
-- whose every order fails (a body its API answers 5xx) then weighs as one
-- failed call, not as a window's share of errors that pauses admission for
-- everyone (issue 32).
local function firstFailure(mark, field, ttlMs)
  local kind = string.sub(field or '', 1, 1)
  if kind ~= 'e' and kind ~= 't' then
    return true
  end
  return redis.call('SET', mark, '1', 'NX', 'PX', string.format('%d', math.max(ttlMs, 1))) ~= false
end
