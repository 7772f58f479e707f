-- seed.lua: the fencing token of a holder whose pipelined SET NX PX +
-- INCR found the counter missing (first use, or the server restarted
-- empty): the counter raised to the server time in µs, as the acquire
-- script seeds it, so tokens keep increasing. Run while holding the lock.
-- KEYS[1] token counter. Returns the token.
local n = tonumber(redis.call('GET', KEYS[1]) or '0')
if n < 1000000000000000 then
  local t = redis.call('TIME')
  local seed = tonumber(t[1]) * 1000000 + tonumber(t[2])
  if seed > n then
    redis.call('SET', KEYS[1], string.format('%d', seed))
    n = seed
  end
end
return n
