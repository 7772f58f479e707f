-- release.lua: delete the lock if it holds our value, leave the queue, and
-- wake the next waiter.
-- KEYS[1] lock key, KEYS[2] queue, KEYS[3] waiter deadlines.
-- ARGV[1] our random value, ARGV[2] the release channel.
-- Returns 1 if the lock held our value and was deleted, 0 otherwise.
local deleted = 0
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  deleted = 1
end
local head = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])

if deleted == 1 or (head == ARGV[1] and redis.call('EXISTS', KEYS[1]) == 0) then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local stale = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now, 'LIMIT', 0, 100)
  if #stale > 0 then
    redis.call('ZREM', KEYS[2], unpack(stale))
    redis.call('ZREM', KEYS[3], unpack(stale))
  end
  -- The message names the waiter whose turn it is ("" if none), so only
  -- that waiter runs the acquire script.
  redis.call('PUBLISH', ARGV[2], redis.call('ZRANGE', KEYS[2], 0, 0)[1] or '')
end
return deleted
