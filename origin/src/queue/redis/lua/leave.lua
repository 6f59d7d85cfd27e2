-- leave.lua: give up a place in line or an active session; the slot (and
-- the client's place under the cap) is free at once.
-- ARGV[2] the visitor's seq
-- Returns how many entries were removed (0 or 1), or UNKNOWN_ROOM.

local room = load_room(now_ms())
if not room then
  return UNKNOWN_ROOM
end
local mine = member_of(room, ARGV[2])
if not mine then
  return 0
end
local waited = redis.call('ZREM', WAITING, mine)
if waited == 1 then
  redis.call('SETBIT', PRESENT, mine, 0)
end
local n = waited + redis.call('ZREM', ACTIVE, mine)
release({ mine })
return n
