-- lock_force: delete a lock hash whoever holds it, and notify.
-- KEYS[1] lock hash
-- ARGV[1] kind   ARGV[2] publish command   ARGV[3] channel
-- Reply: 1 a hold was deleted; 0 the lock was free.
check_kind(KEYS[1], redis.call('HGET', KEYS[1], 'k'), ARGV[1])
if redis.call('DEL', KEYS[1]) == 1 then
  notify(ARGV[2], ARGV[3], '1') -- a hint (see notify)
  return 1
end
return 0
