-- join.lua: a batch of joins, each of which gives a place in line, keeps an
-- existing one, or admits at once; run in turn, in the order given, so each
-- gets its own member from the one counter and exactly the answer it would
-- have got alone at that point. A join with an account gets the place the
-- account holds when it stands (the account index: see the prelude), as a
-- rejoin with that place's ticket would; a ticket's standing place wins
-- over it.
-- ARGV[2] span: places taken after the opening are ordered by span + member,
--         behind every pre-queue draw
-- ARGV[3] the batch's kinds, one letter per join in order: 'p' a plain join
--         (no ticket, no cap, no account, no challenge: most of an on-sale),
--         'w' a plain join with a solved challenge (most of an on-sale in a
--         room that asks one), 's' one whose seed expires in the same
--         minute as the last 'w' join's (most of those), 'a' a plain join
--         with an account (most of an on-sale in a room that reads
--         identities), 'f' any other. No two joins of a batch show one
--         solution as 's' or 'w': the origin sends a repeat as 'f'.
-- ARGV[4] a fresh draw seed (hex), taken only by a pre-queue join into a
--         room that has none yet (one stored before rooms had seeds)
-- then, in the same order, none per plain join, two per 'w' (the minute
-- its seed expires in, then the solution: so a 'w' join's solution and
-- those of the 's' joins after it are one run of arguments), one (the
-- solution) per 's', one (the account) per 'a' and six per other:
--   seq of the visitor's valid ticket, or '' when it has none (f only)
--   the client (for the per-client cap)   its cap, 0 = none (f only)
--   the account (its 8 raw bytes), or '' when it has none (f only)
--   the challenge (w, s, f): the solution's 8 raw bytes, '' when the room
--     asks none, '!' when it asks one and none came (f only: then only a
--     standing place is given back, else the outcome 'challenge')
--   the minute its seed expires in (f; see the prelude's sol:<base>:<w>)
-- A solution shown again gets the place it took while that stands, as a
-- ticket or an account does, and 'gone' once it has ended: one solution,
-- one place.
-- (A plain join's three constant arguments cost Redis's parser and Lua's
-- strings a tenth of the join's work; they are not sent.)
-- Returns room_figures(), then one text, values separated by spaces (the
-- client parses one value, not five per join): the room's base, then for
-- each join in order standing()'s five values, with the member in place of
-- the seq (seq = base + member) and outcome waiting | admitted |
-- closed | sold_out | limit (the client already holds its cap of places: in
-- line or inside) | challenge | gone (a spent solution: see above), or the one value '+' for a join that reads as the one
-- before it, one further back: waiting, the next member, the next position
-- (or none after none), no session, the line one longer (most joins of a
-- busy room; Lua writes no number for them); or UNKNOWN_ROOM. The room's
-- figures are the same for every join of a batch, so they are sent (and
-- parsed) once. A waiter who rejoins while every seat is booked reads
-- sold_out and keeps its place.
--
-- A batch writes its new places once, at its end (flush): one ZADD, one
-- BITFIELD for the line's bitmap and one for the polled ring (each bit
-- run of the batch's consecutive members set at once), where each join
-- cost five commands and a ZRANK. So with the accounts of new places: each
-- new account's forward entry is one HSETNX (its check and its write), and
-- the batch's reverse entries, which share a hash per 128 members, one
-- HSET and the count one HINCRBY, where each such join cost five commands;
-- and the solutions of its 'w' and 's' joins are read with one HMGET and written
-- with one HSET (a minute's solutions share a hash), where each cost an
-- HSETNX. Meanwhile the batch counts the
-- line itself (room.waiting) and places a new waiter from that count: a
-- place taken after the opening is behind every other (its score, span +
-- member, is the largest yet), so its position is the line's length.
-- Nothing a join reads is changed by the places still to write, which are
-- all behind it.
--
-- The counter is moved first, past every member the batch could give (one
-- per join), and set to the last one given at the end: a script stopped
-- by an error half-way (it keeps the writes it made) leaves members
-- unused, never given twice.

-- New places of this batch not yet written, in order: their scores (as
-- text) and their members (numbers: the bitmaps are set by runs of them).
local pending_scores, pending = {}, {}
-- The members of `pending` already written as text (a join with an account
-- or a solution needs its text for the index first), by index; the others
-- are written at flush.
local pending_text = {}
-- The first and last pre-queue member this batch gave (draw.rs).
local prequeue_lo, prequeue_hi
-- The last member given before this batch.
local before_batch
-- The counter as Redis holds it now.
local stored_member

-- The line's length, asked once per batch and then counted here.
local function line_length(room)
  if not room.waiting then
    room.waiting = redis.call('ZCARD', WAITING)
  end
  return room.waiting
end

-- The key of the solutions whose seeds expire in minute `window` (text),
-- in this life of the room (see the prelude's sol:<base>:<w>).
local solutions_stem -- made once a batch, by the first to need it
local function solutions_key(room, window)
  if not solutions_stem then
    solutions_stem = STEM .. 'sol:' .. int(room.base) .. ':'
  end
  return solutions_stem .. window
end

-- The member (text) a solution's entry `member` (text, or false: none)
-- names, when this room gave it; else nil.
local function solution_place(room, member)
  local m = tonumber(member)
  if m and m >= 1 and m <= room.last_member then
    return member
  end
  return nil
end

-- The solutions' minutes whose key this batch has set to expire.
local expiring = {}

-- Sets the key of minute `window`'s solutions to expire when that minute
-- ends (by the scripts' clock), once a batch.
local function expire_solutions(now, key, window)
  if not expiring[window] then
    expiring[window] = true
    local ttl = math.floor(((tonumber(window) + 1) * 60000 - now) / 1000) + 1
    redis.call('EXPIRE', key, math.max(ttl, 1))
  end
end

-- The 'w' and 's' joins whose solution the store knew at the batch's
-- start, by the solution's position in ARGV: known[i] = true. One HMGET
-- per run of such solutions (a pow room's batch is mostly one run: a 'w'
-- join, then 's' joins), where each join cost an HSETNX. Nothing else
-- needs recording: no solution comes twice as 'w' or 's' in one batch
-- (ARGV[3]), and the long way reads the store itself.
local known = {}

-- The solutions given places on the short way since the last flush, per
-- minute: solution, member, solution, member, ...
local pending_solutions = {}

-- Arguments each kind of join takes (ARGV[3]'s letters as bytes: 'p',
-- 'w', 's', 'a'); any other ('f') takes six.
local ARGS_OF = { [112] = 0, [119] = 2, [115] = 1, [97] = 1 }
local function args_of(kind)
  return ARGS_OF[kind] or 6
end

-- Marks in `known` those of the solutions ARGV[from..to] (of minute
-- `window`) the store holds.
local function read_run(room, window, from, to)
  local got = redis.call('HMGET', solutions_key(room, window), unpack(ARGV, from, to))
  for i = 1, #got do
    if got[i] then
      known[from + i - 1] = true
    end
  end
end

-- Fills `known` for the 'w' and 's' joins of `kinds` (their arguments
-- from ARGV[5] on, as the loop at the end reads them): one read per run
-- of solutions of one minute that lie side by side in ARGV.
local function read_solutions(room, kinds)
  if string.find(kinds, '^ws*$') then
    -- The usual batch of a pow room: ARGV[5] the minute, then a solution
    -- per join. Read without the scan below, which cost a pow join 700
    -- instructions (script-cost.sh, KIND=s, 24 a batch).
    return read_run(room, ARGV[5], 6, 5 + #kinds)
  end
  local byte = string.byte
  local a = 5
  local window, from, to -- the run being gathered
  for k = 1, #kinds do
    local kind = byte(kinds, k)
    if kind == 115 then -- 's'
      if not window then
        error('join.lua: an s join before any w join (ARGV[3])')
      end
      if to ~= a - 1 then
        if from then
          read_run(room, window, from, to)
        end
        from = a
      end
      to = a
      a = a + 1
    elseif kind == 119 then -- 'w'
      if from then
        read_run(room, window, from, to)
      end
      window, from, to = ARGV[a], a + 1, a + 1
      a = a + 2
    else
      a = a + args_of(kind)
    end
  end
  if from then
    read_run(room, window, from, to)
  end
end

-- Writes the solutions given places since the last flush, one HSET per
-- minute.
local function flush_solutions(room, now)
  for window, fields in pairs(pending_solutions) do
    local key = solutions_key(room, window)
    for i = 1, #fields, CHUNK do
      redis.call('HSET', key, unpack(fields, i, math.min(i + CHUNK - 1, #fields)))
    end
    expire_solutions(now, key, window)
  end
  pending_solutions = {}
end

-- Records that `solution` took the place of `member` (text), now (HSET).
local function remember_solution(room, now, solution, window, member)
  local key = solutions_key(room, window)
  redis.call('HSET', key, solution, member)
  expire_solutions(now, key, window)
end

-- The text of the member a claim (an account's below, a solution's in
-- join_one) has just recorded, for the line's ZADD to take too (made
-- once); nil when none has.
local claimed_text

-- The members and accounts given places on the short way since the last
-- flush, whose reverse entries (acct-rev) flush writes.
local pending_account_members, pending_accounts = {}, {}

-- Writes the reverse entries of the accounts given places since the last
-- flush, one SETRANGE per run of consecutive members in one reverse
-- string (a batch's members are consecutive, so mostly one), and counts
-- them.
local function flush_accounts(room)
  local n = #pending_account_members
  if n == 0 then
    return
  end
  local members, i = pending_account_members, 1
  while i <= n do
    local first = members[i]
    local last_of_string = first - first % PER_REVERSE + PER_REVERSE - 1
    local j = i
    while j < n and members[j + 1] == members[j] + 1 and members[j + 1] <= last_of_string do
      j = j + 1
    end
    redis.call('SETRANGE', reverse_key(room, first), reverse_offset(first),
      table.concat(pending_accounts, '', i, j))
    i = j + 1
  end
  redis.call('HINCRBY', ROOM, 'accounts', n)
  pending_account_members, pending_accounts = {}, {}
end

-- Whether `account` (of a join on the short way, to be given `member`, a
-- number) has no entry in the index; if so it now names `member` (its
-- forward entry: the check and the write are one HSETNX, written at once,
-- so a second join of the account in this batch finds it). Any entry at
-- all, standing or not, sends the join the long way, which reads and
-- mends it.
local function claim_account(room, account, member)
  local text = int(member)
  if redis.call('HSETNX', account_key(account), account, text) == 0 then
    return false
  end
  claimed_text = text
  room.accounts = room.accounts + 1
  local n = #pending_account_members + 1
  pending_account_members[n] = member
  pending_accounts[n] = account
  return true
end

local function flush(room, now)
  flush_accounts(room)
  flush_solutions(room, now)
  if #pending == 0 then
    return
  end
  local per = CHUNK / 2 -- places per ZADD: 2 arguments each
  local texts = next(pending_text) and pending_text -- nil: none written
  for i = 1, #pending, per do
    local scores = {}
    for j = i, math.min(i + per - 1, #pending) do
      scores[#scores + 1] = pending_scores[j]
      scores[#scores + 1] = texts and texts[j] or int(pending[j])
    end
    redis.call('ZADD', WAITING, unpack(scores))
  end
  -- The batch's members are consecutive (only a visitor let in at once,
  -- into an empty line, takes one without a place): a SET or two each.
  local bits = set_runs_args(pending)
  local polled = polled_key(generation(room, now))
  for i = 1, #bits, CHUNK do
    local part = { unpack(bits, i, math.min(i + CHUNK - 1, #bits)) }
    redis.call('BITFIELD', PRESENT, unpack(part))
    redis.call('BITFIELD', polled, unpack(part))
  end
  pending_scores, pending, pending_text = {}, {}, {}
end

-- The previous answer of this batch as numbers (member, position, line;
-- -1 for none), or nil when it was not a plain 'waiting'.
local prev_member, prev_pos, prev_line

-- standing(), appended to `out` (a table per join was a fifth of the
-- script's time per join), with the member in place of the seq (the text
-- starts with the room's base, once). Numbers are written with int():
-- table.concat would use %.14g, which costs glibc several times more. A
-- join that reads as the previous one, one further back, is written '+'
-- and costs no number at all.
local function answer(out, room, outcome, member, pos, until_ms)
  local m = tonumber(member) or -1 -- a number, or the text member_of gave
  local p = pos or -1
  local line = room.waiting or redis.call('ZCARD', WAITING)
  local plain = outcome == 'waiting' and not until_ms
  if plain and prev_member and m == prev_member + 1 and line == prev_line + 1
    and ((p == -1 and prev_pos == -1) or (prev_pos > 0 and p == prev_pos + 1)) then
    out[#out + 1] = '+'
  else
    local n = #out
    out[n + 1] = outcome
    out[n + 2] = int(m)
    out[n + 3] = int(p)
    out[n + 4] = until_ms and int(until_ms) or '0'
    out[n + 5] = int(line)
  end
  if plain and m > 0 then
    prev_member, prev_pos, prev_line = m, p, line
  else
    prev_member = nil
  end
end

-- Whether this batch's plain joins (no ticket, no cap) may take the short
-- way in join_one: the room gives places in order (open, opened, not a
-- lottery, not sold out) and a join never lets its visitor in at once
-- (passthrough does; so does an empty line, which the short way also
-- checks). Set once per batch: nothing a join does changes it.
local plain_ok

-- Answers as a rejoin with the ticket of `mine` (a member as text) when its
-- place still stands, and says whether it did. Those inside stay inside
-- even when the room stops taking places.
local function rejoin(out, room, now, mine)
  if tonumber(mine) > before_batch then
    -- Only a ticket not yet handed out, or an account, could name a place
    -- of this batch; answer it from the store all the same.
    flush(room, now)
  end
  local until_ms = tonumber(redis.call('ZSCORE', ACTIVE, mine))
  if until_ms and until_ms > now then
    answer(out, room, 'admitted', mine, nil, until_ms)
    return true
  end
  if not redis.call('ZSCORE', WAITING, mine) then
    return false
  end
  if refusing(room) then
    answer(out, room, 'closed', mine)
  else
    touch(room, now, mine)
    if room.seats == 'sold_out' then
      answer(out, room, 'sold_out', mine)
    else
      answer(out, room, 'waiting', mine, position(room, now, mine))
    end
  end
  return true
end

-- `plain`: the join is no 'f' (no ticket, no cap, no account with a
-- solution, no missing solution, and no solution shown earlier in the
-- batch) and shows no solution the store knew (`known`), so it may take
-- the short way.
local function join_one(out, room, now, span, plain, existing, holder, max_places, account,
                        solution, window)
  -- The short way, most joins of an on-sale: exactly what the long way
  -- below does for them (a new place at the back of a non-empty line),
  -- without its checks that cannot apply. An account (without a
  -- solution) takes it only when it is new (claimed last, so nothing after
  -- it can send the join the long way); a solution is new (`plain`).
  if plain and plain_ok
    and room.waiting and room.waiting > 0
    and not (room.max_line > 0 and room.last_member >= room.max_line) -- the line cap, as below
    and (account == '' or (solution == '' and claim_account(room, account, room.last_member + 1))) then
    local member = room.last_member + 1
    if solution ~= '' then
      -- The solution is new: it takes this place (written at flush).
      local text = int(member)
      claimed_text = text
      local fields = pending_solutions[window]
      if not fields then
        fields = {}
        pending_solutions[window] = fields
      end
      local k = #fields
      fields[k + 1] = solution
      fields[k + 2] = text
    end
    room.last_member = member
    mark(room, now, member)
    local n = #pending + 1
    pending_scores[n] = int(span + member)
    pending[n] = member
    if claimed_text then
      pending_text[n] = claimed_text
      claimed_text = nil
    end
    local line = room.waiting + 1
    room.waiting = line
    if prev_member == member - 1 and prev_line == line - 1 and prev_pos == line - 1 then
      -- answer()'s '+' (the previous answer, one further back), inline:
      -- the short way's usual answer.
      out[#out + 1] = '+'
      prev_member, prev_pos, prev_line = member, line, line
      return
    end
    return answer(out, room, 'waiting', member, line)
  end
  -- max_places arrives as text: most joins do not read it as a
  -- number (Lua's tonumber is glibc's strtod).
  -- A valid ticket whose place still stands gets that place back, never a
  -- second one; so does an account, when the ticket's place does not stand.
  if account ~= '' then
    -- The index as the store holds it: account_place reads both entries.
    flush_accounts(room)
  end
  if solution ~= '' and solution ~= '!' then
    -- Likewise the solutions: read below.
    flush_solutions(room, now)
  end
  local mine = member_of(room, existing) -- nil: no ticket, or a seq never given
  if mine and rejoin(out, room, now, mine) then
    return
  end
  local theirs
  if account ~= '' then
    theirs = account_place(room, account)
    if theirs and theirs ~= mine and rejoin(out, room, now, theirs) then
      return
    end
  end
  -- So does a solution shown before; without one, nothing else is given.
  if solution == '!' then
    return answer(out, room, 'challenge')
  end
  if solution ~= '' then
    local solved = solution_place(room, redis.call('HGET', solutions_key(room, window), solution))
    if solved then
      if solved ~= mine and solved ~= theirs and rejoin(out, room, now, solved) then
        return
      end
      -- Its place has ended: the solution is spent.
      return answer(out, room, 'gone')
    end
  end

  if refusing(room) then
    return answer(out, room, 'closed')
  end
  if room.seats == 'sold_out' or (room.max_line > 0 and room.last_member >= room.max_line) then
    return answer(out, room, 'sold_out')
  end
  if max_places ~= '0' then
    max_places = tonumber(max_places)
  else
    max_places = 0
  end
  if max_places > 0 and held(holder) >= max_places then
    -- A session whose time is up holds nothing, even before a tick ends it.
    expire(room, now)
    if held(holder) >= max_places then
      return answer(out, room, 'limit')
    end
  end

  -- The order of the line is this counter: one atomic step, never a clock.
  -- (The ticket gets the seq base + member; see member_of.)
  local member = room.last_member + 1
  room.last_member = member
  if max_places > 0 then
    redis.call('HINCRBY', HOLDERS, holder, 1)
    redis.call('HSET', HELD_BY, int(member), holder)
  end
  if account ~= '' then
    index_account(room, account, member)
  end
  if solution ~= '' then
    remember_solution(room, now, solution, window, int(member))
  end
  mark(room, now, member)
  local is_open = opened(room, now)

  if admitting(room, now) then
    if room.method == 'passthrough' then
      -- The gate is off: everyone is let in, whatever capacity and rate say.
      return answer(out, room, 'admitted', member, nil, admit_one(room, now, int(member)))
    end
    -- Nobody waits and there is room: let the visitor in now rather than make
    -- it wait a tick in an empty line.
    if line_length(room) == 0 then
      expire(room, now)
      if redis.call('ZCARD', ACTIVE) < room.capacity then
        refill(room, now)
        if room.allow >= 1 then
          room.allow = room.allow - 1
          save_budget(room)
          return answer(out, room, 'admitted', member, nil, admit_one(room, now, int(member)))
        end
        save_budget(room)
      end
    end
  end

  local score
  if is_open then
    score = span + member
  else
    -- Ordered by the draw at the opening; until then its order means nothing.
    score = AWAITING_DRAW + member
    prequeue_lo = prequeue_lo or member
    prequeue_hi = member
  end
  pending_scores[#pending_scores + 1] = int(score)
  pending[#pending + 1] = member
  room.waiting = line_length(room) + 1
  local pos -- as position(): none before the opening or in a lottery
  if is_open and room.method ~= 'random' then
    pos = room.waiting
  end
  return answer(out, room, 'waiting', member, pos)
end

local now = now_ms()
local room = load_room(now)
if not room then
  return UNKNOWN_ROOM
end
local kinds = ARGV[3]
before_batch = room.last_member
stored_member = before_batch + #kinds
if stored_member ~= before_batch then
  redis.call('HSET', ROOM, 'seq', int(stored_member))
end
local span = tonumber(ARGV[2])
plain_ok = not refusing(room) and room.seats ~= 'sold_out' and opened(room, now)
  and room.method ~= 'random' and not (admitting(room, now) and room.method == 'passthrough')
if plain_ok then
  -- The short way needs the line's length: asked now, the first join of
  -- the batch can take it too.
  line_length(room)
end
if string.find(kinds, '[ws]') then
  read_solutions(room, kinds)
end
local out = room_figures(room, now)
local answers = { int(room.base) }
local argv, byte = ARGV, string.byte
local a = 5 -- the next join's first argument (as many as args_of says)
local window -- the minute of the last 'w' join's seed
for k = 1, #kinds do
  local kind = byte(kinds, k)
  if kind == 112 then -- 'p'
    join_one(answers, room, now, span, true, '', '', '0', '', '', '')
  elseif kind == 115 then -- 's'
    join_one(answers, room, now, span, not known[a], '', '', '0', '', argv[a], window)
    a = a + 1
  elseif kind == 119 then -- 'w'
    window = argv[a]
    join_one(answers, room, now, span, not known[a + 1], '', '', '0', '', argv[a + 1], window)
    a = a + 2
  elseif kind == 97 then -- 'a'
    join_one(answers, room, now, span, true, '', '', '0', argv[a], '', '')
    a = a + 1
  else
    join_one(answers, room, now, span, false, argv[a], argv[a + 1], argv[a + 2], argv[a + 3],
      argv[a + 4], argv[a + 5])
    a = a + 6
  end
end
flush(room, now)
if prequeue_hi then
  -- The pre-queue's members are consecutive: every place given before the
  -- opening is one. Its seed exists before its first member does.
  local d = redis.call('HMGET', ROOM, 'draw_seed', 'draw_lo')
  if not d[1] then
    redis.call('HSET', ROOM, 'draw_seed', ARGV[4], 'draw_at', int(room.opens_at))
  end
  if not d[2] then
    redis.call('HSET', ROOM, 'draw_lo', int(prequeue_lo))
  end
  redis.call('HSET', ROOM, 'draw_hi', int(prequeue_hi))
end
if room.last_member ~= stored_member then
  redis.call('HSET', ROOM, 'seq', int(room.last_member))
end
out[#out + 1] = table.concat(answers, ' ')
return out
