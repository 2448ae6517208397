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
--           zset: "<permit id> <ttl>" -> heartbeat deadline (server time,
--           ms); ttl is how long (ms) each renewal keeps it, its Client's
--           lease TTL
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

-- xsem_fresh reports whether the registration m, whose heartbeat deadline
-- is deadline, was renewed within the last half of its TTL (ttl, the last
-- field of m): the watchdog renews a live waiter's every TTL/3.
local function xsem_fresh(m, deadline, now)
  local ttl = tonumber(string.match(m, ' (%d+)$'))
  return ttl ~= nil and deadline - now > ttl / 2
end

-- XSEM_SCAN_BATCH is how many registrations xsem_wake reads per call.
local XSEM_SCAN_BATCH = 64

-- xsem_wake wakes as many registered waiters as there are free permits,
-- after dropping the dead ones: the fresh ones (xsem_fresh) first, the one
-- registered or renewed longest ago first, then, with what is left, the
-- stale ones, longest unrenewed first. A dead process's registrations do
-- not take live waiters' wakes; its cost is the waiters it wakes and the
-- stale ones it passes over (a process that stopped renewing: they lapse
-- within a TTL). Each woken waiter gets one message, targeted at its
-- request on its client's channel ("@<id> "), which only its process
-- hears, and leaves the registry: it registers again if its next try
-- fails. registered is the registry's size (xsem_check_keys): 0 wakes
-- nobody.
local function xsem_wake(free, registered)
  if free <= 0 or registered == 0 then
    return
  end
  local now = now_ms()
  redis.call('ZREMRANGEBYSCORE', KEYS[6], '-inf', now)
  local woken, stale, rank = {}, {}, 0
  while #woken < free do
    local ms = redis.call('ZRANGE', KEYS[6], rank, rank + XSEM_SCAN_BATCH - 1, 'WITHSCORES')
    rank = rank + XSEM_SCAN_BATCH
    for i = 1, #ms, 2 do
      if #woken >= free then
        break
      elseif xsem_fresh(ms[i], tonumber(ms[i + 1]), now) then
        woken[#woken + 1] = ms[i]
      else
        stale[#stale + 1] = ms[i]
      end
    end
    if #ms < 2 * XSEM_SCAN_BATCH then
      break
    end
  end
  for _, m in ipairs(stale) do
    if #woken >= free then
      break
    end
    woken[#woken + 1] = m
  end
  for _, m in ipairs(woken) do
    redis.call('ZREM', KEYS[6], m)
    local id = string.match(m, '^(%S+)')
    notify(PUBLISH, client_channel(CHANNEL, id), '@' .. id .. ' ')
  end
end
