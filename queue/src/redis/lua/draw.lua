-- draw.lua: the pre-queue draw (draw.rs).
-- ARGV[2] 'view': returns {seed (hex) or '', draw_at, now}, or UNKNOWN_ROOM.
-- ARGV[2] 'apply', ARGV[3] the seed (hex) the scores were computed with,
--   ARGV[4] the draw's last member (hi), ARGV[5] '1' on the last chunk,
--   ARGV[6..] 'score member' pairs, if any (the store writes most with
--   plain ZADDs first): each member still in line gets its drawn score
--   (lower than its score awaiting the draw, and always the same one for
--   a seed: a chunk written twice changes nothing). The last chunk marks
--   the draw applied. A seed no longer the room's changes nothing.
--   Returns 1 when applied, 0 when not, or UNKNOWN_ROOM.
local now = now_ms()
local d = redis.call('HMGET', ROOM, 'state', 'draw_seed', 'draw_at', 'draw_hi')
if not d[1] then
  return UNKNOWN_ROOM
end
if ARGV[2] == 'view' then
  return { d[2] or '', tonumber(d[3]) or -1, now }
end
if d[2] ~= ARGV[3] then
  return 0
end
for i = 6, #ARGV, CHUNK do
  redis.call('ZADD', WAITING, 'XX', 'LT', unpack(ARGV, i, math.min(i + CHUNK - 1, #ARGV)))
end
if ARGV[5] == '1' and d[4] == ARGV[4] then
  redis.call('HSET', ROOM, 'draw_done', ARGV[4])
  redis.call('HDEL', ROOM, 'draw_claim')
end
return 1
