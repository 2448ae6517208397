-- rw_write: take the write hold for an owner, or re-enter it.
-- KEYS, ARGV[1..6] as in rw_lib.lua
-- ARGV[7] request id   ARGV[8] lease (ms)
-- ARGV[9] holder metadata
-- ARGV[10] "0": never wait (TryLock); otherwise wait as a writer if busy,
--         and settle the wake registry, where the request's Client is
--         registered by its client id (see client_of), as lock_acquire's
--         modes do: "w" leave it be (a Client whose waits poll); "r"
--         register the Client if busy, unregister it if the request takes
--         the lock (its last local waiter); "k" register it either way
--         (other local waiters remain); "u" unregister it either way (its
--         waits poll)
-- ARGV[11] heartbeat (ms)
-- ARGV[12] token of the write hold the handle has ('0': none)
-- Reply: {1, token, count}  held: a fresh hold, a re-entry, or a retry
--        {0, wait}          busy: the writer's remaining lease, or the
--                           soonest reader's
--        {-1}               the owner holds a read hold and no write hold:
--                           an upgrade, refused (it could deadlock)
-- The owner re-enters only the write hold the handle knows (its token); an
-- orphan (see lock_acquire) is taken over as a fresh hold, and a request
-- that was left (or took a hold released to zero since), is numbered below
-- the owner's hold's last, or names a hold released to zero since (a late
-- copy; is_stale, was_ended), is refused: {0, wait}. A waiting writer that finds the
-- lock busy waits in KEYS[5], by its owner.
local owner, req = ARGV[5], ARGV[7]
local mode = ARGV[10]
local h = read_hash(KEYS[1], KIND, 'k', 'o', 'c', 't', 'r')
local readers, writers, registered = rw_check_write_keys(h[1])
local now = now_ms()
if readers + writers > 0 then
  redis.call('ZCARD', KEYS[6]) -- its type, before rw_purge writes
  registered = rw_purge(now, registered)
end
if h[2] == owner and h[5] == req then
  registry_taken(KEYS[7], mode, req, tonumber(ARGV[11]), registered)
  return {1, tonumber(h[4]), tonumber(h[3])}
end
if was_left(KEYS[6], req) or is_stale(h[2], owner, req, h[5])
  or (h[4] ~= ARGV[12] and was_ended(KEYS[6], ARGV[12])) then
  return {0, h[2] and remaining(KEYS[1]) or 1}
end
if h[2] == owner and h[4] == ARGV[12] then
  local c = redis.call('HINCRBY', KEYS[1], 'c', 1)
  redis.call('HSET', KEYS[1], 'r', req)
  registry_taken(KEYS[7], mode, req, tonumber(ARGV[11]), registered)
  return {1, tonumber(h[4]), c}
end
if h[2] ~= owner then
  if readers > 0 and redis.call('HEXISTS', KEYS[3], owner) == 1 then
    return {-1}
  end
  local wait
  if h[2] then
    wait = remaining(KEYS[1])
  elseif readers > 0 then
    wait = rw_first(KEYS[4], now)
  end
  if wait then
    if mode ~= '0' then
      redis.call('ZADD', KEYS[5], now + tonumber(ARGV[11]), owner)
      rw_keep(now)
      if mode == 'r' or mode == 'k' then
        register(KEYS[7], client_of(req), tonumber(ARGV[11]))
      elseif mode == 'u' then
        unregister(KEYS[7], client_of(req), registered)
      end
    end
    return {0, wait}
  end
end
local t = next_token(KEYS[2])
redis.call('HSET', KEYS[1], 'k', KIND, 'o', owner, 'c', 1, 'x', 0, 't', t, 'r', req,
  'q', req, 'm', ARGV[9], 'a', now)
redis.call('PEXPIRE', KEYS[1], ARGV[8])
if writers > 0 and redis.call('ZREM', KEYS[5], owner) == 1 and redis.call('ZCARD', KEYS[5]) == 0 then
  redis.call('DEL', KEYS[5])
end
registry_taken(KEYS[7], mode, req, tonumber(ARGV[11]), registered)
return {1, tonumber(t), 1}
