-- latch_delete: delete the latch: its count becomes -1, a tombstone that
-- expires as request markers do (see latch_lib.lua). Its request markers
-- stay until they expire, so that a call retried across the Delete is
-- still recognised. Waiters are woken ('*') to find it gone.
-- KEYS, ARGV[1..5] as in latch_lib.lua
-- Reply: 1 the latch existed; 0 it did not (or was deleted already)
local h = redis.call('HMGET', KEYS[1], 'k', 'c')
latch_check_keys(h[1])
if not h[1] or tonumber(h[2]) < 0 then
  return 0
end
redis.call('HSET', KEYS[1], 'c', -1)
redis.call('PEXPIRE', KEYS[1], MARK_TTL)
if tonumber(h[2]) > 0 then
  notify(PUBLISH, CHANNEL, '*')
end
return 1
