-- rw_unlock: drop one write hold; at zero delete it and wake the waiters.
-- KEYS, ARGV[1..6] as in rw_lib.lua
-- ARGV[7] request id
-- ARGV[8] "1": drop every hold of the owner at once (see lock_release)
-- ARGV[9] token of the hold the handle releases (see lock_release)
-- Reply: the owner's remaining write holds (0: released); -1 not held;
--        {0, msg} released, and the writer to wake is the request's own
--        Client's: msg as in lock_release, which a retry answers likewise.
local req = ARGV[7]
local h = redis.call('HMGET', KEYS[1], 'k', 'o', 'c', 'r', 't', 'q')
local readers, writers, registered = rw_check_write_keys(h[1])
local mine = is_named(h[2], h[5], ARGV[5], ARGV[9])
local reply = release_hold(KEYS[1], KEYS[6], req, ARGV[8], mine, h[3], h[4])
if reply == 0 then
  return {0, '1'}
elseif reply then
  return reply
end
mark_released(KEYS[6], req, MARK_TTL, h[6], h[5])
redis.call('DEL', KEYS[1])
if readers + writers > 0 then
  registered = rw_purge(now_ms(), registered)
  writers = nil
end
local msg = rw_write_released(writers, registered, req)
if msg then
  return {0, msg}
end
return 0
