-- set_state.lua: open, pause or close a room.
-- ARGV[2] open | paused | closed
-- Returns 1, or UNKNOWN_ROOM.

if redis.call('EXISTS', ROOM) == 0 then
  return UNKNOWN_ROOM
end
redis.call('HSET', ROOM, 'state', ARGV[2])
return 1
