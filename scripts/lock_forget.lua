-- lock_forget: delete a name's fence when nothing holds the name or waits
-- for it, and the fence's last token is not ahead of the server's clock.
-- KEYS[1..ARGV[5]] keys whose existence means the name is in use: its hold,
--                  its queue, its waiter registry
-- KEYS[ARGV[5]+1]  the fence hash (see next_token)
-- ARGV[1..4] as in lib.lua   ARGV[5] the number of keys in use
-- Reply: 1 the name was not in use, and the fence is deleted (if it
--        existed); 0 nothing is deleted: the name is in use, or the
--        fence's last token is above the clock in microseconds.
--
-- Tokens after the fence is gone start again from the clock (next_token);
-- a fence ahead of the clock (a failover from a server whose clock ran
-- ahead) is kept, for deleting it would hand out tokens below its last.
local n = tonumber(ARGV[5])
for i = 1, n do
  if redis.call('EXISTS', KEYS[i]) == 1 then
    return 0
  end
end
local fence = KEYS[n + 1]
local last = tonumber(redis.call('HGET', fence, 'n') or '0') or 0
local t = server_time()
if last > tonumber(t[1]) * 1000000 + tonumber(t[2]) then
  return 0
end
redis.call('DEL', fence)
return 1
