-- lock_beat: the watchdog's renewal of a blocked acquire's registration.
-- KEYS[1] the waiter registry (see lib.lua)
-- ARGV[1..4] as in lib.lua (of the primitive whose registry it is)
-- ARGV[5] the registration: a request id (a semaphore's: "<request id> <n>";
--         rlock's: a client id)
-- ARGV[6] how long the registration lives (ms)
-- Reply: 1 renewed; 0 gone (a release woke it, it lapsed, left, or took
--        the lock): its next try registers it again.
local deadline = redis.call('ZSCORE', KEYS[1], ARGV[5])
if not deadline or tonumber(deadline) <= now_ms() then
  return 0
end
register(KEYS[1], ARGV[5], tonumber(ARGV[6]))
return 1
