end
local reply = enter()
if reply[1] == 'NOROOM' then
  -- A room nobody made gets no key at all; position refuses it by itself.
  return reply
end
local record = ARGV[#ARGV - 1]
if reply[1] == 'FULL' then
  record = record .. ':FULL'
end
redis.call('SET', applied, record, 'PX', keep)
return reply
