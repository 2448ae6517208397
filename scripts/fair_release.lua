-- fair_release: drop one hold of a fair lock; at zero hand it to the first
-- live waiter inside this script, or delete it if none waits.
-- KEYS, ARGV[1..3] as in fair_lib.lua
-- ARGV[4] owner   ARGV[5] release marker lifetime (ms)   ARGV[6] request id
-- ARGV[7] "1": drop every hold of the owner at once (see lock_release)
-- ARGV[8] token of the hold the handle releases: its current one, or the
--         one it lost
-- Reply: the owner's remaining hold count (0: released); -1 not held by owner.
-- A hold of the owner with another token is not the handle's to release: a
-- release granted it to a request of the owner that waits (an acquire of
-- the same handle) after the named hold ended; it is left to that request.
-- A retried request that was already applied replies as the first run did,
-- by the Client's request markers, as lock_release does.
local owner, req = ARGV[4], ARGV[6]
local h = redis.call('HMGET', KEYS[1], 'k', 'o', 'c', 'r', 't')
local queued = check_keys(h[1])
if h[2] ~= owner or h[5] ~= ARGV[8] then
  if was_released(KEYS[6], req) then
    return 0
  end
  return -1
end
if h[4] == req then
  return tonumber(h[3])
end
local c = tonumber(h[3]) - 1
if c > 0 and ARGV[7] ~= '1' then
  redis.call('HSET', KEYS[1], 'c', c, 'r', req)
  return c
end
check_fence(queued)
mark_released(KEYS[6], req, ARGV[5])
redis.call('DEL', KEYS[1])
hand_on_or_vacate(queued)
return 0
