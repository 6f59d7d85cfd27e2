-- observe.lua: what one instance's snapshot of a room needs, once a tick.
-- ARGV[2] since (ms): departures from it on are reported (one in the same ms
--         as the last observation may have come after it)
-- ARGV[3] how old (ms) cached samples may be and still be handed out
-- ARGV[4] the pre-queue span (scores below it are pre-queue draws)
-- ARGV[5] how long (ms) a departure is remembered
-- ARGV[6] '1': samples wanted
-- ARGV[7..] seqs that polled the instance since its last observation
-- Returns {view() (outcome 'waiting', no member), method, front rank-1 score
-- (-1: nobody waits), base, samples_at, samples ('rank score' pairs, space
-- separated), {gone seqs}, {drawn seqs}, {departed seqs}}, or UNKNOWN_ROOM.

local now = now_ms()
local room = load_room(now)
if not room then
  return UNKNOWN_ROOM
end
local span = tonumber(ARGV[4])

-- The polls: each waiter still in line is recorded as polling, as its
-- status calls would have been; places are looked up and marks written
-- CHUNK at a time (two commands per CHUNK polls).
local gone, drawn = {}, {}
local refuses = refusing(room)
for i = 7, #ARGV, CHUNK do
  local seqs, members = {}, {}
  for j = i, math.min(i + CHUNK - 1, #ARGV) do
    local mine = member_of(room, ARGV[j])
    if mine and not refuses then
      seqs[#seqs + 1] = ARGV[j]
      members[#members + 1] = mine
    else
      gone[#gone + 1] = ARGV[j]
    end
  end
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

-- Samples place a seq in a fifo line; taking them costs O(samples log n),
-- so they are kept in the room hash and shared while fresh enough.
local samples_at, samples = now, ''
if ARGV[6] == '1' and room.method == 'fifo' and not refusing(room) and opened(room, now) then
  local cached = redis.call('HMGET', ROOM, 'samples_at', 'samples')
  local at = tonumber(cached[1])
  if at and at <= now and now - at <= tonumber(ARGV[3]) and at >= room.opens_at then
    samples_at, samples = at, cached[2]
  else
    local n = redis.call('ZCARD', WAITING)
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
    redis.call('HSET', ROOM, 'samples_at', int(now), 'samples', samples)
  end
end

redis.call('ZREMRANGEBYSCORE', DEPARTED, '-inf', int(now - tonumber(ARGV[5])))
local departed = {}
for _, m in ipairs(redis.call('ZRANGEBYSCORE', DEPARTED, ARGV[2], '+inf')) do
  departed[#departed + 1] = room.base + tonumber(m)
end

local front = redis.call('ZRANGE', WAITING, 0, 0, 'WITHSCORES')
return { view(room, now, 'waiting'), room.method, front[2] or -1, room.base, samples_at,
  samples, gone, drawn, departed }
