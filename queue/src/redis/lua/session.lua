-- session.lua: whether a visitor's session still runs (by the store's clock).
-- ARGV[2] the visitor's seq
-- Returns 1 (running), 0 (ended, left or never admitted) or UNKNOWN_ROOM.

local room = load_room(now_ms())
if not room then
  return UNKNOWN_ROOM
end
local mine = member_of(room, ARGV[2])
local until_ms = mine and tonumber(redis.call('ZSCORE', ACTIVE, mine))
if until_ms and until_ms > now_ms() then
  return 1
end
return 0
