-- release.lua: delete the lock if it holds our value, leave the queue, and
-- hand the lock straight to the next live waiter.
-- KEYS[1] lock key, KEYS[2] token counter, KEYS[3] queue, KEYS[4] waiter
-- deadlines. ARGV[1] our value, ARGV[2] the release channel.
-- Returns 1 if the lock held our value and was deleted, 0 otherwise.
--
-- A baton waiter's value ends in ".<ttl ms>": the lock is set for the
-- next waiter with its own ttl, and "<value> <token>" is published so it
-- learns of the grant without another round trip. With nobody in line, ""
-- is published (Redlock waiters and others then retry).
local deleted = 0
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  deleted = 1
end
local head = redis.call('ZRANGE', KEYS[3], 0, 0)[1]
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('ZREM', KEYS[4], ARGV[1])
if deleted == 0 and not (head == ARGV[1] and redis.call('EXISTS', KEYS[1]) == 0) then
  return 0
end

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local stale = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', now, 'LIMIT', 0, 100)
if #stale > 0 then
  redis.call('ZREM', KEYS[3], unpack(stale))
  redis.call('ZREM', KEYS[4], unpack(stale))
end
local nxt = redis.call('ZRANGE', KEYS[3], 0, 0)[1]
local ttl = nxt and tonumber(string.match(nxt, '%.(%d+)$'))
if not ttl then
  redis.call('PUBLISH', ARGV[2], '')
  return deleted
end
redis.call('SET', KEYS[1], nxt, 'PX', ttl)
if redis.call('EXISTS', KEYS[2]) == 0 then
  redis.call('SET', KEYS[2], t[1] .. string.format('%06d', tonumber(t[2])))
end
local token = redis.call('INCR', KEYS[2])
redis.call('ZREM', KEYS[3], nxt)
redis.call('ZREM', KEYS[4], nxt)
redis.call('PUBLISH', ARGV[2], nxt .. ' ' .. token)
return deleted
