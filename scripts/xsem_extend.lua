-- xsem_extend: push back a held permit's deadline; the watchdog's renewal
-- and Extend.
-- KEYS, ARGV[1..4] as in xsem_lib.lua
-- ARGV[5] permit id   ARGV[6] lease (ms) from now
-- Reply: 1 extended; 0 not held (unknown, or its lease has ended)
local id, lease = ARGV[5], tonumber(ARGV[6])
check_keys(redis.call('HGET', KEYS[1], 'k'))
local deadline = redis.call('ZSCORE', KEYS[2], id)
local now = now_ms()
if not deadline or tonumber(deadline) <= now then
  return 0
end
redis.call('ZADD', KEYS[2], now + lease, id)
keep(lease)
return 1
