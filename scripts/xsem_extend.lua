-- xsem_extend: push back a held permit's deadline: Extend, which fixes the
-- permit's lease, and the watchdog's renewal, which leaves a fixed one be
-- (a renewal sent before Extend may land after it).
-- KEYS, ARGV[1..4] as in xsem_lib.lua
-- ARGV[5] permit id   ARGV[6] lease (ms) from now
-- ARGV[7] "fix" (Extend) or "renew" (the watchdog)
-- ARGV[8] a fix's request id, stored as the permit's fixed-lease mark
--         'f:'<id> (see is_fixed)
-- Reply: 1 extended, or a fixed lease left as it is (a renewal; or a fix
--        that was applied already, or is numbered below one that was: a
--        retry or a late copy, see request_seen); 0 not held (unknown, or
--        its lease has ended)
-- The permit id names the permit: a request of an earlier permit of the
-- same handle has another id, and finds nothing to change.
local id, lease = ARGV[5], tonumber(ARGV[6])
xsem_check_keys(redis.call('HGET', KEYS[1], 'k'))
local deadline = redis.call('ZSCORE', KEYS[2], id)
local now = now_ms()
if not deadline or tonumber(deadline) <= now then
  return 0
end
local mark = redis.call('HGET', KEYS[3], 'f:' .. id)
if ARGV[7] == 'fix' then
  if request_seen(mark, ARGV[8]) then
    return 1
  end
  redis.call('HSET', KEYS[3], 'f:' .. id, ARGV[8])
elseif is_fixed(mark) then
  return 1
end
redis.call('ZADD', KEYS[2], now + lease, id)
xsem_keep(lease)
return 1
