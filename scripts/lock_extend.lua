-- lock_extend: give an owner's hold of a lock hash a fixed lease from now,
-- which renewals of the watchdog sent before it leave alone (see
-- lock_renew).
-- KEYS[1] lock hash
-- ARGV[1..4] as in lib.lua
-- ARGV[5] owner   ARGV[6] lease (ms)   ARGV[7] the hold's token
-- ARGV[8] holder metadata, describing the fixed lease (see lib.lua)
-- ARGV[9] request id, stored as the hold's fixed-lease mark x
-- Reply: 1 set, or this request or a later Extend of the hold was applied
--        already (a retry, or a late copy: nothing changes; see
--        request_seen); 0 not held by the owner with that token.
local h = redis.call('HMGET', KEYS[1], 'o', 't', 'x')
if not is_named(h[1], h[2], ARGV[5], ARGV[7]) then
  return 0
end
if not request_seen(h[3], ARGV[9]) then
  redis.call('HSET', KEYS[1], 'x', ARGV[9], 'm', ARGV[8])
  redis.call('PEXPIRE', KEYS[1], ARGV[6])
end
return 1
