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
--           "f:<permit id>" -> the id of the Extend request that fixed
--           the permit's lease (see is_fixed in lib.lua), if any
--   KEYS[4] fence: a hash, n -> the last token handed out (see next_token
--           in lib.lua; it expires a day after the last)
--   KEYS[5] done: request markers (see lib.lua)
--   KEYS[6] waiters: the registry of the Clients whose acquires are
--           blocked (see lib.lua), a zset: client id -> heartbeat deadline
--           (server time, ms). A Client registers once per name, however
--           many of its acquires wait: they wait in a local queue, and a
--           wake of the Client wakes as many of them as permits are free
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

-- xsem_wake wakes registered Clients, one per permit, up to budget permits
-- (what the caller freed: permits freed earlier already woke someone, who
-- is on the way) and no more than are free: the fresh registrations (see
-- fresh_floor in lib.lua) first, then, with what is left, the stale ones,
-- each in the order of their deadlines (the longest unrenewed first), so
-- that a dead process's registration does not take a live waiter's wake.
-- Each of a Client's blocked acquires asks for one permit, so every
-- registration fits: it reads only the registrations it wakes.
--
-- A woken Client gets "n:K" on its client channel, which only its process
-- hears, K being the permits of the budget left when it was woken: its Hub
-- wakes that many of its local waiters at most (see package hub). It
-- counts for one, so the next Client is woken with one less. It leaves the
-- registry: its next try registers it again, unless that try takes the
-- permit for the Client's last local waiter. The releasing Client (self,
-- nil or "" for none) hands the permit on to its own waiters: it counts
-- for one, stays registered and gets no message; xsem_wake returns the K
-- its message would have said (0: it was not counted). registered is the
-- registry's size (xsem_check_keys): 0 wakes nobody.
local function xsem_wake(free, budget, registered, self)
  budget = math.min(free, budget)
  if budget <= 0 or registered == 0 then
    return 0
  end
  local now = now_ms()
  redis.call('ZREMRANGEBYSCORE', KEYS[6], '-inf', now)
  local floor = fresh_floor(KEYS[6], now)
  if not floor then
    return 0
  end
  local woken, own = {}, 0
  local function wake_from(lo, hi)
    if budget <= 0 then
      return
    end
    for _, m in ipairs(redis.call('ZRANGEBYSCORE', KEYS[6], lo, hi, 'LIMIT', 0, budget)) do
      if m == self then
        own = budget
      else
        woken[#woken + 1] = {m, budget}
      end
      budget = budget - 1
    end
  end
  wake_from(floor, '+inf')
  wake_from('-inf', '(' .. floor)
  for _, w in ipairs(woken) do
    redis.call('ZREM', KEYS[6], w[1])
    notify(PUBLISH, client_channel(CHANNEL, w[1]), 'n:' .. string.format('%.0f', w[2]))
  end
  return own
end
