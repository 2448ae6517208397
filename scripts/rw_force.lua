-- rw_force: end the write hold and every read hold, whoever holds them, and
-- wake the waiters. Waiting writers keep waiting.
-- KEYS, ARGV[1..4] as in rw_lib.lua
-- Reply: 1 something was held; 0 the lock was free.
check_keys()
local held = redis.call('DEL', KEYS[1], KEYS[3], KEYS[4])
if held == 0 then
  return 0
end
write_released()
return 1
