-- fair_release: drop one hold of a fair lock; at zero hand it to the first
-- live waiter inside this script, or delete it if none waits.
-- KEYS, ARGV[1..5] as in fair_lib.lua
-- ARGV[6] request id
-- ARGV[7] "1": drop every hold of the owner at once (see lock_release)
-- ARGV[8] token of the hold the handle releases: its current one, or the
--         one it lost
-- Reply: the owner's remaining hold count (0: released); -1 not held by owner.
-- A hold of the owner with another token is not the handle's to release: a
-- release granted it to a request of the owner that waits (an acquire of
-- the same handle) after the named hold ended; it is left to that request.
-- A retried request that was already applied replies as the first run did,
-- by the Client's request markers, as lock_release does (release_hold).
local req = ARGV[6]
local h = redis.call('HMGET', KEYS[1], 'k', 'o', 'c', 'r', 't', 'q')
local queued = fair_check_keys(h[1])
local mine = is_named(h[2], h[5], ARGV[5], ARGV[8])
local reply = release_hold(KEYS[1], KEYS[6], req, ARGV[7], mine, h[3], h[4])
if reply then
  return reply
end
fair_check_fence(queued)
mark_released(KEYS[6], req, MARK_TTL, h[6], h[5])
fair_hand_on_or_vacate(queued)
return 0
