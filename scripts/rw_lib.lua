-- rw_lib.lua: helpers of the read-write lock's scripts, prepended after lib.lua.
--
-- Every rw script takes the same KEYS and the same first six ARGV:
--   KEYS[1] lock hash: the write hold (fields as in lib.lua; kind "rrwlock"),
--           expiring with the writer's lease
--   KEYS[2] fence hash
--   KEYS[3] readers: a hash, 'k' -> kind, <owner> -> read hold count,
--           'h:'<owner> -> the hold's name: the id of the request that
--           took it (a read hold's token is the last write's, which the
--           owner's next hold may share), 'r:'<owner> -> id of the last
--           request applied to that hold,
--           'x:'<owner> -> the id of the rw_rextend request that gave
--           the hold a fixed lease (see is_fixed), if any, 'v:'<owner> -> the handle's value
--           (WithValue), if any
--   KEYS[4] read leases: a zset, owner -> lease deadline (server time, ms)
--   KEYS[5] waiting writers: a zset, owner -> heartbeat deadline
--   KEYS[6] the caller's Client's request markers (see lib.lua)
--   KEYS[7] the waiting writers' wake registry (see lib.lua): a zset,
--           client id -> heartbeat deadline, one registration per Client
--           for all its local waiting writers; a writer's failed try adds
--           its Client, a wake removes it
--   ARGV[1..4] as in lib.lua; ARGV[3] is the readers' channel
--   ARGV[5] the owner acting (an rw_force's or rw_state's: the caller's,
--           who need not hold)
--   ARGV[6] the writers' channel (each Client hears its writers' wakes on
--           it followed by ":<client id>")
-- Readers and read leases always hold the same owners. Every waiting writer
-- is in KEYS[5] (which holds new readers back) until it takes the lock,
-- leaves or lapses; its Client is in KEYS[7] too until a release wakes it,
-- and the next failed try of one of its writers puts it back. A writer
-- that takes the lock while other writers of its Client wait keeps the
-- Client there: those writers (queued in their process without a try)
-- may not be in KEYS[5], so a release wakes a registered Client whether or
-- not KEYS[5] holds anyone.
--
-- Helpers that may wake a writer take registered, the wake registry's size
-- as the script knows it (read by the check of the keys before the first
-- write), and return it as it is after them.
local WCH = ARGV[6]

-- rw_check_keys raises WRONGTYPE unless every key is absent or of its type
-- and kind, so that a script fails before its first write. It returns the
-- size of the writers' wake registry.
local function rw_check_keys()
  check_kind(KEYS[1], redis.call('HGET', KEYS[1], 'k'), KIND)
  read_hash(KEYS[3], KIND, 'k')
  redis.call('HEXISTS', KEYS[2], 'n')
  redis.call('ZCARD', KEYS[4])
  redis.call('ZCARD', KEYS[5])
  return redis.call('ZCARD', KEYS[7])
end

-- rw_check_write_keys is the check of the keys for the write hold's
-- acquire and release, which read the lock hash themselves (kind_seen:
-- its 'k' field) and touch the fence only in next_token, whose first call
-- (a read) checks it, unless rw_purge may write first. It returns the
-- number of read leases and of waiting writers, and the size of the wake
-- registry.
local function rw_check_write_keys(kind_seen)
  check_kind(KEYS[1], kind_seen, KIND)
  read_hash(KEYS[3], KIND, 'k')
  local readers, writers = redis.call('ZCARD', KEYS[4]), redis.call('ZCARD', KEYS[5])
  if readers + writers > 0 then
    redis.call('HEXISTS', KEYS[2], 'n')
  end
  return readers, writers, redis.call('ZCARD', KEYS[7])
end

-- rw_hint publishes msg on channel (see notify in lib.lua).
local function rw_hint(channel, msg)
  notify(PUBLISH, channel, msg)
end

-- rw_wake_writer wakes one registered waiting writer, in its own Client (see
-- wake_one in lib.lua), and returns registered less the one woken, whether
-- it woke one, and, when by is given (the request the script runs for)
-- and the writer woken is of its Client, the message,
-- which was not published (see wake_one), for the script's reply.
local function rw_wake_writer(registered, by)
  local woke, msg = wake_one(KEYS[7], registered, PUBLISH, WCH, by)
  return math.max(0, registered - 1), woke, msg
end

-- rw_token is the last fencing token handed out: what a read hold reports (0
-- once the fence has expired). A fresh read hold passes keep to refresh the
-- fence's TTL, so that a name only read for a while keeps its last token.
local function rw_token(keep)
  if keep then
    redis.call('PEXPIRE', KEYS[2], FENCE_TTL_MS)
  end
  return tonumber(redis.call('HGET', KEYS[2], 'n') or '0')
end

-- rw_read_held returns owner's read hold count (false when none) and
-- whether that hold is the one named (its 'h:'<owner>; see is_named).
local function rw_read_held(owner, named)
  local h = redis.call('HMGET', KEYS[3], owner, 'h:' .. owner)
  return h[1], is_named(h[1] and owner, h[2], owner, named)
end

-- rw_first returns the lowest score of a zset minus now, or nil when empty.
local function rw_first(key, now)
  local f = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  if f[2] then
    return tonumber(f[2]) - now
  end
  return nil
end

-- rw_keep makes the readers' keys outlive the latest read lease, and the
-- waiting writers' key the latest heartbeat, so that holds and waiters that
-- all died disappear by themselves.
local function rw_keep(now)
  local last = redis.call('ZRANGE', KEYS[4], -1, -1, 'WITHSCORES')
  if last[2] then
    local ms = math.max(1, tonumber(last[2]) - now)
    redis.call('PEXPIRE', KEYS[3], ms)
    redis.call('PEXPIRE', KEYS[4], ms)
  end
  last = redis.call('ZRANGE', KEYS[5], -1, -1, 'WITHSCORES')
  if last[2] then
    redis.call('PEXPIRE', KEYS[5], math.max(1, tonumber(last[2]) - now))
  end
end

-- rw_drop_reader removes owner's read hold; when it was the last one, the
-- readers' keys go, and a free lock wakes a writer. It returns registered
-- (see above).
local function rw_drop_reader(owner, registered)
  redis.call('HDEL', KEYS[3], owner, 'h:' .. owner, 'r:' .. owner, 'x:' .. owner, 'v:' .. owner)
  redis.call('ZREM', KEYS[4], owner)
  if redis.call('ZCARD', KEYS[4]) == 0 then
    redis.call('DEL', KEYS[3], KEYS[4])
    if redis.call('EXISTS', KEYS[1]) == 0 then
      return rw_wake_writer(registered)
    end
  end
  return registered
end

-- rw_drop_writer removes a waiting writer; when it was the last, readers held
-- back by writer preference may go.
local function rw_drop_writer(owner)
  if redis.call('ZREM', KEYS[5], owner) == 1 and redis.call('ZCARD', KEYS[5]) == 0 then
    redis.call('DEL', KEYS[5])
    if redis.call('EXISTS', KEYS[1]) == 0 then
      rw_hint(CHANNEL, '*')
    end
  end
end

-- rw_purge drops the read holds whose lease ran out and the waiting writers
-- whose heartbeat did, notifying whoever they held back. It returns
-- registered (see above).
local function rw_purge(now, registered)
  for _, o in ipairs(redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', now)) do
    registered = rw_drop_reader(o, registered)
  end
  for _, o in ipairs(redis.call('ZRANGEBYSCORE', KEYS[5], '-inf', now)) do
    rw_drop_writer(o)
  end
  return registered
end

-- rw_write_released wakes the waiters of a lock whose write hold just ended:
-- one registered Client's writer when one is registered (writers go first:
-- a Client's writers queued behind one that took the lock with others
-- behind it are not in KEYS[5], its registration stands for them),
-- otherwise every reader. writers is the number of waiting writers, when
-- known; registered is as above. by is as for rw_wake_writer, whose
-- message for by's Client it returns.
local function rw_write_released(writers, registered, by)
  local _, woke, msg = rw_wake_writer(registered, by)
  if not woke and (writers or redis.call('ZCARD', KEYS[5])) == 0 then
    rw_hint(CHANNEL, '*')
  end
  return msg
end
