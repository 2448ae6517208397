-- cover: what a WAIT sent with a script follows (see Writer in
-- internal/core), so that it covers every earlier write, whoever made it:
-- touch's write that changes nothing, to the 'k' field of a primitive's
-- first key. A script that wrote nothing (a retry on a new connection
-- that found its first run applied) leaves the connection's WAIT offset
-- before that run's write. No hash with a 'k' field: nothing is written.
-- KEYS[1] the script's first key
-- Reply: 1 written, 0 not.
local k = redis.pcall('HGET', KEYS[1], 'k')
if type(k) ~= 'string' then
  return 0
end
redis.call('HSET', KEYS[1], 'k', k)
return 1
