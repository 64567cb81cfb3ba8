end
local reply = enter()
local record = ARGV[#ARGV - 1]
if reply[1] == 'FULL' or reply[1] == 'NOROOM' then
  record = record .. ':' .. reply[1]
end
redis.call('SET', applied, record, 'PX', keep)
return reply
