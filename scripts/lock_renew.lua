-- lock_renew: the watchdog's renewal of a lock hash held by an owner.
-- KEYS[1] lock hash
-- ARGV[1] owner   ARGV[2] lease (ms)
-- Reply: 1 renewed; 0 not held by owner (the hold is lost).
if redis.call('HGET', KEYS[1], 'o') == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
