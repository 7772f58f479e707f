-- release.lua: release the lock if it holds our value, handing it straight
-- to the first live waiter in line.
-- KEYS[1] lock key, KEYS[2] token counter, KEYS[3] line (zset).
-- ARGV[1] our value, ARGV[2] our entry in the line to leave ("" if none),
-- ARGV[3] "1" to draw the next holder's fencing token ("c" on Redis
-- Cluster: see draw), ARGV[4] "d" when the releasing holder's lease is
-- live (the key must hold our value), and then ARGV[5] the lock's ttl in
-- ms, ARGV[6] our ticket to also leave every other entry of ours at it
-- ("" or absent: only ARGV[2]; a Redlock round whose reply was lost may
-- have left one ARGV[2] does not name); ARGV[4] and ARGV[5] "c" on Redis
-- Cluster instead (then ARGV[3] is "c" too).
-- Returns 1 if the lock held our value, 0 otherwise.
--
-- An entry is "<value>|<deadline, server ms>|<ttl ms>|<channel>". The
-- first entry whose deadline has not passed becomes the holder (its value
-- with its ttl, and a token) and "<entry> <token>" is published on its
-- channel, so it learns of the grant without another round trip (and can
-- tell it from a grant to an older entry of its own); on Redis Cluster the
-- channel is sharded, in the slot of these keys, and the publish is
-- SPUBLISH. A holder
-- value ending in "+" was marked by a waiter: without the mark nobody
-- joined the line while we held the lock, and there is nothing to hand on.
--
-- With "d" the key is read and deleted by one GETDEL, so an uncontended
-- release runs one command. Should the key hold another value (it was
-- deleted behind the live holder's back: FLUSHALL, DEL, a restart, and
-- someone took the lock since), it is set back at once, with our ttl
-- since GETDEL does not return the other holder's. Without "d" (a wait
-- given up, a lost lease, Redlock) the key is read first and deleted
-- only if ours.
local v = ARGV[1]

-- A fencing token: the counter's next value. Without it (first use, or
-- the server restarted empty) the counter is seeded with the server time
-- in µs so tokens keep increasing; with ARGV[3] "c" (Redis Cluster) it is
-- never below that time, so a counter that lost its last increments in a
-- failover to a replica still gives a larger token than any granted
-- before (see the package doc).
local function draw()
  local tok = redis.call('INCR', KEYS[2])
  if tok < 1000000000000000 or ARGV[3] == 'c' then
    local t = redis.call('TIME')
    local seed = tonumber(t[1]) * 1000000 + tonumber(t[2])
    if seed > tok then
      redis.call('SET', KEYS[2], string.format('%d', seed))
      tok = seed
    end
  end
  return tok
end

-- A channel with a hash tag is a Redis Cluster waiter's, sharded in the
-- slot of our keys (SPUBLISH); else a single server's.
local function wake(ch, msg)
  if string.find(ch, '{', 1, true) then
    redis.call('SPUBLISH', ch, msg)
  else
    redis.call('PUBLISH', ch, msg)
  end
end

if ARGV[4] == 'c' then
  -- Redis Cluster: while the slot migrates, a key that is missing on
  -- this node cannot be touched (the script fails there, half done), so
  -- no key is read or written after this script may have deleted it:
  -- the holder's key is read, then overwritten or deleted last, and the
  -- line is read whole before its dead entries, the new holder's and
  -- ours leave it in one ZREM, last.
  local drop = {}
  if ARGV[2] ~= '' then drop[1] = ARGV[2] end
  local function leave()
    if #drop > 0 then redis.call('ZREM', KEYS[3], unpack(drop)) end
  end
  local cur = redis.call('GET', KEYS[1])
  if cur == v then
    redis.call('DEL', KEYS[1])
    leave()
    return 1
  end
  if cur ~= v .. '+' then
    leave()
    return 0
  end
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  for i = 0, 9 do
    local r = redis.call('ZRANGE', KEYS[3], i * 100, i * 100 + 99)
    if #r == 0 then break end
    for _, e in ipairs(r) do
      local nv, dl, ttl, ch = string.match(e, '^([^|]+)|(%d+)|(%d+)|(.+)$')
      drop[#drop + 1] = e
      if nv and nv ~= v and tonumber(dl) >= now then
        redis.call('SET', KEYS[1], nv .. '+', 'PX', ttl)
        local tok = draw()
        wake(ch, e .. ' ' .. string.format('%d', tok))
        leave()
        return 1
      end
    end
  end
  redis.call('DEL', KEYS[1])
  leave()
  return 1
end

if ARGV[2] ~= '' then redis.call('ZREM', KEYS[3], ARGV[2]) end
if ARGV[6] and ARGV[6] ~= '' then
  local mine = ARGV[1] .. '|'
  for _, e in ipairs(redis.call('ZRANGEBYSCORE', KEYS[3], ARGV[6], ARGV[6])) do
    if string.sub(e, 1, #mine) == mine then redis.call('ZREM', KEYS[3], e) end
  end
end
local gone = ARGV[4] == 'd'
local cur
if gone then
  cur = redis.call('GETDEL', KEYS[1])
  if cur == ARGV[1] then return 1 end
  if cur and cur ~= ARGV[1] .. '+' then
    redis.call('SET', KEYS[1], cur, 'PX', ARGV[5])
    return 0
  end
  if not cur then return 0 end
else
  cur = redis.call('GET', KEYS[1])
  if cur == ARGV[1] then
    redis.call('DEL', KEYS[1])
    return 1
  end
  if cur ~= ARGV[1] .. '+' then
    return 0
  end
end

local now = nil
for _ = 1, 1000 do
  local e = redis.call('ZPOPMIN', KEYS[3])
  if #e == 0 then break end
  if not now then
    local t = redis.call('TIME')
    now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  local nv, dl, ttl, ch = string.match(e[1], '^([^|]+)|(%d+)|(%d+)|(.+)$')
  if nv and tonumber(dl) >= now then
    redis.call('SET', KEYS[1], nv .. '+', 'PX', ttl)
    local tok = 0
    if ARGV[3] == '1' then tok = draw() end
    wake(ch, e[1] .. ' ' .. string.format('%d', tok))
    return 1
  end
end
if not gone then redis.call('DEL', KEYS[1]) end
return 1
