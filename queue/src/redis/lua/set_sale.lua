-- set_sale.lua: record what the sale behind a room allows (the promoter
-- writes it when it changes); put_room.lua leaves these fields alone.
-- ARGV[2] available | none_available | sold_out
-- ARGV[3] rate factor in (0, 1], checked by the caller
-- Returns 1, or UNKNOWN_ROOM.

if redis.call('EXISTS', ROOM) == 0 then
  return UNKNOWN_ROOM
end
redis.call('HSET', ROOM, 'seats', ARGV[2], 'rate_factor', ARGV[3])
return 1
