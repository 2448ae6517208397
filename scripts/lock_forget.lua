-- lock_forget: delete what a name keeps between holds (its fence, an
-- owner's markers), when nothing holds it or waits for it.
-- KEYS[1..ARGV[1]] keys whose existence means the name is in use: its hold,
--                  its queue, its waiter registry
-- KEYS[ARGV[1]+1..] the keys to delete
-- Reply: 1 the name was not in use, and the keys are deleted (those that
--        existed); 0 it is in use: nothing is deleted.
local n = tonumber(ARGV[1])
for i = 1, n do
  if redis.call('EXISTS', KEYS[i]) == 1 then
    return 0
  end
end
for i = n + 1, #KEYS do
  redis.call('DEL', KEYS[i])
end
return 1
