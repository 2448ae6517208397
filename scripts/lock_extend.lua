-- lock_extend: give an owner's hold of a lock hash a fixed lease from now,
-- which renewals of the watchdog sent before it leave alone (see
-- lock_renew).
-- KEYS[1] lock hash
-- ARGV[1..4] as in lib.lua
-- ARGV[5] owner   ARGV[6] lease (ms)   ARGV[7] the hold's token
-- ARGV[8] holder metadata, describing the fixed lease (see lib.lua)
-- Reply: 1 set; 0 not held by the owner with that token.
local h = redis.call('HMGET', KEYS[1], 'o', 't')
if is_named(h[1], h[2], ARGV[5], ARGV[7]) then
  redis.call('HSET', KEYS[1], 'x', 1, 'm', ARGV[8])
  redis.call('PEXPIRE', KEYS[1], ARGV[6])
  return 1
end
return 0
