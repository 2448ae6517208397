-- xsem_release: return the permit ARGV[5] and wake a registered Client for it.
-- KEYS, ARGV[1..4] as in xsem_lib.lua
-- ARGV[5] permit id   ARGV[6] request id of this release
-- ARGV[7] the releasing Client's id when it hands the permit on to its own
--         blocked acquires of the name ("": it has none): it is not woken,
--         and counts for one (see xsem_wake)
-- Reply: {1, free, own}  released (now, or by an earlier copy of this
--                   request, then without own); own: the permits the
--                   releasing Client (ARGV[7]) hands on to its own
--                   waiters, as "n:<own>" would (0: none)
--        {0}        not held: unknown, expired, or released by another request
local id, req = ARGV[5], ARGV[6]
local h = redis.call('HMGET', KEYS[1], 'k', 't')
local registered = xsem_check_keys(h[1])
local now = now_ms()
done_purge(KEYS[5], now)
local held = xsem_reclaim(now)
if done_has(KEYS[5], 'r', req) then
  return {1, (tonumber(h[2]) or 0) - held}
end
if redis.call('ZREM', KEYS[2], id) == 0 then
  return {0}
end
redis.call('HDEL', KEYS[3], id, 'f:' .. id)
done_mark(KEYS[5], 'r', req, now, MARK_TTL)
local free = (tonumber(h[2]) or 0) - held + 1
return {1, free, xsem_wake(free, 1, registered, ARGV[7])}
