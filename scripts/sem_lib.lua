-- sem_lib.lua: helpers of the counting semaphore's scripts, prepended after
-- lib.lua and queue_lib.lua.
--
-- Every semaphore script takes the same KEYS and the same first four ARGV:
--   KEYS[1] permits: a hash with the fields
--             k  kind ("rsemaphore")
--             a  available permits; below 0 while SetPermits has shrunk
--                the total under what is held
--             t  total permits: what was set, plus what was added
--           It has no TTL: it is the semaphore's configuration.
--   KEYS[2] queue: a list of fair waiters' request ids, oldest first
--   KEYS[3] alive: a zset, request id -> heartbeat deadline (server time, ms)
--   KEYS[4] waiting: a hash, request id -> permits it asks for, and when
--           it joined (see queue_lib.lua)
--   KEYS[5] done: request markers (see lib.lua)
--   KEYS[6] waiters: the registry of the Clients whose unfair acquires
--           are blocked (see lib.lua), a zset: client id -> heartbeat
--           deadline (server time, ms). A Client registers once per name,
--           however many of its acquires wait: they wait in a local queue,
--           and a wake of the Client wakes those of them that fit
--   KEYS[7] sizes: the same members, each scored by the fewest permits
--           one of that Client's blocked acquires asks for, so that a
--           release wakes only Clients with a request that fits
--   ARGV[1..4] as in lib.lua
-- The queue, alive and waiting keys always hold the same request ids. While
-- the queue has a live waiter, permits go to it first: a release grants
-- them to the live heads that fit, in order, inside the same script, and
-- nobody else may take permits (so a large request is not starved by a
-- stream of small ones).

-- sem_check_keys raises WRONGTYPE unless the permits hash is absent or of this
-- kind (kind_seen: its 'k' field) and the other keys are absent or of their
-- types, so that a script fails before its first write. It returns the
-- fair queue's length and the registry's size, as they were then.
local function sem_check_keys(kind_seen)
  check_kind(KEYS[1], kind_seen, KIND)
  local queue_length = redis.call('LLEN', KEYS[2])
  redis.call('ZCARD', KEYS[3])
  redis.call('HLEN', KEYS[4])
  redis.call('ZCARD', KEYS[5])
  redis.call('ZCARD', KEYS[7])
  return queue_length, redis.call('ZCARD', KEYS[6])
end

-- sem_forget removes a request from the queue (queue_lib.lua).
local function sem_forget(req)
  queue_forget(KEYS[2], KEYS[3], KEYS[4], req)
end

-- sem_live_head returns the first live request, popping the dead ones
-- before it.
local function sem_live_head(now)
  return queue_head(KEYS[2], KEYS[3], KEYS[4], now)
end

-- sem_serve grants permits to the live heads of the queue, in order, while the
-- head's request fits in avail, and tells each grantee alone, on its
-- client's channel ("@<req> granted", see client_channel in lib.lua and To
-- in internal/hub). A head asking for more than the total (it shrank) is
-- dropped: its next attempt reports the error. serve returns what is left,
-- and whether a live waiter remains queued (who then has the first claim on
-- it).
local function sem_serve(now, avail)
  local total = tonumber(redis.call('HGET', KEYS[1], 't')) or 0
  while true do
    local req = sem_live_head(now)
    if not req then
      return avail, false
    end
    local n = tonumber(redis.call('HGET', KEYS[4], req))
    if n > total then
      sem_forget(req)
    elseif n > avail then
      return avail, true
    else
      avail = avail - n
      -- the marker is the grant: it must last until the waiter looks, which
      -- its heartbeat promises within its deadline (then sem_heartbeat keeps it)
      local deadline = tonumber(redis.call('ZSCORE', KEYS[3], req))
      sem_forget(req)
      done_mark(KEYS[5], 'a', req, now, math.max(MARK_TTL, deadline - now))
      notify(PUBLISH, client_channel(CHANNEL, req), '@' .. req .. ' granted')
    end
  end
end

-- sem_register records the Client m as waiting for ms more, the fewest
-- permits its blocked acquires ask for being least (a decimal string, as
-- sent).
local function sem_register(m, least, ms)
  register(KEYS[6], m, ms)
  redis.call('ZADD', KEYS[7], least, m)
  outlive(KEYS[7], ms)
end

-- sem_unregister removes the Client m and reports whether it was there.
local function sem_unregister(m)
  redis.call('ZREM', KEYS[7], m)
  return redis.call('ZREM', KEYS[6], m) == 1
end

-- sem_drop_dead drops the registrations whose deadline has passed.
local function sem_drop_dead(now)
  local dead = redis.call('ZRANGEBYSCORE', KEYS[6], '-inf', now)
  for _, m in ipairs(dead) do
    redis.call('ZREM', KEYS[7], m)
  end
  if #dead > 0 then
    redis.call('ZREMRANGEBYSCORE', KEYS[6], '-inf', now)
  end
end

-- sem_score reads a zset score as Redis replies it (false: none). A
-- score in exponent form ("2e+14", as miniredis writes a large one) is
-- read too, where Lua's tonumber may not.
local function sem_score(s)
  if not s then
    return nil
  end
  local m, e = string.match(s, '^([%d.]+)e%+?(%d+)$')
  if m then
    return tonumber(m) * 10 ^ tonumber(e)
  end
  return tonumber(s)
end

-- SEM_SCAN_BATCH is how many registrations sem_wake reads per command.
local SEM_SCAN_BATCH = 16

-- sem_wake wakes registered Clients with a blocked acquire that fits in
-- avail, unless a live fair waiter still has the first claim on it
-- (queued). It wakes at most budget permits' worth (what the caller freed:
-- permits freed earlier already woke someone, who is on the way), but
-- always one Client that fits, so that a request larger than budget is not
-- stranded.
--
-- Whom: the fresh registrations (see fresh_floor in lib.lua) first, and
-- only with what is left the stale ones, each in the order of their
-- deadlines (the longest unrenewed first), so that a dead process's
-- registration does not take live waiters' wakes, and a live Client whose
-- renewals are late is still woken when no fresh one fits. It reads the
-- registry in that order until the permits are spent or the registry is
-- read, and wakes every Client whose fewest (its sizes score) fits in what
-- is left: no number of Clients that do not fit hides one that does. Its
-- cost, O(log) each, is the registrations it reads, one per Client.
--
-- A woken Client gets "n:K" on its client channel, which only its process
-- hears: its Hub wakes its local waiters that fit in K, the permits left
-- when it was woken (see package hub); the Client counts for its fewest
-- only, so the next Client is woken with what that leaves. It leaves the
-- registry: its next try registers it again, unless that try takes
-- permits for the Client's last local waiter. The releasing Client (self,
-- "" for none) hands its permits on to its own waiters: it counts for its
-- fewest, stays registered and gets no message; sem_wake returns the K its
-- message would have said (0: it was not counted). registered is the
-- registry's size (sem_check_keys): 0 wakes nobody.
local function sem_wake(avail, queued, budget, registered, self)
  if avail <= 0 or budget <= 0 or queued or registered == 0 then
    return 0
  end
  local now = now_ms()
  sem_drop_dead(now)
  local floor = fresh_floor(KEYS[6], now)
  if not floor then
    return 0
  end
  local woken, own = {}, 0
  -- pass wakes the Clients with deadlines from lo to hi (lo excluded
  -- when open) that fit, in order, while permits are left
  local function pass(lo, hi)
    local offset = 0
    while avail > 0 and budget > 0 do
      local ms = redis.call('ZRANGEBYSCORE', KEYS[6], lo, hi, 'LIMIT', offset, SEM_SCAN_BATCH)
      offset = offset + #ms
      for _, m in ipairs(ms) do
        local least = sem_score(redis.call('ZSCORE', KEYS[7], m))
        if least and least <= avail and (least <= budget or #woken == 0) then
          local k = math.max(least, math.min(avail, budget))
          avail, budget = avail - least, budget - least
          if m ~= self then
            woken[#woken + 1] = {m, k}
          else
            own = k
          end
          if avail <= 0 or budget <= 0 then
            break
          end
        end
      end
      if #ms < SEM_SCAN_BATCH then
        break
      end
    end
  end
  pass(floor, '+inf')
  pass('-inf', '(' .. floor)
  for _, w in ipairs(woken) do
    sem_unregister(w[1])
    notify(PUBLISH, client_channel(CHANNEL, w[1]), 'n:' .. string.format('%.0f', w[2]))
  end
  return own
end

-- sem_settle stores avail after serving the queue, and wakes the registered
-- waiters who fit in what is left, freed permits' worth of them (see
-- sem_wake); all that is left, when the queue had held it back until now.
-- queue_length and registered are what sem_check_keys returned; self is
-- as for sem_wake, whose reply it returns after avail.
local function sem_settle(now, avail, freed, queue_length, registered, self)
  local queued
  avail, queued = sem_serve(now, avail)
  redis.call('HSET', KEYS[1], 'a', avail)
  if queue_length > 0 and not queued then
    freed = avail
  end
  return avail, sem_wake(avail, queued, freed, registered, self)
end

-- sem_keep makes the queue's keys outlive the latest heartbeat deadline, ms
-- from now, so that a queue of waiters that all died disappears by itself.
local function sem_keep(ms)
  queue_keep(KEYS[2], KEYS[3], KEYS[4], ms)
end
