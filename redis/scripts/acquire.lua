-- acquire.lua: take the lock if it is free and we are first in line.
-- KEYS[1] lock key, KEYS[2] token counter, KEYS[3] queue (zset, value ->
-- arrival ticket), KEYS[4] waiter deadlines (zset, value -> server ms).
-- ARGV[1] our random value, ARGV[2] lock ttl ms, ARGV[3] "1" to queue
-- behind others when not granted, "0" to only try, ARGV[4] waiter ttl ms.
-- Returns {1, token} when held, {0, wake-hint ms} otherwise.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

-- Waiters that stopped refreshing their place are dropped.
local stale = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', now, 'LIMIT', 0, 100)
if #stale > 0 then
  redis.call('ZREM', KEYS[3], unpack(stale))
  redis.call('ZREM', KEYS[4], unpack(stale))
end

local cur = redis.call('GET', KEYS[1])
if cur == ARGV[1] then
  -- A retry of a grant whose reply was lost: nobody else can have bumped
  -- the counter while we hold the key.
  return {1, tonumber(redis.call('GET', KEYS[2]) or '0')}
end

local head = redis.call('ZRANGE', KEYS[3], 0, 0)[1]
if not cur and (not head or head == ARGV[1]) then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  if redis.call('EXISTS', KEYS[2]) == 0 then
    -- Seed a missing counter with the server time in microseconds, so
    -- tokens keep increasing after the server restarts empty.
    redis.call('SET', KEYS[2], t[1] .. string.format('%06d', tonumber(t[2])))
  end
  local token = redis.call('INCR', KEYS[2])
  redis.call('ZREM', KEYS[3], ARGV[1])
  redis.call('ZREM', KEYS[4], ARGV[1])
  return {1, token}
end

-- Not ours: tell the caller how long it may sleep without missing a
-- free lock (the holder's remaining ttl, or the head waiter's deadline).
local hint = -1
if cur then
  hint = redis.call('PTTL', KEYS[1])
else
  local d = redis.call('ZSCORE', KEYS[4], head)
  if d then hint = tonumber(d) - now end
end

if ARGV[3] == '1' then
  if not redis.call('ZSCORE', KEYS[3], ARGV[1]) then
    local last = redis.call('ZRANGE', KEYS[3], -1, -1, 'WITHSCORES')
    local ticket = 1
    if last[2] then ticket = tonumber(last[2]) + 1 end
    redis.call('ZADD', KEYS[3], ticket, ARGV[1])
  end
  redis.call('ZADD', KEYS[4], now + tonumber(ARGV[4]), ARGV[1])
  redis.call('PEXPIRE', KEYS[3], 2 * tonumber(ARGV[4]))
  redis.call('PEXPIRE', KEYS[4], 2 * tonumber(ARGV[4]))
end
return {0, hint}
