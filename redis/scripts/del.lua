-- del.lua: delete the lock if it holds our value, quietly (no wake-up):
-- Redlock's clean-up after a failed attempt.
-- KEYS[1] lock key. ARGV[1] our value. Returns 1 if deleted.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
