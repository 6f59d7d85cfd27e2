-- join.lua: a batch of joins, each of which gives a place in line, keeps an
-- existing one, or admits at once; run in turn, in the order given, so each
-- gets its own member from the one counter and exactly the answer it would
-- have got alone at that point.
-- ARGV[2] span: places taken after the opening are ordered by span + member,
--         behind every pre-queue draw
-- then four arguments per join, ARGV[3 + 4i ..]:
--   seq of the visitor's valid ticket, or '' when it has none
--   pre-queue draw: random integer in [0, span)
--   the client (for the per-client cap)   its cap, 0 = none
-- Returns one flat array: room_figures() once, then standing() for each
-- join, in order (five values each), with outcome waiting | admitted |
-- closed | sold_out | limit (the client already holds its cap of places: in
-- line or inside); or UNKNOWN_ROOM. The room's figures are the same for
-- every join of a batch, so they are sent (and parsed) once. A waiter who
-- rejoins while every seat is booked reads sold_out and keeps its place.

local function join_one(room, now, span, existing, draw, holder, max_places)
  -- A valid ticket whose place still stands gets that place back, never a
  -- second one; those inside stay inside even when the room stops taking places.
  local mine = member_of(room, existing) -- nil: no ticket, or a seq never given
  if mine then
    local until_ms = tonumber(redis.call('ZSCORE', ACTIVE, mine))
    if until_ms and until_ms > now then
      return standing(room, 'admitted', mine, nil, until_ms)
    end
    if redis.call('ZSCORE', WAITING, mine) then
      if refusing(room) then
        return standing(room, 'closed', mine)
      end
      touch(room, now, mine)
      if room.seats == 'sold_out' then
        return standing(room, 'sold_out', mine)
      end
      return standing(room, 'waiting', mine, position(room, now, mine))
    end
  end

  if refusing(room) then
    return standing(room, 'closed')
  end
  if room.seats == 'sold_out' or (room.max_line > 0 and room.last_member >= room.max_line) then
    return standing(room, 'sold_out')
  end
  if max_places > 0 and held(holder) >= max_places then
    -- A session whose time is up holds nothing, even before a tick ends it.
    expire(now)
    if held(holder) >= max_places then
      return standing(room, 'limit')
    end
  end

  -- The order of the line is this counter: one atomic step, never a clock.
  -- (The ticket gets the seq base + member; see member_of.)
  local member = redis.call('HINCRBY', ROOM, 'seq', 1)
  room.last_member = member
  if max_places > 0 then
    redis.call('HINCRBY', HOLDERS, holder, 1)
    redis.call('HSET', HELD_BY, int(member), holder)
  end
  mark(room, now, member)
  local is_open = opened(room, now)

  if admitting(room, now) then
    if room.method == 'passthrough' then
      -- The gate is off: everyone is let in, whatever capacity and rate say.
      return standing(room, 'admitted', member, nil, admit_one(room, now, int(member)))
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
          return standing(room, 'admitted', member, nil, admit_one(room, now, int(member)))
        end
        save_budget(room)
      end
    end
  end

  local score
  if is_open then
    score = span + member
  else
    score = draw
  end
  redis.call('ZADD', WAITING, int(score), int(member))
  redis.call('SETBIT', PRESENT, member, 1)
  touch(room, now, int(member))
  return standing(room, 'waiting', member, position(room, now, int(member)))
end

local now = now_ms()
local room = load_room(now)
if not room then
  return UNKNOWN_ROOM
end
local span = tonumber(ARGV[2])
local out = room_figures(room, now)
for i = 3, #ARGV, 4 do
  for _, value in ipairs(join_one(room, now, span, ARGV[i], tonumber(ARGV[i + 1]), ARGV[i + 2],
    tonumber(ARGV[i + 3]))) do
    out[#out + 1] = value
  end
end
return out
