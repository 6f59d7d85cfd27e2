-- observe.lua: what one instance's snapshot of a room needs, once a tick.
-- ARGV[2] since (ms): departures from it on are reported (one in the same ms
--         as the last observation may have come after it)
-- ARGV[3] the pre-queue span (scores below it are pre-queue draws)
-- ARGV[4] how long (ms) a departure is remembered
-- ARGV[5] '1': samples wanted
-- ARGV[6..] seqs that polled the instance since its last observation
-- Returns {view() (outcome 'waiting', no member), method, front rank-1 score
-- (-1: nobody waits), base, samples_at, samples, {gone seqs}, {drawn seqs},
-- {departed seqs}, next window edge (-1: none), lottery ticks}, or
-- UNKNOWN_ROOM. Lottery ticks: how many ticks drew a lottery so far.
-- The next window edge is the first start or end of a scheduled window
-- after now (ms): the method, rate or capacity may change then.
-- samples is '' (none), or the line as the present bitmap has it:
-- {waiting, draws, from_byte, bytes, first} (draws: how many wait on a
-- pre-queue draw, all of them on the lowest members present; bytes: the
-- bitmap from byte from_byte on, which holds every member in line; first:
-- the lowest member placed after the opening, -1 if none), and then gone
-- and drawn are empty (the instance reads them off the bitmap), or, when
-- the bitmap cannot say (see below), 'rank score' pairs, space separated.
local now = now_ms()
local room = load_room(now)
if not room then
  return UNKNOWN_ROOM
end
local span = tonumber(ARGV[3])

-- Samples place a seq in a fifo line. The present bitmap is the line in
-- member order: after the opening a waiter's place is its member, behind
-- every pre-queue draw, and draws hold the lowest members (they joined
-- first). Then the waiter at rank r is the r-th member present, and the
-- instance reads every sample off the bitmap (reply.rs), for a handful of
-- commands whatever the line's length. The bitmap must agree with the line
-- for that: as many bits as waiters, and the draws exactly the members
-- present below the first waiter placed after the opening. When it does
-- not (a line from an earlier version not yet moved into the bitmap, or an
-- opening moved later after places were taken), the samples are taken one
-- ZRANGE each: O(samples log n).
local refuses = refusing(room)
local samples_at, samples = now, ''
local placed = false -- the bitmap read holds the line: the instance sorts the polls itself
if ARGV[5] == '1' and room.method == 'fifo' and not refuses and opened(room, now) then
  local n = redis.call('ZCARD', WAITING)
  if n > 0 then
    local draws = redis.call('ZCOUNT', WAITING, '-inf', '(' .. int(span))
    local first = redis.call('ZRANGE', WAITING, int(span), '+inf', 'BYSCORE', 'LIMIT', 0, 1)
    local agrees = redis.call('BITCOUNT', PRESENT) == n
    if agrees and first[1] then
      agrees = redis.call('BITCOUNT', PRESENT, 0, tonumber(first[1]) - 1, 'BIT') == draws
    end
    if agrees then
      local from = math.floor(redis.call('BITPOS', PRESENT, 1) / 8)
      samples = { n, draws, from, redis.call('GETRANGE', PRESENT, from, -1),
        first[1] and tonumber(first[1]) or -1 }
      placed = true
    else
      local parts = {}
      local r = 0
      -- sample_ranks() in queue/mod.rs: every 10, then every 1%, and the last.
      while r < n do
        local e = redis.call('ZRANGE', WAITING, r, r, 'WITHSCORES')
        parts[#parts + 1] = int(r) .. ' ' .. e[2]
        if r + 1 == n then
          break
        end
        r = math.min(r + math.max(10, math.floor(r / 100)), n - 1)
      end
      samples = table.concat(parts, ' ')
    end
  end
end

-- The polls: each waiter still in line is recorded as polling, as its
-- status calls would have been, MARKS_CHUNK to a command: one command per
-- tick for up to MARKS_CHUNK polls, however many waiters an instance
-- answers for. When the bitmap was read above, the instance tells from it
-- which polls were gone or on a draw (reply.rs), and every seq this room
-- gave is marked: a mark on a place no longer in line is never read (the
-- tick drops only members present, and a place never comes back).
-- Otherwise places are looked up here, one more command per MARKS_CHUNK.
local MARKS_CHUNK = 1750 -- touch_all sends 4 arguments each: 7,000, under unpack's 8,000
local gone, drawn = {}, {}
for i = 6, #ARGV, MARKS_CHUNK do
  local seqs, members = {}, {}
  for j = i, math.min(i + MARKS_CHUNK - 1, #ARGV) do
    local mine = member_of(room, ARGV[j])
    if mine and not refuses then
      seqs[#seqs + 1] = ARGV[j]
      members[#members + 1] = mine
    elseif not placed then
      gone[#gone + 1] = ARGV[j]
    end
  end
  if placed then
    touch_all(room, now, members)
  else
    local scores = #members > 0 and redis.call('ZMSCORE', WAITING, unpack(members)) or {}
    local waiting = {}
    for k = 1, #members do
      local score = scores[k]
      if not score then
        gone[#gone + 1] = seqs[k]
      else
        waiting[#waiting + 1] = members[k]
        if tonumber(score) < span then
          drawn[#drawn + 1] = seqs[k]
        end
      end
    end
    touch_all(room, now, waiting)
  end
end

redis.call('ZREMRANGEBYSCORE', DEPARTED, '-inf', int(now - tonumber(ARGV[4])))
local departed = {}
for _, m in ipairs(redis.call('ZRANGEBYSCORE', DEPARTED, ARGV[2], '+inf')) do
  departed[#departed + 1] = room.base + tonumber(m)
end

local next_edge = -1
for _, w in ipairs(room.windows or {}) do
  for _, edge in ipairs({ w.s, w.e }) do
    if edge > now and (next_edge < 0 or edge < next_edge) then
      next_edge = edge
    end
  end
end

local front = redis.call('ZRANGE', WAITING, 0, 0, 'WITHSCORES')
return { view(room, now, 'waiting'), room.method, front[2] or -1, room.base, samples_at,
  samples, gone, drawn, departed, int(next_edge),
  tonumber(redis.call('HGET', ROOM, 'lottery_ticks')) or 0 }
