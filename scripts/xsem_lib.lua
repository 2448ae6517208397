-- xsem_lib.lua: helpers of the expirable semaphore's scripts, prepended
-- after lib.lua.
--
-- Every expirable semaphore script takes the same KEYS and first four ARGV:
--   KEYS[1] permits: a hash with the fields
--             k  kind ("rsemaphore-expirable")
--             t  total permits: what was set, plus what was added
--           It has no TTL: it is the semaphore's configuration.
--   KEYS[2] leases: a zset, permit id -> lease deadline (server time, ms)
--   KEYS[3] tokens: a hash, permit id -> the permit's fencing token, and
--           "f:<permit id>" -> 1 once Extend has fixed the permit's lease
--   KEYS[4] fence: a hash, n -> the last token handed out (see next_token
--           in lib.lua; it expires a day after the last)
--   KEYS[5] done: request markers (see lib.lua)
--   KEYS[6] waiters: the registry of blocked acquires (see lib.lua), a
--           zset: permit id -> heartbeat deadline (server time, ms)
--   ARGV[1..4] as in lib.lua
-- A permit is held while its deadline is ahead. Every script that takes,
-- returns or counts permits for a write first drops the permits whose
-- deadline has passed, so an expired permit is back the moment it expires,
-- whoever asks next (xsem_state counts only the live ones; xsem_extend
-- refuses an expired one). The
-- leases and tokens keys expire with the last lease in them.

-- xsem_check_keys raises WRONGTYPE unless the permits hash is absent or of this
-- kind (kind_seen: its 'k' field) and the other keys are absent or of their
-- types, so that a script fails before its first write. It returns the
-- registry's size.
local function xsem_check_keys(kind_seen)
  check_kind(KEYS[1], kind_seen, KIND)
  redis.call('ZCARD', KEYS[2])
  redis.call('HLEN', KEYS[3])
  redis.call('HEXISTS', KEYS[4], 'n')
  redis.call('ZCARD', KEYS[5])
  return redis.call('ZCARD', KEYS[6])
end

-- xsem_reclaim drops the permits whose lease has ended and returns how many are
-- held now.
local function xsem_reclaim(now)
  local gone = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now)
  if #gone > 0 then
    redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
    for _, id in ipairs(gone) do
      redis.call('HDEL', KEYS[3], id, 'f:' .. id)
    end
  end
  return redis.call('ZCARD', KEYS[2])
end

-- xsem_keep makes the leases and tokens keys outlive a lease that ends ms
-- from now.
local function xsem_keep(ms)
  outlive(KEYS[2], ms)
  outlive(KEYS[3], ms)
end

-- XWAKE_MAX bounds how many waiters one wake wakes.
local XWAKE_MAX = 128

-- xsem_wake wakes as many registered waiters as there are free permits (at
-- most XWAKE_MAX), the one registered or renewed longest ago first, after
-- dropping the dead ones: one message each, targeted at its request on its
-- client's channel ("@<id> "), which only its process hears. Each leaves
-- the registry: it registers again if its next try fails. registered is
-- the registry's size (xsem_check_keys): 0 wakes nobody.
local function xsem_wake(free, registered)
  if free <= 0 or registered == 0 then
    return
  end
  redis.call('ZREMRANGEBYSCORE', KEYS[6], '-inf', now_ms())
  for _, id in ipairs(redis.call('ZRANGE', KEYS[6], 0, math.min(free, XWAKE_MAX) - 1)) do
    redis.call('ZREM', KEYS[6], id)
    notify(PUBLISH, client_channel(CHANNEL, id), '@' .. id .. ' ')
  end
end
