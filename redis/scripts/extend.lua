-- extend.lua: reset the lock's ttl if it still holds our value (marked
-- with "+" or not, see release.lua).
-- KEYS[1] lock key. ARGV[1] our value, ARGV[2] ttl ms.
-- Returns 1 if extended, 0 if the key is gone or someone else's.
local cur = redis.call('GET', KEYS[1])
if cur == ARGV[1] or cur == ARGV[1] .. '+' then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
