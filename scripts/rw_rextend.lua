-- rw_rextend: give an owner's read hold a fixed lease from now, which
-- renewals of the watchdog sent before it leave alone (see rw_renew).
-- KEYS, ARGV[1..6] as in rw_lib.lua
-- ARGV[7] lease (ms)   ARGV[8] the read hold's name (see rw_lib.lua)
-- ARGV[9] request id, stored as the hold's fixed-lease mark
-- Reply: 1 set, or this request or a later RExtend of the hold was applied
--        already (a retry, or a late copy: nothing changes; see
--        request_seen); 0 the owner holds no read hold of that name (its
--        lease ran out, it was forced or released, or the owner's read
--        hold is another one, taken since).
-- The readers' hash marks the hold 'x:'<owner>; the mark goes with the
-- hold (rw_drop_reader) and with a fresh hold of the owner (rw_read).
rw_check_keys()
local owner = ARGV[5]
local now = now_ms()
local deadline = redis.call('ZSCORE', KEYS[4], owner)
if not deadline or tonumber(deadline) <= now then
  return 0
end
local _, named = rw_read_held(owner, ARGV[8])
if not named then
  return 0
end
if request_seen(redis.call('HGET', KEYS[3], 'x:' .. owner), ARGV[9]) then
  return 1
end
redis.call('ZADD', KEYS[4], now + tonumber(ARGV[7]), owner)
redis.call('HSET', KEYS[3], 'x:' .. owner, ARGV[9])
rw_keep(now)
return 1
