-- The first step of the room scripts that take the limiter (enter,
-- position, accept), prepended after room.lua and ratelimit.lua: each reads
-- the room's hash in one HMGET ('hot' first, its own fields, and the
-- caller's buckets: ratelimit.lua) and hands visit the room made of it.
-- A room nobody made is refused before anything is written; then the
-- limiter takes the caller's tokens, right after the one read, so that a
-- refused call does nothing else.
-- visit(hash, room, s, h, a, n): hash the room's hash (its key), room
-- roomOf's (nil: no such room); s the HMGET's values; h, a and n
-- rateLimit's. Returns the room, nil and the
-- limiter's time (rateLimit's), or nil and the answer that refuses the
-- call: {'NOROOM'} | {'LIMITED', ms until allowed}.
local function visit(hash, room, s, h, a, n)
  if not room then
    return nil, {'NOROOM'}
  end
  local limitWait, limitNow = rateLimit(hash, s, h, a, n)
  if limitWait > 0 then
    return nil, {'LIMITED', limitWait}
  end
  return room, nil, limitNow
end
