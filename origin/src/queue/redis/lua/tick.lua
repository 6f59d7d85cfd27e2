-- tick.lua: one promoter step for one room.
-- ARGV[2] most waiters dropped for not polling in one tick
-- ARGV[3] most visitors admitted in one tick
-- ARGV[4] the pre-queue span (scores below it are pre-queue draws)
-- Both bound how long the script holds Redis.
-- Returns {active, waiting, expired, abandoned, seq of each admitted...} after the
-- step, or UNKNOWN_ROOM.

local now = now_ms()
local room = load_room(now)
if not room then
  return UNKNOWN_ROOM
end

local expired = expire(now)

-- Waiters who stopped polling lose their place (paused rooms too).
local stale = redis.call('ZRANGEBYSCORE', SEEN, '-inf', int(now - room.abandon_ms),
  'LIMIT', 0, tonumber(ARGV[2]))
for i = 1, #stale, CHUNK do
  local part = { unpack(stale, i, math.min(i + CHUNK - 1, #stale)) }
  redis.call('ZREM', WAITING, unpack(part))
  redis.call('ZREM', SEEN, unpack(part))
end
release(stale)
if #stale > 0 then
  redis.call('HINCRBY', ROOM, 'abandoned', #stale)
end

local waiting = redis.call('ZCARD', WAITING)
local active = redis.call('ZCARD', ACTIVE)
local out = { 0, 0, expired, #stale }

-- Picks k visitors to let in: the front of the line, or a random draw
-- among everyone waiting (a lottery).
local function pick(k)
  if room.method == 'random' then
    local drawn = redis.call('ZRANDMEMBER', WAITING, k)
    for i = 1, #drawn, CHUNK do
      redis.call('ZREM', WAITING, unpack(drawn, i, math.min(i + CHUNK - 1, #drawn)))
    end
    return drawn
  end
  local popped = redis.call('ZPOPMIN', WAITING, k)
  local members = {}
  for i = 1, #popped, 2 do
    members[#members + 1] = popped[i]
  end
  return members
end

-- No seat to sell is like paused: nobody is let in and the achieved rate is
-- left as it was, so it does not decay to zero while every seat is held.
if admitting(room, now) and room.method ~= 'reject' then
  refill(room, now)
  local k
  if room.method == 'passthrough' then
    -- The gate is off: the line empties as fast as the bound allows.
    k = math.min(waiting, tonumber(ARGV[3]))
  else
    k = math.min(math.floor(room.allow), room.capacity - active, waiting, tonumber(ARGV[3]))
  end
  if k > 0 then
    local members = pick(k)
    local until_ms = int(now + room.session_ms)
    for i = 1, #members, CHUNK do
      local adds = {}
      for j = i, math.min(i + CHUNK - 1, #members) do
        adds[#adds + 1] = until_ms
        adds[#adds + 1] = members[j]
        out[#out + 1] = room.base + tonumber(members[j])
      end
      redis.call('ZADD', ACTIVE, unpack(adds))
      redis.call('ZREM', SEEN, unpack(members, i, math.min(i + CHUNK - 1, #members)))
    end
    if room.method ~= 'passthrough' then
      room.allow = room.allow - k
    end
    redis.call('HINCRBY', ROOM, 'admitted', k)
  else
    k = 0
  end
  save_budget(room)

  -- The achieved rate, as an exponentially weighted average over about 30 s,
  -- counted only while people waited (an empty line says nothing about the
  -- rate) and skipping gaps between ticks (a stopped promoter is not a slow one).
  local dt = room.rate_at and (now - room.rate_at) or 0
  if waiting > 0 and dt > 0 and dt <= 5000 then
    local alpha = 1 - math.exp(-dt / 30000)
    room.rate_est = room.rate_est + alpha * (k * 1000 / dt - room.rate_est)
    redis.call('HSET', ROOM, 'rate_est', real(room.rate_est))
  end
  redis.call('HSET', ROOM, 'rate_at', int(now))
  waiting = waiting - k
  active = active + k
end

-- The schedule every status reads (Schedule in queue/mod.rs), in the field
-- 'eta'. Sessions that ended early (left, booked) since the last tick are
-- what the counters cannot account for: inside then, plus admitted since,
-- minus expired now, minus inside now. Their rate per session inside is
-- averaged over about 30 s, skipping gaps between ticks as the rate does.
local t = redis.call('HMGET', ROOM, 'admitted', 'turn_at', 'turn_active', 'turn_admitted',
  'leaves', 'inside')
local admitted_total = tonumber(t[1]) or 0
local leaves, inside = tonumber(t[5]) or 0, tonumber(t[6]) or 0
local turn_dt = t[2] and (now - tonumber(t[2])) or 0
if turn_dt > 0 and turn_dt <= 5000 then
  local before = tonumber(t[3])
  local early = math.max(0, before + admitted_total - tonumber(t[4]) - expired - active)
  local alpha = 1 - math.exp(-turn_dt / 30000)
  leaves = leaves + alpha * (early * 1000 / turn_dt - leaves)
  inside = inside + alpha * (before - inside)
end
-- Sessions inside by when they end, in eighths of the session length.
local eta = { int(now), real(room.rate), real(room.allow or math.max(room.rate, 1)),
  int(room.capacity), int(room.session_ms), int(math.max(0, room.capacity - active)) }
local lo = '(' .. int(now)
for j = 1, 8 do
  local hi = '+inf'
  if j < 8 then
    hi = int(now + math.floor(j * room.session_ms / 8))
  end
  eta[#eta + 1] = int(redis.call('ZCOUNT', ACTIVE, lo, hi))
  lo = '(' .. hi
end
eta[#eta + 1] = real(leaves)
eta[#eta + 1] = real(inside)
redis.call('HSET', ROOM, 'turn_at', int(now), 'turn_active', int(active),
  'turn_admitted', int(admitted_total), 'leaves', real(leaves), 'inside', real(inside),
  'eta', table.concat(eta, ' '))

-- Join-time marks older than the one the front of the line needs can go.
-- Only once the pre-queue is gone: until then the front is a random draw.
if waiting == 0 then
  redis.call('DEL', MARKS)
else
  local front = redis.call('ZRANGE', WAITING, 0, 0, 'WITHSCORES')
  if tonumber(front[2]) >= tonumber(ARGV[4]) then
    local keep = redis.call('ZREVRANGEBYSCORE', MARKS, front[1], '-inf', 'WITHSCORES', 'LIMIT', 0, 1)
    if keep[2] then
      redis.call('ZREMRANGEBYSCORE', MARKS, '-inf', '(' .. keep[2])
    end
  end
end

out[1] = active
out[2] = waiting
return out
