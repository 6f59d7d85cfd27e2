-- set_state.lua: open, pause or close a room.
-- ARGV[2] open | paused | closed
-- Returns 1, or -1 when the room does not exist.

if redis.call('EXISTS', ROOM) == 0 then
  return -1
end
redis.call('HSET', ROOM, 'state', ARGV[2])
return 1
