-- join.lua: give a place in line, keep an existing one, or admit at once.
-- ARGV[2] seq of the visitor's valid ticket, or '' when it has none
-- ARGV[3] pre-queue draw: random integer in [0, span)
-- ARGV[4] span: places taken after the opening are ordered by span + member,
--         behind every pre-queue draw
-- ARGV[5] the client (for the per-client cap)  ARGV[6] its cap, 0 = none
-- Returns view() with outcome waiting | admitted | closed | sold_out | limit
-- (the client already holds its cap of places: in line or inside), or
-- UNKNOWN_ROOM. A waiter who rejoins while every seat is booked reads
-- sold_out and keeps its place.

local now = now_ms()
local room = load_room(now)
if not room then
  return UNKNOWN_ROOM
end

-- A valid ticket whose place still stands gets that place back, never a
-- second one; those inside stay inside even when the room stops taking places.
local mine = member_of(room, ARGV[2]) -- nil: no ticket, or a seq never given
if mine then
  local until_ms = tonumber(redis.call('ZSCORE', ACTIVE, mine))
  if until_ms and until_ms > now then
    return view(room, now, 'admitted', mine, nil, until_ms)
  end
  if redis.call('ZSCORE', WAITING, mine) then
    if refusing(room) then
      return view(room, now, 'closed', mine)
    end
    touch(room, now, mine)
    if room.seats == 'sold_out' then
      return view(room, now, 'sold_out', mine)
    end
    return view(room, now, 'waiting', mine, position(room, now, mine))
  end
end

if refusing(room) then
  return view(room, now, 'closed')
end
if room.seats == 'sold_out' or (room.max_line > 0 and room.last_member >= room.max_line) then
  return view(room, now, 'sold_out')
end
local holder, max_places = ARGV[5], tonumber(ARGV[6])
if max_places > 0 and held(holder) >= max_places then
  -- A session whose time is up holds nothing, even before a tick ends it.
  expire(now)
  if held(holder) >= max_places then
    return view(room, now, 'limit')
  end
end

-- The order of the line is this counter: one atomic step, never a clock.
-- (The ticket gets the seq base + member; see member_of.)
local member = redis.call('HINCRBY', ROOM, 'seq', 1)
if max_places > 0 then
  redis.call('HINCRBY', HOLDERS, holder, 1)
  redis.call('HSET', HELD_BY, int(member), holder)
end
mark(room, now, member)
local is_open = opened(room, now)

if admitting(room, now) then
  if room.method == 'passthrough' then
    -- The gate is off: everyone is let in, whatever capacity and rate say.
    return view(room, now, 'admitted', member, nil, admit_one(room, now, int(member)))
  end
  -- Nobody waits and there is room: let the visitor in now rather than make
  -- it wait a tick in an empty line.
  if redis.call('ZCARD', WAITING) == 0 then
    expire(now)
    if redis.call('ZCARD', ACTIVE) < room.capacity then
      refill(room, now)
      if room.allow >= 1 then
        room.allow = room.allow - 1
        save_budget(room)
        return view(room, now, 'admitted', member, nil, admit_one(room, now, int(member)))
      end
      save_budget(room)
    end
  end
end

local score
if is_open then
  score = tonumber(ARGV[4]) + member
else
  score = tonumber(ARGV[3])
end
redis.call('ZADD', WAITING, int(score), int(member))
touch(room, now, int(member))
return view(room, now, 'waiting', member, position(room, now, int(member)))
