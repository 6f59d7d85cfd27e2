-- figures.lua: a room's settings and live figures, read in one atomic step.
-- Returns {state, capacity, rate, session_ms, abandon_ms, opens_at, max_line,
-- seq, admitted, abandoned, rate_est, waiting, active}, or {} when the room
-- does not exist. Numbers are returned as text.

local v = redis.call('HMGET', ROOM, 'state', 'capacity', 'rate', 'session_ms', 'abandon_ms',
  'opens_at', 'max_line', 'seq', 'admitted', 'abandoned', 'rate_est')
if not v[1] then
  return {}
end
local active = redis.call('ZCOUNT', ACTIVE, '(' .. int(now_ms()), '+inf')
v[#v + 1] = tostring(redis.call('ZCARD', WAITING))
v[#v + 1] = tostring(active)
for i = 1, #v do
  v[i] = v[i] or ''
end
return v
