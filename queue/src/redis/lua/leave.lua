-- leave.lua: give up a place in line or an active session; the slot (and
-- the client's place under the cap) is free at once.
-- ARGV[2] the visitor's seq
-- ARGV[3] how long (ms) a departure from the line is remembered
-- Returns how many entries were removed (0 or 1), or UNKNOWN_ROOM.

local now = now_ms()
local room = load_room(now)
if not room then
  return UNKNOWN_ROOM
end
local mine = member_of(room, ARGV[2])
if not mine then
  return 0
end
local waited = redis.call('ZREM', WAITING, mine)
local n = waited + redis.call('ZREM', ACTIVE, mine)
-- Snapshots answer polls without the store: they hear of it at their next
-- observation, so a left ticket never reads waiting for long.
if waited == 1 then
  redis.call('SETBIT', PRESENT, mine, 0)
  redis.call('ZADD', DEPARTED, int(now), mine)
  redis.call('ZREMRANGEBYSCORE', DEPARTED, '-inf', int(now - tonumber(ARGV[3])))
end
release(room, { mine })
return n
