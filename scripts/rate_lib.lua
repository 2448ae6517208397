-- rate_lib.lua: helpers of the rate limiter's scripts (rratelimit),
-- prepended after lib.lua. The limiter is GCRA (the generic cell rate
-- algorithm): its whole state is one time, the theoretical arrival time
-- (TAT), the time at which the limiter would be idle again had every
-- event admitted so far been spaced exactly one interval apart. An
-- interval is per / events; an event is admitted at now if, once it is
-- counted (TAT = max(TAT, now) + its cost), TAT is no further ahead of now
-- than burst intervals (the tolerance).
--
-- Every rate script takes the same KEYS and the same first seven ARGV:
--   KEYS[1] the limiter: a hash with the fields
--             k  kind ("rratelimit")
--             e  events   p  period (µs)   b  burst: the limit in effect
--             t  TAT, server time in µs (absent: idle)
--             r  the request id of the last take that moved t: a
--                give-back applies only while no take came after its own
--             s  1 once SetLimit set the limit: the hash then lives a
--                day past its last use, not one period past its TAT
--           It expires by itself once idle (see rate_expire).
--   KEYS[2] done: the takes counted lately (a zset, as lib.lua's request
--           markers): request id -> the time its events were admitted at
--           (server time in µs: now, or the slot a Wait sleeps until). A
--           retried take finds its id there and replies with that slot,
--           whatever came in between; an id is kept until MARK_TTL after
--           its time, and the zset expires MARK_TTL after its last write.
--   ARGV[1..4] as in lib.lua (the rate limiter publishes nothing: its
--           publish command and channel are empty)
--   ARGV[5] events  ARGV[6] period (µs)  ARGV[7] burst: the caller's
--           limit, used only where the hash holds none

-- RATE_SET_TTL_US is how long a limit that SetLimit set outlives the
-- limiter's last use: a day.
local RATE_SET_TTL_US = 86400000000

-- rate_now returns the server's clock in microseconds.
local function rate_now()
  local t = server_time()
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- rate_read reads the limiter, checks its kind (WRONGTYPE before any
-- write), and returns the hash's fields and the limit in effect: the
-- stored one, or the caller's (ARGV[5..7]) where none is stored.
local function rate_read()
  local h = redis.call('HMGET', KEYS[1], 'k', 'e', 'p', 'b', 't', 'r', 's')
  check_kind(KEYS[1], h[1], KIND)
  if h[2] then
    return h, tonumber(h[2]), tonumber(h[3]), tonumber(h[4])
  end
  return h, tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
end

-- rate_cost returns what n events cost in µs at events per period:
-- rounded up, so that rounding never admits more than the limit.
local function rate_cost(n, events, per)
  return math.ceil(n * per / events)
end

-- rate_left returns how many events could be admitted at now with TAT
-- tat: what is left of the burst.
local function rate_left(tat, now, events, per, burst)
  local ahead = math.max(tat - now, 0)
  return math.max(math.floor((rate_cost(burst, events, per) - ahead) * events / per), 0)
end

-- rate_us formats a time in µs for HSET: a number of 16 digits would be
-- written in exponent form.
local function rate_us(t)
  return string.format('%.0f', t)
end

-- rate_expire gives the hash the TTL that keeps it while it matters: until
-- one period after its TAT (an idle limiter is the same as none), or a day
-- past now for a limit that SetLimit set.
local function rate_expire(tat, now, per, set)
  local ttl = tat - now + per
  if set then
    ttl = math.max(ttl, RATE_SET_TTL_US)
  end
  redis.call('PEXPIRE', KEYS[1], math.ceil(ttl / 1000))
end

-- rate_counted returns the time at which the take req was admitted (µs),
-- if it was counted within MARK_TTL, else nil; it first drops the ids
-- whose time is more than MARK_TTL past.
local function rate_counted(req, now)
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', rate_us(now - MARK_TTL * 1000))
  local at = redis.call('ZSCORE', KEYS[2], req)
  return at and tonumber(at)
end

-- rate_mark records that the take req was admitted at time at (µs).
local function rate_mark(req, at)
  redis.call('ZADD', KEYS[2], rate_us(at), req)
  redis.call('PEXPIRE', KEYS[2], MARK_TTL)
end
