-- lock_force: delete a lock hash whoever holds it, provided it is a hold
-- the caller saw (see fence_moved), tell the holder's Client, and wake the
-- process of every registered waiter.
-- KEYS[1] lock hash   KEYS[2] the waiter registry (see lib.lua)   KEYS[3] fence
-- ARGV[1..4] as in lib.lua
-- ARGV[5] the prefix of the forced holder's Client's channel (tell_forced)
-- ARGV[6] the fence's last token as the caller read it (fence_moved)
-- Reply: 1 a hold was deleted; 0 the lock was free; 2 it is held by a hold
-- taken after the caller read the fence, which is left alone.
local h = redis.call('HMGET', KEYS[1], 'k', 'o', 't')
check_kind(KEYS[1], h[1], KIND)
if h[1] and fence_moved(KEYS[3], ARGV[6]) then
  return 2
end
local waiting = redis.call('ZCARD', KEYS[2])
if redis.call('DEL', KEYS[1]) == 1 then
  wake_all(KEYS[2], waiting, PUBLISH, CHANNEL)
  if h[2] then
    tell_forced(PUBLISH, ARGV[5], 'l', h[2], h[3] or '0')
  end
  return 1
end
return 0
