-- sem_release: return n permits, grant them to the queue's live heads that
-- fit, and wake the registered waiters whose requests fit in what is left,
-- up to n permits' worth (see sem_wake in sem_lib.lua).
-- KEYS, ARGV[1..4] as in sem_lib.lua
-- ARGV[5] request id   ARGV[6] n (>= 1)
-- ARGV[7] the releasing Client's id when it hands the permits on to its
--         own blocked acquires of the name ("": it has none): it is not
--         woken, and counts for its fewest (see sem_wake)
-- Reply: {1, available, own}  released (now, or by an earlier copy of this
--                        request, then without own); own: the permits
--                        the releasing Client (ARGV[7]) hands on to its
--                        own waiters, as "n:<own>" would (0: none)
--        {-1, available, total}  more than is held: available + n > total;
--                        nothing changed
--        {-2}            the permits were never set
local req, n = ARGV[5], tonumber(ARGV[6])
local h = redis.call('HMGET', KEYS[1], 'k', 'a', 't')
local queue_length, registered = sem_check_keys(h[1])
local now = now_ms()
done_purge(KEYS[5], now)
if done_has(KEYS[5], 'r', req) then
  return {1, tonumber(h[2])}
end
if not h[1] then
  return {-2}
end
local avail, total = tonumber(h[2]), tonumber(h[3])
if avail + n > total then
  return {-1, avail, total}
end
done_mark(KEYS[5], 'r', req, now, MARK_TTL)
local left, own = sem_settle(now, avail + n, n, queue_length, registered, ARGV[7])
return {1, left, own}
