-- lock_force: delete a lock hash whoever holds it, provided it is a hold
-- the caller saw (see fence_moved), tell the holder's Client, and wake the
-- process of every registered waiter. A copy of the request replies as its
-- first run did and changes nothing (force_seen).
-- KEYS[1] lock hash   KEYS[2] the waiter registry (see lib.lua)   KEYS[3] fence
-- KEYS[4] the caller's Client's request markers
-- ARGV[1..4] as in lib.lua
-- ARGV[5] the prefix of the forced holder's Client's channel (tell_forced)
-- ARGV[6] the fence's last token as the caller read it (fence_moved)
-- ARGV[7] the request's id
-- Reply: 1 a hold was deleted; 0 the lock was free; 2 it is held by a hold
-- taken after the caller read the fence, which is left alone.
local h = redis.call('HMGET', KEYS[1], 'k', 'o', 't')
check_kind(KEYS[1], h[1], KIND)
local seen = force_seen(KEYS[4], ARGV[7])
if seen then
  return seen
end
if h[1] and fence_moved(KEYS[3], ARGV[6]) then
  return 2
end
local waiting = redis.call('ZCARD', KEYS[2])
if redis.call('DEL', KEYS[1]) == 1 then
  wake_all(KEYS[2], waiting, PUBLISH, CHANNEL)
  if h[2] then
    tell_forced(PUBLISH, ARGV[5], 'l', h[2], h[3] or '0')
  end
  return force_done(KEYS[4], ARGV[7], 1, MARK_TTL)
end
return force_done(KEYS[4], ARGV[7], 0, MARK_TTL)
