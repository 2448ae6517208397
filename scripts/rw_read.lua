-- rw_read: take a read hold for an owner, or re-enter it.
-- KEYS, ARGV[1..4] as in rw_lib.lua
-- ARGV[5] owner   ARGV[6] request id   ARGV[7] lease (ms)
-- Reply: {1, token, count}  held: a fresh hold, a re-entry, or a retry of an
--                           applied request; token is the last write's
--        {0, wait}          a writer holds the lock for wait more ms, or a
--                           writer waits (writer preference) and its
--                           heartbeat runs wait more ms
-- A handle that holds a read hold re-enters even while writers wait, and so
-- does the writer itself (a downgrade), so neither can deadlock itself.
check_keys()
local owner, req = ARGV[5], ARGV[6]
local now = now_ms()
purge(now)
local c = redis.call('HGET', KEYS[3], owner)
if c then
  if redis.call('HGET', KEYS[3], 'r:' .. owner) ~= req then
    c = redis.call('HINCRBY', KEYS[3], owner, 1)
    redis.call('HSET', KEYS[3], 'r:' .. owner, req)
  end
  return {1, token(), tonumber(c)}
end
local writer = redis.call('HGET', KEYS[1], 'o')
if writer and writer ~= owner then
  return {0, remaining(KEYS[1])}
end
if not writer then
  local wait = first(KEYS[5], now)
  if wait then
    return {0, wait}
  end
end
redis.call('HSET', KEYS[3], 'k', KIND, owner, 1, 'r:' .. owner, req)
redis.call('ZADD', KEYS[4], now + tonumber(ARGV[7]), owner)
keep(now)
return {1, token(), 1}
