-- figures.lua: a room's settings and live figures, read in one atomic step.
-- Returns {settings JSON, state, last member (places given), admitted,
-- abandoned, rate_est, seats, rate_factor, waiting, active, oldest wait ms
-- or -1, clients holding places under the cap, places they hold, accounts
-- indexed}, all as text, or UNKNOWN_ROOM.

local v = redis.call('HMGET', ROOM, 'settings', 'state', 'seq', 'admitted', 'abandoned', 'rate_est',
  'seats', 'rate_factor')
if not v[2] then
  return UNKNOWN_ROOM
end
-- A room never given a sale signal sells as usual.
v[7] = v[7] or 'available'
v[8] = v[8] or '1'
local now = now_ms()
local oldest = -1
local front = redis.call('ZRANGE', WAITING, 0, 0)
if front[1] then
  local m = redis.call('ZREVRANGEBYSCORE', MARKS, front[1], '-inf', 'LIMIT', 0, 1)
  if m[1] then
    oldest = math.max(0, now - tonumber(m[1]))
  end
end
for i = 1, #v do
  v[i] = v[i] or ''
end
v[#v + 1] = tostring(redis.call('ZCARD', WAITING))
v[#v + 1] = tostring(redis.call('ZCOUNT', ACTIVE, '(' .. int(now), '+inf'))
v[#v + 1] = int(oldest)
v[#v + 1] = tostring(redis.call('HLEN', HOLDERS))
v[#v + 1] = tostring(redis.call('HLEN', HELD_BY))
v[#v + 1] = redis.call('HGET', ROOM, 'accounts') or '0'
return v
