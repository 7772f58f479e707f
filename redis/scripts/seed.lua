-- seed.lua: the fencing token of a holder whose counter needs raising:
-- found missing by its pipelined SET NX PX + INCR (first use, or the
-- server restarted empty), it is raised to the server time in µs, as the
-- acquire script seeds it, so tokens keep increasing; and it is raised
-- above ARGV[1], when given, the highest token this client was granted on
-- the lock before (the counter was reseeded from a clock that went back).
-- Run while holding the lock.
-- KEYS[1] token counter. ARGV[1] (optional) a token to exceed.
-- Returns the token.
local n = tonumber(redis.call('GET', KEYS[1]) or '0')
local m = n
if m < 1000000000000000 then
  local t = redis.call('TIME')
  local seed = tonumber(t[1]) * 1000000 + tonumber(t[2])
  if seed > m then m = seed end
end
local floor = tonumber(ARGV[1] or '0') or 0
if m <= floor then m = floor + 1 end
if m > n then
  redis.call('SET', KEYS[1], string.format('%d', m))
end
return m
