-- session.lua: whether a visitor's session still runs (by the store's clock).
-- ARGV[2] the visitor's seq
-- Returns 1 (running), 0 (ended, left or never admitted) or -1 (no such room).

if redis.call('EXISTS', ROOM) == 0 then
  return -1
end
local until_ms = tonumber(redis.call('ZSCORE', ACTIVE, ARGV[2]))
if until_ms and until_ms > now_ms() then
  return 1
end
return 0
