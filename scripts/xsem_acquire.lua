-- xsem_acquire: one attempt to take a permit with the id ARGV[5].
-- KEYS, ARGV[1..4] as in xsem_lib.lua
-- ARGV[5] permit id (a fresh request id)   ARGV[6] lease (ms)
-- ARGV[7] "r": a blocking acquire whose Client is woken by pub/sub:
--         register the Client (see client_of) in the waiter registry for
--         ARGV[8] ms if not acquired, or if acquired while other local
--         waiters of the Client remain (ARGV[9]), and unregister it if
--         acquired for its last one; "u": unregister the Client, acquired
--         or not (such an acquire whose wait polls: it could not hear a
--         wake); "0": neither (a TryAcquire, or a Client that polls)
-- ARGV[8] heartbeat (ms): how long a registration lives without renewal
-- ARGV[9] with "r": "0" when the Client has no other blocked acquire of
--         the name; otherwise it has (each asks for one permit)
-- Reply: {1, token, free}  acquired (now, or by an earlier copy of this
--                          request); free: permits left
--        {0, wait, free}   every permit is held (free <= 0): the soonest
--                          expiry that would free one is wait ms away
--        {-1, total}       the total is 0: nothing could ever be acquired
--        {-2}              the permits were never set
--        {-3}              a late copy: the request was given up, or its
--                          permit was taken and has since gone
-- Writes happen only after every check, so an error leaves the keys
-- unchanged.
local id, lease = ARGV[5], tonumber(ARGV[6])
local h = redis.call('HMGET', KEYS[1], 'k', 't')
local registered = xsem_check_keys(h[1])
local now = now_ms()
done_purge(KEYS[5], now)
local held = xsem_reclaim(now)
local token = redis.call('HGET', KEYS[3], id)
if token then
  return {1, tonumber(token), tonumber(h[2]) - held}
end
if done_has(KEYS[5], 'x', id) or done_has(KEYS[5], 'a', id) then
  return {-3} -- given up, or taken and since released or expired
end
if not h[1] then
  return {-2}
end
local total = tonumber(h[2])
if total < 1 then
  return {-1, total}
end
local mode, member = ARGV[7], client_of(id)
if held >= total then
  if mode == 'r' then
    register(KEYS[6], member, tonumber(ARGV[8]))
  elseif mode == 'u' then
    unregister(KEYS[6], member, registered)
  end
  -- the (held - total + 1)-th soonest expiry frees the first permit
  local r = redis.call('ZRANGE', KEYS[2], held - total, held - total, 'WITHSCORES')
  return {0, math.max(1, tonumber(r[2]) - now), total - held}
end
token = next_token(KEYS[4])
redis.call('ZADD', KEYS[2], now + lease, id)
redis.call('HSET', KEYS[3], id, token)
done_mark(KEYS[5], 'a', id, now, MARK_TTL)
xsem_keep(lease)
if mode == 'r' and ARGV[9] ~= '0' then
  register(KEYS[6], member, tonumber(ARGV[8]))
elseif mode == 'r' or mode == 'u' then
  unregister(KEYS[6], member, registered)
end
return {1, tonumber(token), total - held - 1}
