-- prelude.lua: shared helpers, concatenated in front of every queue script.
--
-- Two numbers name a visitor, and each has one name here:
--   member: what the store keeps, a short decimal integer (1, 2, 3, ... in
--           order of joining), stored as text in the sorted sets;
--   seq:    what the visitor's signed ticket carries, the room's base plus
--           its member. Only member_of and standing() cross between the two.
-- What else a visitor is lives in its ticket, not here.
--
-- Every script gets the same eight keys, all under the room's hash tag, so a
-- script touches one slot and runs unchanged on Redis Cluster:
--   KEYS[1] room hash: settings, counters, admission budget, rate estimate,
--           the sale signal ('seats', 'rate_factor'; absent = available, 1);
--           its field 'seq' holds the last member given (the name is kept
--           so rooms stored before stay readable); the pre-queue draw
--           (draw.rs): 'draw_seed' (hex), 'draw_at' (the opening that
--           reveals it, ms), 'draw_lo' / 'draw_hi' (the pre-queue's first
--           and last member), 'draw_done' (the draw_hi applied),
--           'draw_claim' (until when one instance applies it, ms)
--   KEYS[2] waiting zset: member = member, score = order in line
--   KEYS[3] seen zset: member = member, score = last poll (ms), as earlier
--           versions kept it; only the tick reads it (moving it into the
--           bitmaps below) and deletes it
--   KEYS[4] active zset: member = member, score = end of session (ms)
--   KEYS[5] holders hash: client -> places it holds now (the per-address
--           cap); a client at zero is deleted
--   KEYS[6] marks zset: member = join time (ms), score = member; at most one
--           a second, so the wait of the front of the line can be told
--   KEYS[7] held-by hash: member -> client, for each place (in line or
--           inside) given under the cap, so whatever ends a place gives it
--           back to its client; empty while the cap is off
--   KEYS[8] present bitmap: bit member set while the member waits in line
--           (observe.lua reads it as the line in order, for the samples)
--   KEYS[9] stale bitmap: the tick's scratch (waiting, not polling lately)
--   KEYS[10..17] polled bitmaps, a ring: bit member set when the member
--           polled during generation k (slot k mod 8); see touch()
--   KEYS[18] departed zset: member = a member that left the line (leave.lua),
--           score = when (ms); kept a minute for the snapshots (observe.lua)
-- and, only for places given to an account (join.lua; keys.rs names them
-- too), the account index: keys not in KEYS but named here after KEYS[1],
-- so under the same hash tag and in the same slot (Redis Cluster allows a
-- script those). Small hashes, so Redis keeps each one compact (a listpack
-- up to hash-max-listpack-entries, 128 by default): a field costs its bytes,
-- where a field of one big hash cost a hash table entry (~50 B) on top.
--   acct:<b>  hash: account (its 8 raw bytes) -> member, b = the account's
--           first two bytes mod ACCOUNT_BUCKETS (16384 buckets: a million
--           accounts are ~61 a bucket, none near 128)
--   acct-rev:<base>:<member div 128>  string: the account of member m at
--           bytes 8 * (m mod 128) to 8 * (m mod 128) + 7, eight zero bytes
--           for none, so whatever ends a place forgets its account
--           (release), and a batch's consecutive new places write theirs
--           with one SETRANGE (a hash's field cost a listpack scan each);
--           deleted once all zero. The room's base in the name keeps a
--           room created anew from reading an earlier life's entries (an
--           account's entry counts only when both sides agree). An account
--           whose hash is eight zero bytes (one in 2^64) reads as none on
--           this side: its forward entry is replaced, never dropped.
--   the room hash's field 'accounts' counts the accounts indexed: zero (or
--   absent) means no index, and nothing is looked up
-- and, only for joins that solved a challenge, the solutions (join.lua):
--   sol:<base>:<w>  hash: solution (its 8 raw bytes) -> the member of
--           the place it took, for solutions whose seed expires in minute
--           w (unix s div 60); the key expires with that minute (by the
--           scripts' clock), when the origin refuses its solutions anyway.
--           The room's base in the name keeps a room created anew from
--           reading an earlier life's entries, as acct-rev's does; a member
--           (short), not a seq, so the join writes the text it writes
--           into the line anyway.
-- Time always comes from Redis (TIME), so origin instances with skewed clocks
-- agree on openings, expiry and the budget.

local ROOM, WAITING, SEEN, ACTIVE, HOLDERS, MARKS, HELD_BY, PRESENT, STALE =
  KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9]
local RING = 8 -- polled bitmaps, KEYS[10 .. 9 + RING] (keys.rs: POLL_RING)

local DEPARTED = KEYS[18]

local CHUNK = 500 -- arguments per command, well under Lua's stack limit

-- The line's scores (draw.rs): a place taken after the opening is
-- PREQUEUE_SPAN + member; a pre-queue place AWAITING_DRAW + member until
-- the draw is applied, then below AWAITING_DRAW.
local PREQUEUE_SPAN = 1099511627776 -- 2^40 (store.rs)
local AWAITING_DRAW = 549755813888 -- 2^39 (draw.rs)

-- The account index's key names start as KEYS[1] does, without its 'room'.
local STEM = string.sub(ROOM, 1, -5)
local ACCOUNT_STEM = STEM .. 'acct:'
local ACCOUNT_BUCKETS = 16384 -- a power of two: the bucket is the low 14 bits
local PER_REVERSE = 128
local ACCOUNT_BYTES = 8
local NO_ACCOUNT = string.rep('\0', ACCOUNT_BYTES)

-- Every script that needs the room returns this bare string when the room
-- does not exist, and no script returns a bare string otherwise (their
-- replies are integers or arrays), so one check on the Rust side tells it.
local UNKNOWN_ROOM = 'unknown_room'

-- Exact integer text; redis.call would format a Lua number with %.14g.
local function int(n)
  return string.format('%d', n)
end

local function real(x)
  return string.format('%.17g', x)
end

-- ARGV[1] of every script is the clock: '' (production) means Redis TIME;
-- tests pass a fixed instant in ms so the embedded store and Redis can be
-- compared step by step.
local function now_ms()
  if ARGV[1] ~= '' then
    return tonumber(ARGV[1])
  end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- The room's settings and counters as they apply at `now` (a scheduled
-- window's values replace the room's own, and the sale's rate factor scales
-- the rate), or nil when the room does not exist.
local function load_room(now)
  local v = redis.call('HMGET', ROOM, 'state', 'capacity', 'rate', 'session_ms',
    'abandon_ms', 'opens_at', 'max_line', 'seq', 'allow', 'refill_at', 'rate_est', 'rate_at',
    'method', 'windows', 'mark_at', 'base', 'seats', 'rate_factor', 'poll_g', 'poll_gen',
    'swept', 'sweep_more', 'accounts', 'draw_at', 'draw_hi', 'draw_done')
  if not v[1] then
    return nil
  end
  local room = {
    state = v[1],
    capacity = tonumber(v[2]),
    rate = tonumber(v[3]),
    session_ms = tonumber(v[4]),
    abandon_ms = tonumber(v[5]),
    opens_at = tonumber(v[6]) or -1,
    max_line = tonumber(v[7]) or 0,
    last_member = tonumber(v[8]) or 0,
    allow = tonumber(v[9]),
    refill_at = tonumber(v[10]),
    rate_est = tonumber(v[11]) or 0,
    rate_at = tonumber(v[12]),
    method = v[13] or 'fifo',
    mark_at = tonumber(v[15]) or 0,
    base = tonumber(v[16]) or 0,
    -- available | none_available | sold_out (set_sale.lua)
    seats = v[17] or 'available',
    rate_factor = tonumber(v[18]) or 1,
    -- the polled ring (touch): generation length and newest generation
    poll_g = tonumber(v[19]),
    poll_gen = tonumber(v[20]) or 0,
    -- the tick's sweep: newest dead generation swept, and whether the last
    -- sweep stopped at its bound
    swept = tonumber(v[21]) or 0,
    sweep_more = v[22] == '1',
    -- accounts indexed (the account index; 0: none, nothing to look up)
    accounts = tonumber(v[23]) or 0,
  }
  -- The opening has come and the pre-queue is not drawn yet (draw.rs):
  -- nobody is let in, and no pre-queue place told its position, meanwhile.
  local draw_at, draw_hi = tonumber(v[24]), v[25]
  room.draw_pending = draw_hi ~= false and draw_at ~= nil and now >= draw_at and v[26] ~= draw_hi
  -- room.windows: the scheduled windows, decoded (observe.lua reads their
  -- edges); nil when there are none
  if v[14] and v[14] ~= '' and v[14] ~= '[]' then
    room.windows = cjson.decode(v[14])
    for _, w in ipairs(room.windows) do
      if now >= w.s and now < w.e then
        room.capacity = w.c or room.capacity
        room.rate = w.r or room.rate
        room.session_ms = w.x or room.session_ms
        room.method = w.m or room.method
        break
      end
    end
  end
  -- Wherever the budget is refilled (and in its one-second cap), so a
  -- struggling sale slows admission.
  room.rate = room.rate * room.rate_factor
  return room
end

-- A visitor's seq is the room's base plus its member. The base is set once,
-- when the room is created, from the clock (ms * 1000): a room created again
-- after Redis lost its data starts far above every seq the lost line gave
-- out, so a ticket from before the loss never names a new visitor's place
-- (it reads as gone). Members stay short, which keeps the sorted sets small.
-- Returns the member as text, or nil when this room never gave out the seq.
local function member_of(room, seq_text)
  local n = tonumber(seq_text)
  if not n then
    return nil
  end
  local m = n - room.base
  if m < 1 or m > room.last_member then
    return nil
  end
  return string.format('%d', m)
end

-- Closed rooms and the reject method give no places and keep none in line.
local function refusing(room)
  return room.state == 'closed' or room.method == 'reject'
end

local function opened(room, now)
  return room.opens_at < 0 or now >= room.opens_at
end

-- Whether anyone may be let in now, by the tick or by a join: an open,
-- opened room with a seat left to sell (nobody admitted could buy otherwise).
local function admitting(room, now)
  return room.state == 'open' and opened(room, now) and room.seats == 'available'
end

-- The admission budget is a token bucket in the room hash, spent inside the
-- admitting script, so any number of promoters share one budget. It never
-- banks more than one second of the rate (at least 1): a resume or a rate
-- increase does not flood the site.
local function refill(room, now)
  local burst = math.max(room.rate, 1)
  local allow = room.allow or burst
  local last = room.refill_at or now
  if now > last then
    allow = allow + room.rate * (now - last) / 1000
  end
  room.allow = math.min(burst, allow)
  room.refill_at = math.max(now, last)
end

local function save_budget(room)
  redis.call('HSET', ROOM, 'allow', real(room.allow), 'refill_at', int(room.refill_at))
end

-- The account index (the header above): where an account's member is,
-- and where a member's account is.
local function account_key(account)
  local hi, lo = string.byte(account, 1, 2)
  return string.format('%s%d', ACCOUNT_STEM, (hi * 256 + lo) % ACCOUNT_BUCKETS)
end

local function reverse_key(room, member)
  return STEM .. 'acct-rev:' .. int(room.base) .. ':' .. int(math.floor(member / PER_REVERSE))
end

-- Where member `m`'s account starts in its reverse string.
local function reverse_offset(m)
  return (m % PER_REVERSE) * ACCOUNT_BYTES
end

-- The account the reverse side gives member `m` (a number), or nil.
local function account_of(room, m)
  local off = reverse_offset(m)
  local account = redis.call('GETRANGE', reverse_key(room, m), off, off + ACCOUNT_BYTES - 1)
  if #account ~= ACCOUNT_BYTES or account == NO_ACCOUNT then
    return nil
  end
  return account
end

-- Clears the reverse entries of `members` (numbers), deleting each
-- string left all zero.
local function clear_reverse(room, members)
  local touched = {}
  for _, m in ipairs(members) do
    local key = reverse_key(room, m)
    redis.call('SETRANGE', key, reverse_offset(m), NO_ACCOUNT)
    touched[key] = true
  end
  for key in pairs(touched) do
    if redis.call('BITCOUNT', key) == 0 then
      redis.call('DEL', key)
    end
  end
end

-- The member (text) whose place the index gives `account` (its 8 raw
-- bytes), standing or not, or nil. An entry counts only when the member's
-- own entry names the account back.
local function account_place(room, account)
  if room.accounts <= 0 then
    return nil
  end
  local m = tonumber(redis.call('HGET', account_key(account), account))
  if not m or m < 1 or m > room.last_member or m ~= math.floor(m) then
    return nil
  end
  if account_of(room, m) ~= account then
    return nil
  end
  return int(m)
end

-- Indexes `account` to its new place, `member` (a number); an entry it
-- had (a place that ended without being released yet: a session past its
-- time) is replaced, and that member's entry forgotten.
local function index_account(room, account, member)
  local key = account_key(account)
  local old = account_place(room, account)
  if old then
    clear_reverse(room, { tonumber(old) })
  else
    room.accounts = room.accounts + 1
    redis.call('HINCRBY', ROOM, 'accounts', 1)
  end
  redis.call('HSET', key, account, int(member))
  redis.call('SETRANGE', reverse_key(room, member), reverse_offset(member), account)
end

-- Forgets the accounts of `members` (text), whose places ended.
local function unindex_accounts(room, members)
  local gone, cleared = 0, {}
  for _, m in ipairs(members) do
    local n = tonumber(m)
    local account = account_of(room, n)
    if account then
      cleared[#cleared + 1] = n
      local forward = account_key(account)
      if redis.call('HGET', forward, account) == int(n) then
        redis.call('HDEL', forward, account)
        gone = gone + 1
      end
    end
  end
  clear_reverse(room, cleared)
  if gone > 0 then
    room.accounts = room.accounts - gone
    redis.call('HINCRBY', ROOM, 'accounts', -gone)
  end
end

-- Gives the places of `members` (text), which no longer hold one, back to
-- the clients they were given to under the cap (a client left holding
-- nothing is forgotten), and forgets their accounts. Every step that ends
-- a place calls this; a room with neither pays one EXISTS.
local function release(room, members)
  if #members == 0 then
    return
  end
  if room.accounts > 0 then
    unindex_accounts(room, members)
  end
  if redis.call('EXISTS', HELD_BY) == 0 then
    return
  end
  for i = 1, #members, CHUNK do
    local part = { unpack(members, i, math.min(i + CHUNK - 1, #members)) }
    local clients = redis.call('HMGET', HELD_BY, unpack(part))
    for j = 1, #part do
      local client = clients[j]
      if client and redis.call('HINCRBY', HOLDERS, client, -1) <= 0 then
        redis.call('HDEL', HOLDERS, client)
      end
    end
    redis.call('HDEL', HELD_BY, unpack(part))
  end
end

-- "Still polling" marks are coarse: time is cut in generations of g =
-- abandon / 6 (rounded up), and a poll sets the member's bit in its
-- generation's bitmap, one of a ring of RING reused in turn. Generation k
-- stays live while now < k*g + abandon, so a waiter whose last poll was at
-- t is dropped by the first tick after some instant in (t + abandon - g,
-- t + abandon]: never one that polls every abandon / 3 as told (pacing.rs),
-- always one that stopped, within the abandon time plus a tick. One bit per
-- waiter and generation, where a sorted set of poll times cost ~100 bytes.

local function poll_g(room)
  return math.max(1, math.ceil(room.abandon_ms / 6))
end

local function polled_key(k)
  return KEYS[10 + k % RING]
end

-- The generation `now` falls in, after moving the ring to it: the slots of
-- generations skipped since the last move are emptied (they held the
-- generations RING before, long dead). A new generation length (the
-- abandon time changed) renumbers the generations: every waiter then
-- counts as polling now, and the sweep starts again. Never goes back (a
-- clock stepping back reuses the newest generation).
local function generation(room, now)
  local g = poll_g(room)
  local k = math.floor(now / g)
  if room.poll_g ~= g then
    for i = 0, RING - 1 do
      redis.call('DEL', polled_key(i))
    end
    if redis.call('EXISTS', PRESENT) == 1 then
      redis.call('BITOP', 'OR', polled_key(k), PRESENT)
    end
    -- Swept generations were numbered by the old length: a longer one
    -- numbers them lower, and the sweep would wait for years.
    room.poll_g, room.poll_gen, room.swept = g, k, 0
    redis.call('HSET', ROOM, 'poll_g', int(g), 'poll_gen', int(k), 'swept', '0')
  elseif k > room.poll_gen then
    for j = math.max(room.poll_gen + 1, k - RING + 1), k do
      redis.call('DEL', polled_key(j))
    end
    room.poll_gen = k
    redis.call('HSET', ROOM, 'poll_gen', int(k))
  end
  return room.poll_gen
end

-- Records that a waiter (its member) still polls at `now`: what the tick's
-- abandonment rule reads. The one place a poll is written.
local function touch(room, now, member)
  redis.call('SETBIT', polled_key(generation(room, now)), member, 1)
end

-- touch() for many members (text) at once: one command, not one per poll,
-- so an instance's per-tick flush costs Redis about the same however many
-- waiters polled.
-- BITFIELD's arguments that set the bits of `members`, members[from] to
-- members[to] (all of them by default): one command for many bits.
local function set_bits_args(members, from, to)
  local args = {}
  for i = from or 1, to or #members do
    args[#args + 1] = 'SET'
    args[#args + 1] = 'u1'
    args[#args + 1] = members[i]
    args[#args + 1] = '1' -- text: redis.call writes a number with %.17g, slowly
  end
  return args
end

-- BITFIELD's arguments that set the bits of `members` (numbers, rising):
-- each run of consecutive members is set by one SET of an all-ones value
-- up to RUN bits wide, where a bit each cost four arguments (a batch of
-- joins gives consecutive members: most batches are one SET).
local RUN = 52 -- the widest all-ones value a Lua number holds exactly
local function set_runs_args(members)
  local args = {}
  local i, n = 1, #members
  while i <= n do
    local first = members[i]
    local w = 1
    while w < RUN and i + w <= n and members[i + w] == first + w do
      w = w + 1
    end
    args[#args + 1] = 'SET'
    args[#args + 1] = 'u' .. w
    args[#args + 1] = int(first)
    args[#args + 1] = int(2 ^ w - 1)
    i = i + w
  end
  return args
end

local function touch_all(room, now, members)
  if #members == 0 then
    return
  end
  redis.call('BITFIELD', polled_key(generation(room, now)), unpack(set_bits_args(members)))
end

-- Ends the sessions whose time is up; returns how many.
local function expire(room, now)
  if room.accounts > 0 or redis.call('EXISTS', HELD_BY) == 1 then
    release(room, redis.call('ZRANGEBYSCORE', ACTIVE, '-inf', int(now)))
  end
  return redis.call('ZREMRANGEBYSCORE', ACTIVE, '-inf', int(now))
end

-- Places the client holds now under the cap.
local function held(client)
  return tonumber(redis.call('HGET', HOLDERS, client)) or 0
end

-- Lets one visitor (its member as text) in now; the caller has checked
-- capacity and budget.
local function admit_one(room, now, member)
  local until_ms = now + room.session_ms
  redis.call('ZADD', ACTIVE, int(until_ms), member)
  redis.call('HINCRBY', ROOM, 'admitted', 1)
  return until_ms
end

-- 1-based place in line of a member (as text); nil before the opening
-- (places are drawn then) and in a lottery (random method), where a place
-- says nothing.
local function position(room, now, member)
  if not opened(room, now) or room.method == 'random' then
    return nil
  end
  if room.draw_pending then
    local score = tonumber(redis.call('ZSCORE', WAITING, member))
    if score and score >= AWAITING_DRAW and score < PREQUEUE_SPAN then
      return nil
    end
  end
  return redis.call('ZRANK', WAITING, member) + 1
end

-- A visitor's own part of an answer: {outcome, seq, position, until_ms,
-- waiting}, with -1 for "none". `member` (text or number, or nil) is the
-- visitor's; the answer carries its seq. `waiting` is the line as this
-- visitor leaves it (a batch of joins lengthens it join by join).
local function standing(room, outcome, member, pos, until_ms)
  local seq = member and (room.base + tonumber(member)) or -1
  return { outcome, seq, pos or -1, until_ms or 0, redis.call('ZCARD', WAITING) }
end

-- The room's part of an answer, the same for every visitor of one script
-- call: {state, opens_at, rate_est, abandon_ms, now, seats, rate_factor,
-- schedule ('' before the first tick; see tick.lua)}, the rates as text (Lua
-- numbers would be truncated).
local function room_figures(room, now)
  return { room.state, room.opens_at, real(room.rate_est), room.abandon_ms, now,
    room.seats, real(room.rate_factor), redis.call('HGET', ROOM, 'eta') or '' }
end

-- The answer of status, one flat array: standing() then room_figures().
local function view(room, now, outcome, member, pos, until_ms)
  local out = standing(room, outcome, member, pos, until_ms)
  for _, figure in ipairs(room_figures(room, now)) do
    out[#out + 1] = figure
  end
  return out
end

-- Notes when a member joined, at most once a second, so the wait of the
-- front of the line can be told without storing a time per visitor.
local function mark(room, now, member)
  if now - room.mark_at >= 1000 then
    redis.call('ZADD', MARKS, int(member), int(now))
    redis.call('HSET', ROOM, 'mark_at', int(now))
    room.mark_at = now -- the next join of the same batch reads it
  end
end
