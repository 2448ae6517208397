-- lock_force: delete a lock hash whoever holds it, tell the holder's
-- Client, and wake the process of every registered waiter.
-- KEYS[1] lock hash   KEYS[2] the waiter registry (see lib.lua)
-- ARGV[1..4] as in lib.lua
-- ARGV[5] the prefix of the forced holder's Client's channel (tell_forced)
-- Reply: 1 a hold was deleted; 0 the lock was free.
local h = redis.call('HMGET', KEYS[1], 'k', 'o', 't')
check_kind(KEYS[1], h[1], KIND)
local waiting = redis.call('ZCARD', KEYS[2])
if redis.call('DEL', KEYS[1]) == 1 then
  wake_all(KEYS[2], waiting, PUBLISH, CHANNEL)
  if h[2] then
    tell_forced(PUBLISH, ARGV[5], 'l', h[2], h[3] or '0')
  end
  return 1
end
return 0
