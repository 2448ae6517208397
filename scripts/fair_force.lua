-- fair_force: delete a fair lock whoever holds it, and hand it to the first
-- live waiter.
-- KEYS, ARGV[1..3] as in fair_lib.lua
-- Reply: 1 a hold was deleted; 0 the lock was free.
local queued = check_keys(redis.call('HGET', KEYS[1], 'k'), true)
check_fence(queued)
local held = redis.call('DEL', KEYS[1])
if held == 1 then
  hand_on_or_vacate(queued)
else
  hand_on(now_ms())
end
return held
