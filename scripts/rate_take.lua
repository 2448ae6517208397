-- rate_take: Allow and Wait. Count n events against the limit if their
-- slot comes within max wait: at once for Allow (max wait 0), within the
-- caller's deadline for Wait. Counting moves TAT by the events' cost, so
-- the next take's slot comes after this one's: takes are served in the
-- order they reach the server. A take whose slot is too far leaves
-- everything as it was.
-- KEYS, ARGV[1..7] as in rate_lib.lua
-- ARGV[8] n: events, at least 1
-- ARGV[9] max wait (µs): how long after now the slot may be; -1 for no
--         bound
-- ARGV[10] request id
-- Reply: {1, wait, left, events, period, burst, cost}  counted: the slot
--            is wait µs from now (0: now); left is what remains of the
--            burst; cost is what the take added to TAT (µs), for a
--            give-back. A retry of a take that was counted (one in
--            done) is not counted again: it replies with the slot the
--            first got (as a wait from today's now) and today's left.
--        {0, wait, left, events, period, burst}  not counted: the slot
--            would be wait µs from now
--        {-1, 0, 0, events, period, burst}  n is above the burst: never
--            admissible; nothing changed
local n, max_wait, req = tonumber(ARGV[8]), tonumber(ARGV[9]), ARGV[10]
local h, events, per, burst = rate_read()
local now = rate_now()
local tol = rate_cost(burst, events, per)
local tat = math.max(tonumber(h[5] or '0'), now)
local at = rate_counted(req, now)
if at then
  return {1, math.max(at - now, 0), rate_left(tat, now, events, per, burst), events, per, burst, rate_cost(n, events, per)}
end
if n > burst then
  return {-1, 0, 0, events, per, burst}
end
local cost = rate_cost(n, events, per)
local next_tat = tat + cost
local wait = math.max(next_tat - tol - now, 0)
if max_wait >= 0 and wait > max_wait then
  return {0, wait, rate_left(tat, now, events, per, burst), events, per, burst}
end
if h[1] then
  redis.call('HSET', KEYS[1], 't', rate_us(next_tat), 'r', req)
else
  redis.call('HSET', KEYS[1], 'k', KIND, 'e', ARGV[5], 'p', ARGV[6], 'b', ARGV[7], 't', rate_us(next_tat), 'r', req)
end
rate_mark(req, now + wait)
rate_expire(next_tat, now, per, h[7])
return {1, wait, rate_left(next_tat, now, events, per, burst), events, per, burst, cost}
