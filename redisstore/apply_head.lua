-- Apply an entry the broker accepted: enter.lua, run only when no entry of
-- this user accepted at the same time or later has been applied, and the
-- record of it, in one script so that a redelivery never enters twice.
-- KEYS and ARGV are enter.lua's, followed by:
-- KEYS[#KEYS] the user's applied record: "<accepted µs>", or "<accepted µs>:FULL" when
--   the line was full (position tells the visitor); none for a room that does not exist
-- ARGV[#ARGV-1] accepted, Unix µs   ARGV[#ARGV] how long to keep the record, ms
-- Returns {'APPLIED'} for a redelivery, else enter.lua's reply.
local applied = KEYS[#KEYS]
local accepted = tonumber(ARGV[#ARGV - 1])
local keep = ARGV[#ARGV]
local last = redis.call('GET', applied)
if last and tonumber(string.match(last, '^%d+')) >= accepted then
  return {'APPLIED'}
end
local function enter()
