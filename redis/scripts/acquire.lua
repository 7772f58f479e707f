-- acquire.lua: take the lock, or join (or keep our place in) its line.
-- KEYS[1] lock key, KEYS[2] token counter, KEYS[3] line (zset).
-- ARGV[1] our value (32 hex digits), ARGV[2] lock ttl ms, ARGV[3] "t" to
-- only try, "w" to join the line when not granted, "f" for Redlock's fair
-- wait (the key goes to the earliest ticket; see below), ARGV[4] "1" to draw a
-- fencing token ("c" on Redis Cluster: see release.lua's draw; "0" for
-- none), ARGV[5] our current entry in the line ("" if none),
-- ARGV[6] our ticket (zset score; "" to take the server time in µs),
-- ARGV[7] the pub/sub channel that wakes us, ARGV[8] how long our entry
-- lives without a refresh, ms, ARGV[9] "1" to also leave every other entry
-- of ours at our ticket (a Redlock round whose reply was lost may have left
-- one ARGV[5] does not name; "" or absent: only ARGV[5]).
-- Returns {1, token, pttl} when held, {0, pttl, entry, ticket} when in
-- line, {0, pttl} when only trying.
local v = ARGV[1]

-- leave takes our entries out of the line before we take the key or
-- join again.
local function leave()
  if ARGV[9] == '1' then
    local mine = v .. '|'
    for _, e in ipairs(redis.call('ZRANGEBYSCORE', KEYS[3], ARGV[6], ARGV[6])) do
      if string.sub(e, 1, #mine) == mine then redis.call('ZREM', KEYS[3], e) end
    end
  end
  if ARGV[5] ~= '' then redis.call('ZREM', KEYS[3], ARGV[5]) end
end

local function draw()
  if ARGV[4] == '0' then return 0 end
  local n = redis.call('INCR', KEYS[2])
  -- On Redis Cluster ("c") never below the server time: see release.lua.
  if n < 1000000000000000 or ARGV[4] == 'c' then
    -- The counter was missing (first use, or the server restarted empty):
    -- seed it with the server time in µs so tokens keep increasing.
    local t = redis.call('TIME')
    local seed = tonumber(t[1]) * 1000000 + tonumber(t[2])
    if seed > n then
      redis.call('SET', KEYS[2], string.format('%d', seed))
      n = seed
    end
  end
  return n
end

local cur
if ARGV[3] == 'f' then
  -- Fair wait (Redlock): the key goes to the earliest ticket among the
  -- live waiters in line and us, so that every master grants the same
  -- waiter. A free key is taken only if no live waiter asked before us;
  -- a key that is ours already (handed to us, or taken in an earlier
  -- round) is handed on to such a waiter, as a release would, so that a
  -- split vote resolves towards the earliest waiter instead of being
  -- traded back and forth; else its ttl is renewed.
  cur = redis.call('GET', KEYS[1])
  local mine = cur == v or cur == v .. '+'
  if not cur or mine then
    local t = redis.call('TIME')
    local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    local ours = tonumber(ARGV[6]) or math.huge
    -- The first live entry that is not ours (dead ones are dropped).
    local ov, oe, os = nil, nil, nil
    local i = 0
    for _ = 1, 100 do
      local r = redis.call('ZRANGE', KEYS[3], i, i, 'WITHSCORES')
      if #r == 0 then break end
      local hv, dl = string.match(r[1], '^([^|]+)|(%d+)|')
      if hv == v then
        i = i + 1
      elseif hv and tonumber(dl) >= now then
        ov, oe, os = hv, r[1], tonumber(r[2])
        break
      else
        redis.call('ZREM', KEYS[3], r[1])
      end
    end
    if ov and (os < ours or (os == ours and ov < v)) then
      if mine then
        local ttl, ch = string.match(oe, '^[^|]+|%d+|(%d+)|(.+)$')
        redis.call('ZREM', KEYS[3], oe)
        redis.call('SET', KEYS[1], ov .. '+', 'PX', ttl)
        redis.call('PUBLISH', ch, oe .. ' 0')
        cur = ov .. '+'
      else
        cur = ''
      end
    elseif mine then
      if ov then
        -- Others wait behind us: mark the value for our release.
        redis.call('SET', KEYS[1], v .. '+', 'PX', ARGV[2])
      else
        redis.call('PEXPIRE', KEYS[1], ARGV[2])
      end
      leave()
      local tok = 0
      if ARGV[4] ~= '0' then tok = tonumber(redis.call('GET', KEYS[2]) or '0') end
      return {1, tok, tonumber(ARGV[2])}
    elseif ov then
      redis.call('SET', KEYS[1], v .. '+', 'PX', ARGV[2])
    else
      redis.call('SET', KEYS[1], v, 'PX', ARGV[2])
    end
  end
else
  cur = redis.call('SET', KEYS[1], v, 'NX', 'GET', 'PX', ARGV[2])
end
if not cur then
  local tok = draw()
  if ARGV[5] ~= '' and ARGV[3] ~= 'f' then
    -- We were in line, so others may be: mark the value for our release.
    redis.call('ZREM', KEYS[3], ARGV[5])
    redis.call('APPEND', KEYS[1], '+')
  elseif ARGV[3] == 'f' then
    leave()
  end
  return {1, tok, tonumber(ARGV[2])}
end
if cur == v or cur == v .. '+' then
  -- Ours already: handed to us by a release, or a retry of a grant whose
  -- reply was lost. Nobody else draws a token while we hold the key.
  local tok = 0
  if ARGV[4] ~= '0' then tok = tonumber(redis.call('GET', KEYS[2]) or '0') end
  return {1, tok, redis.call('PTTL', KEYS[1])}
end
if ARGV[3] == 't' then
  return {0, redis.call('PTTL', KEYS[1])}
end

-- Mark a baton holder's value (32 hex digits, alone or before "." and
-- the holder's identity; not marked yet), so its release looks at the line.
-- A value handed over is marked already: the last byte ("+" is 43) is
-- looked at first, so that the usual join does no string work here.
if string.byte(cur, -1) ~= 43 and string.len(cur) >= 32 and
   not string.find(string.sub(cur, 1, 32), '[^0-9a-f]') and
   (string.len(cur) == 32 or string.sub(cur, 33, 33) == '.') then
  redis.call('APPEND', KEYS[1], '+')
end
local pttl = redis.call('PTTL', KEYS[1])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ticket = ARGV[6]
if ticket == '' then ticket = t[1] .. string.format('%06d', tonumber(t[2])) end
local life = tonumber(ARGV[8])
local entry = v .. '|' .. string.format('%d', now + life) .. '|' .. ARGV[2] .. '|' .. ARGV[7]
if ARGV[4] == 'c' then
  -- Redis Cluster: the new entry first, so that the line never empties
  -- here: a key this script deleted could not be written again while its
  -- slot migrates.
  redis.call('ZADD', KEYS[3], ticket, entry)
  if ARGV[5] ~= '' and ARGV[5] ~= entry then redis.call('ZREM', KEYS[3], ARGV[5]) end
else
  leave()
  redis.call('ZADD', KEYS[3], ticket, entry)
end
-- The line outlives every live entry: its expiry is pushed to two entry
-- lives whenever less than one is left, so an entry (which lives one) never
-- outlasts it, and a line whose waiters all died goes away. (PEXPIRE is a
-- write, rewritten for replication; PTTL is the cheaper of the two.)
if redis.call('PTTL', KEYS[3]) < life then redis.call('PEXPIRE', KEYS[3], 2 * life) end
return {0, pttl, entry, ticket}
