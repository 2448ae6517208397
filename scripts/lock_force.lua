-- lock_force: delete a lock hash whoever holds it, and wake the process of
-- every registered waiter.
-- KEYS[1] lock hash   KEYS[2] the waiter registry (see lib.lua)
-- ARGV[1] kind   ARGV[2] publish command   ARGV[3] channel
-- Reply: 1 a hold was deleted; 0 the lock was free.
check_kind(KEYS[1], redis.call('HGET', KEYS[1], 'k'), ARGV[1])
local waiting = redis.call('ZCARD', KEYS[2])
if redis.call('DEL', KEYS[1]) == 1 then
  wake_all(KEYS[2], waiting, ARGV[2], ARGV[3])
  return 1
end
return 0
