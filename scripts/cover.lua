-- cover: what a WAIT sent with a script follows (see Writer in
-- internal/core), so that it covers every earlier write, whoever made it:
-- touch's write that changes nothing, to the 'k' field of the first of the
-- script's keys that is a primitive's hash (a lock hash, rrwlock's
-- readers, a semaphore's permits). A script that wrote nothing (a retry on
-- a new connection that found its first run applied, an acquire that
-- found a grant) leaves the connection's WAIT offset before those writes.
-- No such hash (a lock released): nothing is written.
-- KEYS the script's keys (one slot)
-- Reply: 1 written, 0 not.
for _, key in ipairs(KEYS) do
  local k = redis.pcall('HGET', key, 'k')
  if type(k) == 'string' then
    redis.call('HSET', key, 'k', k)
    return 1
  end
end
return 0
