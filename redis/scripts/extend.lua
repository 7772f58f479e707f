-- extend.lua: reset the lock's ttl if it still holds our value.
-- KEYS[1] lock key. ARGV[1] our random value, ARGV[2] ttl ms.
-- Returns 1 if extended, 0 if the key is gone or someone else's.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
