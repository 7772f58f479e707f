-- setnx.lua: one Redlock instance's grant: SET NX PX, or the holder's
-- remaining ttl when the key is taken.
-- KEYS[1] lock key. ARGV[1] our random value, ARGV[2] ttl ms.
-- Returns -3 when granted (or already ours), else the key's PTTL.
local cur = redis.call('GET', KEYS[1])
if cur == ARGV[1] then
  return -3
end
if not cur then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return -3
end
return redis.call('PTTL', KEYS[1])
