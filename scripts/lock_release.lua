-- lock_release: drop one hold of a lock hash; at zero delete it and wake a
-- registered waiter.
-- KEYS[1] lock hash   KEYS[2] the Client's request markers (see lib.lua)
-- KEYS[3] the waiter registry (see lib.lua): a release to zero wakes one
-- ARGV[1] owner   ARGV[2] kind   ARGV[3] publish command   ARGV[4] channel
-- ARGV[5] marker lifetime (ms)   ARGV[6] request id
-- ARGV[7] "1": drop every hold of the owner at once (a hold the handle found
--         lost, which nobody renews any more); "0": one
-- Reply: the owner's remaining hold count (0: released); -1 not held by owner.
-- A retried request that was already applied replies as the first run did:
-- the Client's markers remember a release to zero for a while
-- (mark_released), so a retry still recognises it after other owners have
-- taken and released the lock.
local h = redis.call('HMGET', KEYS[1], 'k', 'o', 'c', 'r')
check_kind(KEYS[1], h[1], ARGV[2])
if h[2] ~= ARGV[1] then
  if was_released(KEYS[2], ARGV[6]) then
    return 0
  end
  return -1
end
if h[4] == ARGV[6] then
  return tonumber(h[3])
end
local c = tonumber(h[3]) - 1
if c > 0 and ARGV[7] ~= '1' then
  redis.call('HSET', KEYS[1], 'c', c, 'r', ARGV[6])
  return c
end
local waiting = redis.call('ZCARD', KEYS[3])
mark_released(KEYS[2], ARGV[6], ARGV[5])
redis.call('DEL', KEYS[1])
wake_one(KEYS[3], waiting, ARGV[3], ARGV[4])
return 0
