-- xsem_extend: push back a held permit's deadline: Extend, which fixes the
-- permit's lease, and the watchdog's renewal, which leaves a fixed one be
-- (a renewal sent before Extend may land after it).
-- KEYS, ARGV[1..4] as in xsem_lib.lua
-- ARGV[5] permit id   ARGV[6] lease (ms) from now
-- ARGV[7] "fix" (Extend) or "renew" (the watchdog)
-- Reply: 1 extended, or a fixed lease left as it is; 0 not held (unknown,
--        or its lease has ended)
local id, lease = ARGV[5], tonumber(ARGV[6])
xsem_check_keys(redis.call('HGET', KEYS[1], 'k'))
local deadline = redis.call('ZSCORE', KEYS[2], id)
local now = now_ms()
if not deadline or tonumber(deadline) <= now then
  return 0
end
if ARGV[7] == 'fix' then
  redis.call('HSET', KEYS[3], 'f:' .. id, 1)
elseif redis.call('HEXISTS', KEYS[3], 'f:' .. id) == 1 then
  return 1
end
redis.call('ZADD', KEYS[2], now + lease, id)
xsem_keep(lease)
return 1
