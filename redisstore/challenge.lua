-- Single use of a solved proof-of-work challenge (CHALLENGE=pow), prepended
-- to the scripts of enter and of the broker's accept: the enter that makes
-- a visitor with a solution records the challenge's nonce inside the script
-- call it already makes (no extra round trip), for the challenge's remaining
-- life, so that every instance sees it and one solution makes one visitor.
--
-- challengeSpent(record, keepMs): record the nonce's record (its key), keepMs
-- how long to keep it, in ms ('0': this call spends no challenge, and
-- record is then no key of it). Returns true when the nonce was spent
-- already (a replay: the caller makes nothing), false when this call spent
-- it or has none to spend.
local function challengeSpent(record, keepMs)
  if keepMs == '0' then
    return false
  end
  return not redis.call('SET', record, '1', 'NX', 'PX', keepMs)
end
