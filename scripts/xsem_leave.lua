-- xsem_leave: undo what the acquire request ARGV[5] did, when its caller
-- gave up: give back the permit if it was taken. A late copy of the
-- request is refused from now on.
-- KEYS, ARGV[1..4] as in xsem_lib.lua
-- ARGV[5] permit id
-- ARGV[6] "1": the request waited through the waiter registry, where its
--         Client is registered (see client_of) by a try of it or of
--         another local waiter (a try's reply may have been lost); if the
--         Client leaves the registry (ARGV[8]) and is not registered, a
--         release woke it since, and the wake goes on to the next
--         registered Client
-- ARGV[7] heartbeat (ms), as the acquire's tries sent it
-- ARGV[8] "0": this was the Client's last blocked acquire of the name,
--         and the Client leaves the registry; otherwise ("1": others
--         remain; "-": it did not wait through the registry) the registry
--         is left be
-- Reply: 1 the permit was given back; 0 there was none
local id = ARGV[5]
local h = redis.call('HMGET', KEYS[1], 'k', 't')
local registered = xsem_check_keys(h[1])
local now = now_ms()
done_purge(KEYS[5], now)
done_mark(KEYS[5], 'x', id, now, MARK_TTL)
local held = xsem_reclaim(now)
local last = ARGV[8] == '0'
local unregistered = last and registered > 0 and redis.call('ZREM', KEYS[6], client_of(id)) == 1
local woken = ARGV[6] == '1' and last and not unregistered
if redis.call('ZREM', KEYS[2], id) == 0 then
  if woken then
    xsem_wake((tonumber(h[2]) or 0) - held, 1, registered)
  end
  return 0
end
redis.call('HDEL', KEYS[3], id, 'f:' .. id)
xsem_wake((tonumber(h[2]) or 0) - held + 1, 1, registered)
return 1
