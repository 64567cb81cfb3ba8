-- Rooms whose settings were stored before 'hot' existed (settings.lua):
-- admission and status pack them in their own call; the scripts of the hot
-- paths answer {'UPGRADE'} instead (room.lua's roomOf), and the store runs
-- this file alone (Store.upgrade) before calling again.
-- KEYS[1] the room's hash  ARGV[1] the store's rooms (admit.lua's ARGV[1])

-- upgradeSettings packs the settings of a room stored before 'hot'
-- existed (one field each) into 'hot' and 'page', once: the first call of
-- the room after the upgrade. Returns them, or nil when nothing is stored.
local function upgradeSettings()
  local s = redis.call('HMGET', KEYS[1], 'rate', 'erate', 'maxActive', 'paused', 'opensAt', 'closed', 'message', 'capacity', 'ttl',
    'instant', 'title', 'brandColor', 'logoUrl', 'language')
  if not s[1] then
    return nil
  end
  local instant = s[10] == '1'
  if not s[10] then -- stored before instantAdmit existed: the default's
    instant = hasBit(string.byte(defaultHot, 1) - 64, instantBit)
  end
  local hot = packHot(s[4] == '1', s[6] == '1', s[2] ~= false, instant, s[2] or s[1], s[3] or '0', s[5] or '0', s[8], s[9], s[7] or '')
  local page = packPage(s[11] or '', s[12] or '', s[13] or '', s[14] or '')
  redis.call('HSET', KEYS[1], 'hot', hot, 'page', page)
  redis.call('HDEL', KEYS[1], 'erate', 'maxActive', 'paused', 'opensAt', 'closed', 'message', 'capacity', 'ttl', 'instant',
    'title', 'brandColor', 'logoUrl', 'language')
  return hot, page
end
