-- status.lua: where a visitor stands; records that it still polls.
-- ARGV[2] the visitor's seq (from its verified ticket)
-- Returns view() with outcome admitted | waiting | gone | closed, or
-- {'unknown'} when the room does not exist.

local now = now_ms()
local room = load_room(now)
if not room then
  return { 'unknown' }
end
local mine = member_of(room, ARGV[2]) -- nil: a number this room never gave
local seq = tonumber(mine)

local until_ms = mine and tonumber(redis.call('ZSCORE', ACTIVE, mine))
if until_ms and until_ms > now then
  return view(room, now, 'admitted', seq, nil, until_ms)
end
if refusing(room) then
  return view(room, now, 'closed', seq)
end
if not (mine and redis.call('ZSCORE', WAITING, mine)) then
  return view(room, now, 'gone', seq)
end
redis.call('ZADD', SEEN, int(now), mine)
return view(room, now, 'waiting', seq, position(room, now, mine))
