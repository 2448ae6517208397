-- fair_force: delete a fair lock whoever holds it, provided it is a hold
-- the caller saw (see fence_moved), tell the holder's Client, and hand it
-- to the first live waiter. A copy of the request replies as its first run
-- did and changes nothing (force_seen).
-- KEYS, ARGV[1..5] as in fair_lib.lua
-- ARGV[6] the prefix of the forced holder's Client's channel (tell_forced)
-- ARGV[7] the fence's last token as the caller read it (fence_moved)
-- ARGV[8] the request's id
-- Reply: 1 a hold was deleted; 0 the lock was free; 2 it is held by a hold
-- taken after the caller read the fence, which is left alone.
local h = redis.call('HMGET', KEYS[1], 'k', 'o', 't')
local queued = fair_check_keys(h[1], true)
fair_check_fence(queued)
local seen = force_seen(KEYS[6], ARGV[8])
if seen then
  return seen
end
if h[1] then -- held: the checks found the hash of this kind (its 'k')
  if fence_moved(KEYS[2], ARGV[7]) then
    return 2
  end
  if h[2] then
    tell_forced(PUBLISH, ARGV[6], 'l', h[2], h[3] or '0')
  end
  fair_hand_on_or_vacate(queued)
  return force_done(KEYS[6], ARGV[8], 1, MARK_TTL)
end
fair_hand_on(now_ms())
return force_done(KEYS[6], ARGV[8], 0, MARK_TTL)
