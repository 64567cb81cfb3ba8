end
local reply = enter()
local record = ARGV[#ARGV - 1]
if reply[1] == 'FULL' then
  record = record .. ':full'
end
redis.call('SET', applied, record, 'PX', keep)
return reply
