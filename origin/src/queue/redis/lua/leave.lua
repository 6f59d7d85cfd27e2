-- leave.lua: give up a place in line or an active session; the slot is free at once.
-- ARGV[2] the visitor's seq
-- Returns how many entries were removed (0 or 1), or -1 when the room does not exist.

if redis.call('EXISTS', ROOM) == 0 then
  return -1
end
local n = redis.call('ZREM', WAITING, ARGV[2]) + redis.call('ZREM', ACTIVE, ARGV[2])
redis.call('ZREM', SEEN, ARGV[2])
return n
