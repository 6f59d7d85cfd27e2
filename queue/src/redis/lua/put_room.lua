-- put_room.lua: create a room or replace its settings, keeping its line,
-- sessions and counters.
-- ARGV[2] capacity  ARGV[3] admit rate per second  ARGV[4] session ms
-- ARGV[5] abandon ms  ARGV[6] opens_at ms or -1  ARGV[7] max_line or 0
-- ARGV[8] queueing method  ARGV[9] windows as the scripts read them (JSON)
-- ARGV[10] the settings as given (JSON), returned as they are by figures
-- ARGV[11] a fresh draw seed (hex), taken when the room needs a new one
-- Returns 1 when the room was created, 0 when updated.

-- The pre-queue draw as DrawState::put (draw.rs) has it: a secret seed
-- stays whatever the opening becomes; a revealed one is replaced only when
-- a new opening is set in the future (a pre-queue not drawn yet then is
-- drawn with the new one); a room that loses its opening reveals its seed
-- now.
local function put_draw(opens_at)
  local d = redis.call('HMGET', ROOM, 'draw_seed', 'draw_at', 'draw_hi', 'draw_done')
  local now = now_ms()
  local fresh = function(at)
    redis.call('HSET', ROOM, 'draw_seed', ARGV[11], 'draw_at', int(at))
    redis.call('HDEL', ROOM, 'draw_done', 'draw_claim')
    -- A pre-queue the opening came for but no tick has drawn yet is drawn
    -- with the new seed, with those who join before the new opening.
    if not d[3] or d[3] == d[4] then
      redis.call('HDEL', ROOM, 'draw_lo', 'draw_hi')
    end
  end
  local at = tonumber(d[2])
  if not d[1] then
    if opens_at >= 0 then
      fresh(opens_at)
    end
  elseif now < at then
    redis.call('HSET', ROOM, 'draw_at', int(opens_at >= 0 and opens_at or now))
  elseif opens_at > now then
    fresh(opens_at)
  end
end
put_draw(tonumber(ARGV[6]))

local old = redis.call('HMGET', ROOM, 'rate', 'abandon_ms')
local old_rate, old_abandon = old[1], old[2]
redis.call('HSET', ROOM, 'capacity', ARGV[2], 'rate', ARGV[3], 'session_ms', ARGV[4],
  'abandon_ms', ARGV[5], 'opens_at', ARGV[6], 'max_line', ARGV[7], 'method', ARGV[8],
  'windows', ARGV[9], 'settings', ARGV[10])
-- Until admissions are measured, the configured rate is the best estimate.
if old_rate ~= ARGV[3] then
  redis.call('HSET', ROOM, 'rate_est', ARGV[3])
end
-- Samples earlier versions kept here for other instances; each observation
-- now reads its own off the present bitmap (observe.lua).
redis.call('HDEL', ROOM, 'samples_at', 'samples')
if not old_rate then
  -- A new line starts at member 0, and its seqs (base + member) above any an
  -- earlier life of this room gave out (lost with Redis's data, say): see
  -- member_of.
  redis.call('HSET', ROOM, 'state', 'open', 'seq', 0, 'admitted', 0, 'abandoned', 0,
    'base', string.format('%d', now_ms() * 1000))
  return 1
end
-- A new abandon time renumbers the polled ring now (generation() in the
-- prelude), not at whichever poll, join or tick comes next: every store
-- then counts the line as polling from the same instant.
if old_abandon ~= ARGV[5] then
  local now = now_ms()
  local room = load_room(now)
  if room then
    generation(room, now)
  end
end
return 0
