-- Shared head of every room script (prepended, after settings.lua, when
-- the scripts load): the room's settings are read inside the script call
-- the operation already makes, so a change costs no extra round trip and
-- takes effect at the very next call of every process. Each script reads
-- the room's hash with the one HMGET its call needs ('hot', with enter and
-- status 'page', and the limiter's buckets: settings.lua) and makes the
-- room of it with roomOf.
-- A room without stored settings is one of defaultHot (the store's
-- configured rate, capacity, entry-token life and instant admission) when
-- openRooms (OPEN_ROOMS), else no room: roomOf's locals, written by the Go
-- side at its marker line (scripts.go, withConsts: roomsHead's constants in
-- a store's own scripts, roomsArgHead's reading of ARGV[1] in admission's
-- and status'), inside roomOf and only where they are read, so that no call
-- makes them upvalues of roomOf (each one a measurable share of a call).

-- roomOf is the room of the hash's 'hot' and 'page' fields as read (false:
-- not stored; page nil: not read): {hot, page, bits, stored} (and hot's
-- numbers when asked: roomNumbers), or nil when there is no such room
-- (always: a room of defaultHot then, for admission and status, which
-- visit whatever rooms are registered). A hash without 'hot' is a room
-- without stored settings: the layout changes only between sales
-- (docs/design.md, "The data layout changes between sales"), so nothing
-- older is looked for.
-- Nothing is parsed: a poll needs only the flags, and hands 'hot' to the
-- Go side as it is; roomNumbers gives the rest where a poll computes with it.
local function roomOf(hot, page, always, numbers)
  local stored = true
  if not hot then
    --@rooms
    if not openRooms and not always then
      return nil
    end
    hot, stored = defaultHot, false
  end
  page = page or (page == false and '' or nil)
  if not numbers then
    return {hot = hot, page = page, bits = string.byte(hot, 1) - 64, stored = stored}
  end
  -- With its numbers, in one constructor: a table grown field by field
  -- is reallocated twice on the way to ten fields.
  -- The pattern is a constant of roomOf's own, not a local it reads.
  local rate, maxActive, opensAt, capacity, ttl = string.match(hot, '^.([^:]*):(%d+):(%d+):(%d+):(%d+):')
  return {hot = hot, page = page, bits = string.byte(hot, 1) - 64, stored = stored, rate = tonumber(rate), rateText = rate,
    maxActive = maxActive == '0' and 0 or tonumber(maxActive), opensAt = opensAt == '0' and 0 or tonumber(opensAt),
    capacity = tonumber(capacity), ttl = ttl}
end

-- roomHas: whether the room's flags hold mask (settings.lua's bits, each a
-- power of two), in arithmetic alone: no call of math.floor or of another
-- function (each a measurable share of a poll).
local function roomHas(room, mask)
  return room.bits % (mask + mask) >= mask
end

-- roomNumbers is room with hot's numbers (roomOf's numbers): room itself
-- when it was made with them, else a room made of its 'hot' with them, of
-- which only the numbers are to be read (a room without stored settings
-- has 'hot' too: defaultHot).
local function roomNumbers(room)
  if room.rate then
    return room
  end
  return roomOf(room.hot, nil, true, true)
end

-- serverTime is the store's clock: µs, ms, s, and s as TIME's text (each
-- text parsed once: a tonumber costs as much as a command's argument).
local function serverTime()
  local t = redis.call('TIME')
  local sec = tonumber(t[1])
  local us = sec * 1000000 + tonumber(t[2])
  return us, math.floor(us / 1000), sec, t[1]
end

-- The answer of enter and position: what happened, then the room as seen:
-- its hot field (the Go side reads the rate, the flags, the opening and
-- the message from it) and 2 when stalled (stalled's value), else 0;
-- then the page when the script read it (enter; else ''), then a waiting
-- place's number in the queue (line.lua; 0 when it has none: a pre-queue's
-- draw), which the caller's spot carries (waitroom.View).
local function answer(kind, a, b, room, isStalled, number)
  return {kind, a or 0, b or 0, room.hot, isStalled or 0, room.page or '', number or 0}
end
