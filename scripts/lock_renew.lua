-- lock_renew: the watchdog's renewal of a lock hash held by an owner.
-- KEYS[1] lock hash
-- ARGV[1..4] as in lib.lua
-- ARGV[5] owner   ARGV[6] lease (ms)   ARGV[7] the hold's token
-- Reply: 1 renewed; 0 not held by owner with that token (the hold is lost;
-- a later hold of the same owner has another token, and a renewal of the
-- earlier one that arrives late must not extend it). A hold that Extend
-- gave a fixed lease (x, see is_fixed) is held, and left as it is: this
-- renewal was sent before Extend and arrives after it.
local h = redis.call('HMGET', KEYS[1], 'o', 't', 'x')
if is_named(h[1], h[2], ARGV[5], ARGV[7]) then
  if not is_fixed(h[3]) then
    redis.call('PEXPIRE', KEYS[1], ARGV[6])
  end
  return 1
end
return 0
