-- tick.lua: one promoter step for one room.
-- ARGV[2] most waiters dropped for not polling in one tick
-- ARGV[3] most visitors admitted in one tick
-- ARGV[4] the pre-queue span (scores below it are pre-queue draws)
-- Both bound how long the script holds Redis.
-- Returns {active, waiting, expired, abandoned, draw, seq of each admitted...}
-- after the step, or UNKNOWN_ROOM. draw is '' or, when the opening has come,
-- the pre-queue is not drawn yet and this caller is to apply the draw (no
-- other instance claimed it in the last DRAW_CLAIM_MS), 'seed lo hi base'
-- (draw.rs); nobody is let in until it is applied.

local now = now_ms()
local room = load_room(now)
if not room then
  return UNKNOWN_ROOM
end

local expired = expire(room, now)

-- Waiters who stopped polling lose their place (paused rooms too): those
-- present in line whose bit is in no live generation of the polled ring
-- (touch() in the prelude), lowest member first, at most ARGV[2] a tick.
-- The ring is read only when a generation has died since the last sweep
-- (once per generation), or when the last sweep stopped at its bound.
local budget = tonumber(ARGV[2])
local g = poll_g(room)
local gen_now = generation(room, now)

-- Poll times an earlier version kept in a sorted set move into the
-- bitmaps, oldest first, as many a tick as may be dropped.
if redis.call('EXISTS', SEEN) == 1 then
  local old = redis.call('ZPOPMIN', SEEN, budget)
  for i = 1, #old, 2 do
    if redis.call('ZSCORE', WAITING, old[i]) then
      redis.call('SETBIT', PRESENT, old[i], 1)
      local at = math.min(gen_now, math.floor(tonumber(old[i + 1]) / g))
      if at > gen_now - RING then
        redis.call('SETBIT', polled_key(at), old[i], 1)
      end
    end
  end
  room.sweep_more = true
end

-- A gap between ticks of more than half the abandon time: Redis, or every
-- promoter, was away, and the polls meanwhile were refused rather than
-- marked (a faithful poller's last mark may then be older than the
-- abandon time allows). The whole line counts as polling now, as when the
-- abandon time changes: an outage drops nobody who polls again as told,
-- and one who stopped goes an abandon time after it.
local last_tick = tonumber(redis.call('HGET', ROOM, 'tick_at'))
if last_tick and now - last_tick > room.abandon_ms / 2 and redis.call('EXISTS', PRESENT) == 1 then
  redis.call('BITOP', 'OR', polled_key(gen_now), polled_key(gen_now), PRESENT)
end
redis.call('HSET', ROOM, 'tick_at', int(now))

local stale = {}
-- The newest generation no longer live (k*g + abandon <= now).
local dead = math.floor((now - room.abandon_ms) / g)
if (dead > room.swept or room.sweep_more) and redis.call('EXISTS', PRESENT) == 1 then
  local live = {}
  for j = math.max(dead + 1, gen_now - RING + 1), gen_now do
    live[#live + 1] = polled_key(j)
  end
  -- stale = present minus live, as (present AND live) XOR present: a NOT
  -- would stop at the live bitmaps' length.
  if #live > 0 then
    redis.call('BITOP', 'OR', STALE, unpack(live))
    redis.call('BITOP', 'AND', STALE, STALE, PRESENT)
    redis.call('BITOP', 'XOR', STALE, STALE, PRESENT)
  else
    redis.call('BITOP', 'OR', STALE, PRESENT)
  end
  -- BITPOS skips to the next stale member; 64 bytes from there are read
  -- at once (a burst of abandons is dense).
  local from, more = 0, false
  while not more do
    local first = redis.call('BITPOS', STALE, 1, from)
    if first < 0 then
      break
    end
    local at = math.floor(first / 8)
    local bytes = redis.call('GETRANGE', STALE, at, at + 63)
    for i = 1, #bytes do
      local b = string.byte(bytes, i)
      local j = 0
      while b > 0 do
        if b >= 128 then
          if #stale == budget then
            more = true
            break
          end
          stale[#stale + 1] = int((at + i - 1) * 8 + j)
        end
        b = (b * 2) % 256
        j = j + 1
      end
      if more then
        break
      end
    end
    from = at + #bytes
  end
  redis.call('DEL', STALE)
  room.swept, room.sweep_more = math.max(dead, room.swept), more
  redis.call('HSET', ROOM, 'swept', int(room.swept), 'sweep_more', more and '1' or '0')
end
for i = 1, #stale, CHUNK do
  local part = { unpack(stale, i, math.min(i + CHUNK - 1, #stale)) }
  redis.call('ZREM', WAITING, unpack(part))
  for _, m in ipairs(part) do
    redis.call('SETBIT', PRESENT, m, 0)
  end
end
release(room, stale)
if #stale > 0 then
  redis.call('HINCRBY', ROOM, 'abandoned', #stale)
end

local waiting = redis.call('ZCARD', WAITING)
local active = redis.call('ZCARD', ACTIVE)
local out = { 0, 0, expired, #stale, '' }

-- Long enough for a million places on a busy machine; a claimer that died
-- delays the opening this long at most.
local DRAW_CLAIM_MS = 60000
if room.draw_pending then
  local d = redis.call('HMGET', ROOM, 'draw_seed', 'draw_lo', 'draw_hi', 'draw_claim')
  if now >= (tonumber(d[4]) or 0) then
    redis.call('HSET', ROOM, 'draw_claim', int(now + DRAW_CLAIM_MS))
    out[5] = d[1] .. ' ' .. d[2] .. ' ' .. d[3] .. ' ' .. int(room.base)
  end
end

-- Picks k visitors to let in: the front of the line, or a random draw
-- among everyone waiting (a lottery).
local function pick(k)
  if room.method == 'random' then
    local drawn = redis.call('ZRANDMEMBER', WAITING, k)
    -- Read by the instances' views (observe.lua): whom they saw in line
    -- may now be inside, whatever the front says.
    redis.call('HINCRBY', ROOM, 'lottery_ticks', 1)
    for _, m in ipairs(drawn) do
      redis.call('SETBIT', PRESENT, m, 0)
    end
    for i = 1, #drawn, CHUNK do
      redis.call('ZREM', WAITING, unpack(drawn, i, math.min(i + CHUNK - 1, #drawn)))
    end
    return drawn
  end
  local popped = redis.call('ZPOPMIN', WAITING, k)
  local members = {}
  for i = 1, #popped, 2 do
    members[#members + 1] = popped[i]
    redis.call('SETBIT', PRESENT, popped[i], 0)
  end
  return members
end

-- No seat to sell is like paused: nobody is let in and the achieved rate is
-- left as it was, so it does not decay to zero while every seat is held.
if admitting(room, now) and room.method ~= 'reject' and not room.draw_pending then
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
-- averaged over 30 s or the session length, whichever is longer
-- (turnover_window_ms in store.rs), skipping gaps between ticks as the
-- rate does, and time when nobody was inside (nothing seen: the measure
-- is carried across a pause).
local t = redis.call('HMGET', ROOM, 'admitted', 'turn_at', 'turn_active', 'turn_admitted',
  'leaves', 'inside', 'watched')
local admitted_total = tonumber(t[1]) or 0
local leaves, inside = tonumber(t[5]) or 0, tonumber(t[6]) or 0
-- How long anyone was inside, summed: the oldest stay the measure knows.
local watched = tonumber(t[7]) or 0
local turn_dt = t[2] and (now - tonumber(t[2])) or 0
if turn_dt > 0 and turn_dt <= 5000 then
  local before = tonumber(t[3])
  local early = math.max(0, before + admitted_total - tonumber(t[4]) - expired - active)
  if before > 0 or early > 0 then
    local alpha = 1 - math.exp(-turn_dt / math.max(30000, room.session_ms))
    leaves = leaves + alpha * (early * 1000 / turn_dt - leaves)
    inside = inside + alpha * (before - inside)
    watched = watched + turn_dt
  end
end
-- Sessions inside by when they end, in eighths of the session length.
-- While nobody is let in the budget refills untouched: a resume after a
-- second or more finds it full.
local allow = math.max(room.rate, 1)
if room.allow and admitting(room, now) then
  allow = room.allow
end
local eta = { int(now), real(room.rate), real(allow),
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
eta[#eta + 1] = int(watched)
redis.call('HSET', ROOM, 'turn_at', int(now), 'turn_active', int(active),
  'turn_admitted', int(admitted_total), 'leaves', real(leaves), 'inside', real(inside),
  'watched', int(watched), 'eta', table.concat(eta, ' '))

-- Join-time marks older than the one the front of the line needs can go.
-- Only once the pre-queue is gone: until then the front is drawn.
if waiting == 0 then
  -- Nobody waits: the marks, the present bitmap and the polled ring go
  -- (bitmaps are sized by the highest member, not by the line).
  redis.call('DEL', MARKS, PRESENT, unpack(KEYS, 10, 9 + RING))
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
