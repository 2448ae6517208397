-- sem_state: read the semaphore; writes nothing.
-- KEYS, ARGV[1..4] as in sem_lib.lua
-- Reply: {set, available, total, waiting}: set is 1 once the permits were
--        set (0: available and total are 0); waiting counts the queue's
--        live waiters
local h = redis.call('HMGET', KEYS[1], 'k', 'a', 't')
sem_check_keys(h[1])
local waiting = redis.call('ZCOUNT', KEYS[3], '(' .. now_ms(), '+inf')
if not h[1] then
  return {0, 0, 0, waiting}
end
return {1, tonumber(h[2]), tonumber(h[3]), waiting}
