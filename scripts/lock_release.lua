-- lock_release: drop one hold of a lock hash; at zero delete it and wake a
-- registered waiter.
-- KEYS[1] lock hash   KEYS[2] its fencing-token counter (unused: the keys
--         are lock_acquire's, which a handle boxes once for both)
-- KEYS[3] the Client's request markers (see lib.lua)
-- KEYS[4] the waiter registry (see lib.lua): a release to zero wakes one
-- ARGV[1..4] as in lib.lua
-- ARGV[5] owner   ARGV[6] request id
-- ARGV[7] "1": drop every hold of the owner at once (a hold the handle found
--         lost, which nobody renews any more); "0": one
-- ARGV[8] token of the hold the handle releases: its current one, or the
--         one it lost (a hold of another token is not the handle's: see
--         release_hold)
-- Reply: the owner's remaining hold count (0: released); -1 not held by owner;
--        {0, msg} released, and the waiter to wake is registered by the
--        request's own Client: msg is the message its client channel
--        would have carried ("1", or "@<req> "; see wake_one), which was
--        not published, for the Client to deliver to its waiters itself.
-- A retried request that was already applied replies as the first run did:
-- the Client's markers remember a release to zero for a while
-- (mark_released), so a retry still recognises it after other owners have
-- taken and released the lock. Such a retry replies {0, '1'}: it cannot
-- tell whether the first run's wake was its own Client's, whose lost reply
-- carried it, so its Client wakes one of its waiters (a spurious wake
-- costs a try, a lost one a poll).
local req = ARGV[6]
local h = redis.call('HMGET', KEYS[1], 'k', 'o', 'c', 'r', 't', 'q')
check_kind(KEYS[1], h[1], KIND)
local mine = is_named(h[2], h[5], ARGV[5], ARGV[8])
local reply = release_hold(KEYS[1], KEYS[3], req, ARGV[7], mine, h[3], h[4])
if reply == 0 then
  return {0, '1'}
elseif reply then
  return reply
end
local waiting = redis.call('ZCARD', KEYS[4])
mark_released(KEYS[3], req, MARK_TTL, h[6], h[5])
redis.call('DEL', KEYS[1])
local _, msg = wake_one(KEYS[4], waiting, PUBLISH, CHANNEL, req)
if msg then
  return {0, msg}
end
return 0
