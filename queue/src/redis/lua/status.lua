-- status.lua: where a visitor stands; records that it still polls.
-- ARGV[2] the visitor's seq (from its verified ticket)
-- Returns view() with outcome admitted | waiting | gone | closed | sold_out, or
-- UNKNOWN_ROOM.

local now = now_ms()
local room = load_room(now)
if not room then
  return UNKNOWN_ROOM
end
local mine = member_of(room, ARGV[2]) -- nil: a seq this room never gave

local until_ms = mine and tonumber(redis.call('ZSCORE', ACTIVE, mine))
if until_ms and until_ms > now then
  return view(room, now, 'admitted', mine, nil, until_ms)
end
if refusing(room) then
  return view(room, now, 'closed', mine)
end
if not (mine and redis.call('ZSCORE', WAITING, mine)) then
  return view(room, now, 'gone', mine)
end
touch(room, now, mine)
-- Every seat booked: the waiter hears so at once but keeps its place while
-- it polls, in case seats come back.
if room.seats == 'sold_out' then
  return view(room, now, 'sold_out', mine)
end
return view(room, now, 'waiting', mine, position(room, now, mine))
