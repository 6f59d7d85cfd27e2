//! The embedded store: the whole queue in this process's memory, for a
//! single origin instance with nothing installed (no `--redis-url`).
//!
//! It follows the Redis scripts (`queue/redis/lua/*.lua`) step for step, with
//! the same orderings, so the same test suite and a randomized parity test
//! hold both to one behaviour. Each room sits behind its own mutex; every
//! operation is one short critical section, which is what makes it atomic.
//! Nothing survives a restart, and several instances cannot share it: for
//! either, use Redis.
//!
//! Two numbers name a visitor, as in the scripts: its `Member` (what the
//! store keeps: 1, 2, 3, ... in order of joining) and its sequence number
//! (`seq`, what its ticket carries: the room's base plus the member). Only
//! `member_of` and `seq_of` cross between them.

mod ranked;

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque, btree_map, hash_map};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, RwLock};

use async_trait::async_trait;
use rand::RngExt;

use ranked::{Entry, RankedSet};

use crate::counter_hash::{CounterMap, CounterSet};
use crate::draw::{self, AWAITING_DRAW, DrawState, DrawView};

use crate::store::{
    DEPARTURES_KEPT_MS, END_BUCKETS, JoinRequest, Joined, LineView, MAX_ADMITS_PER_TICK,
    MAX_DROPS_PER_TICK, Observation, PREQUEUE_SPAN, Proof, QueueStore, RoomFigures, SaleSignal,
    Sample, Schedule, SeatsLeft, Snapshot, Standing, StoreError, TickReport, Watch, sample_ranks,
    turnover_window_ms,
};
use room::clock::Clock;
use room::{AccountHash, QueueingMethod, RoomId, RoomMap, RoomSettings, RoomState, unix_ms};

/// A visitor's number inside the store: 1, 2, 3, ... in order of joining.
/// Its own type so that it is never mistaken for the sequence number a
/// ticket carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct Member(u64);

/// The maps keyed by member (a counter the store gives out: see
/// [`counter_hash`](crate::counter_hash)).
type ByMember<V> = CounterMap<Member, V>;
type MemberSet = CounterSet<Member>;

/// One room's line, sessions and counters.
#[derive(Default)]
struct Room {
    settings: RoomSettings,
    state: Option<RoomState>,
    /// Set by `set_sale`, kept by `put_room`.
    sale: SaleSignal,
    /// Added to a member to make its sequence number; see `member_of`.
    base: u64,
    /// The last member given, so also how many places were given.
    last_member: u64,
    admitted: u64,
    abandoned: u64,
    /// Ticks that drew a lottery (`lottery_ticks` in the room hash).
    lottery_ticks: u64,
    allow: Option<f64>,
    refill_at: Option<u64>,
    rate_est: f64,
    rate_at: Option<u64>,
    mark_at: u64,
    /// The line, ordered as Redis orders the waiting sorted set.
    waiting: RankedSet,
    /// member -> (order score, generation of its last poll) of everyone in
    /// line.
    waiters: ByMember<(u64, u64)>,
    /// Who polled when, to drop those who stopped polling.
    polls: Polls,
    /// member -> end of session ms.
    active: ByMember<u64>,
    /// (end of session ms, member), to end sessions in order.
    ending: BTreeSet<(u64, Member)>,
    /// client -> places it holds now under the cap; one at zero is removed.
    holders: HashMap<Arc<str>, u32>,
    /// member -> client, for each place given under the cap (the clients'
    /// texts shared with `holders`).
    held_by: ByMember<Arc<str>>,
    /// account -> the member of the place it was last given, while that
    /// place stands (the `acct:` hashes).
    accounts: HashMap<AccountHash, Member>,
    /// member -> the account its place was given to (the `acct-of:` hashes).
    account_of: ByMember<AccountHash>,
    /// A challenge's solution -> (the member of the place it took, when it
    /// may be forgotten, ms): one solution, one place (the `sol:` hashes).
    solutions: HashMap<[u8; 8], (Member, u64)>,
    /// How many solutions may be kept before the expired are pruned.
    solutions_prune_at: usize,
    /// member -> join time ms, one a second at most.
    marks: BTreeMap<Member, u64>,
    /// The early-leave measure as of the last tick (`turn_*`, `leaves`,
    /// `inside` in the room hash).
    turnover: Turnover,
    /// The last tick's summary (`eta` in the room hash).
    schedule: Option<Schedule>,
    /// (time ms, member) of waiters who left the line, oldest first, for
    /// [`DEPARTURES_KEPT_MS`] (the `departed` sorted set).
    departed: VecDeque<(u64, Member)>,
    /// The pre-queue draw (the `draw_*` fields of the room hash).
    draw: Option<DrawState>,
}

/// "Still polling" marks, as coarse as the Redis store's ring of bitmaps
/// (`touch` in the scripts' prelude): time in generations of abandon / 6,
/// each waiter filed under the generation of its last poll; the tick drops
/// those whose generation is dead, once per generation, lowest member first.
#[derive(Default)]
struct Polls {
    /// The generation length (ms) the generations are numbered by.
    g: Option<u64>,
    /// The newest generation any poll or tick has seen.
    newest: u64,
    /// The newest dead generation the tick has swept.
    swept: u64,
    /// The last sweep stopped at its bound: sweep again next tick.
    more: bool,
    /// Whether Redis would hold a `present` bitmap: from the first place in
    /// line until a tick finds the line empty.
    present: bool,
    /// generation -> the waiters whose last poll fell in it.
    by_gen: BTreeMap<u64, MemberSet>,
    /// When the last tick ran (store clock, ms).
    tick_at: Option<u64>,
}

/// Counters the tick keeps to tell sessions that ended early (left, booked)
/// from those that ran out, as in `tick.lua`.
#[derive(Default)]
struct Turnover {
    at: Option<u64>,
    active: u64,
    admitted: u64,
    leaves: f64,
    inside: f64,
    watched: u64,
}

/// What applies at one instant: the room's settings with a running window's
/// values in place and the sale's rate factor applied (`load_room` in the
/// scripts' prelude).
struct Effective {
    state: RoomState,
    seats: SeatsLeft,
    capacity: u64,
    /// Admissions per second: the settings' (or window's) times the factor.
    rate: f64,
    session_ms: u64,
    abandon_ms: u64,
    opens_at: Option<u64>,
    max_line: u64,
    method: QueueingMethod,
}

impl Room {
    fn effective(&self, now: u64) -> Effective {
        let s = &self.settings;
        let now = i64::try_from(now).unwrap_or(i64::MAX);
        let s = match s
            .windows
            .iter()
            .find(|w| unix_ms(w.starts_at) <= now && now < unix_ms(w.ends_at))
        {
            Some(w) => s.in_window(w),
            None => s.clone(),
        };
        Effective {
            state: self.state.unwrap_or(RoomState::Open),
            seats: self.sale.seats,
            capacity: u64::from(s.capacity),
            rate: s.admit_per_second * self.sale.rate_factor,
            session_ms: u64::from(s.session_seconds) * 1000,
            abandon_ms: u64::from(s.abandon_seconds) * 1000,
            opens_at: s.opens_at_ms(),
            max_line: s.max_line.unwrap_or(0),
            method: s.method,
        }
    }

    /// The next instant after `now` at which one of the room's windows
    /// starts or ends.
    fn next_window_edge(&self, now: u64) -> Option<u64> {
        let now = i64::try_from(now).unwrap_or(i64::MAX);
        self.settings
            .windows
            .iter()
            .flat_map(|w| [unix_ms(w.starts_at), unix_ms(w.ends_at)])
            .filter(|&edge| edge > now)
            .min()
            .and_then(|edge| u64::try_from(edge).ok())
    }

    /// The member a sequence number names, if this room gave it out: as the
    /// Redis store, sequence numbers start at a base taken from the clock
    /// when the room is created, so a ticket from an earlier life of the
    /// room (before a restart) never names a new visitor's place.
    fn member_of(&self, seq: u64) -> Option<Member> {
        seq.checked_sub(self.base)
            .filter(|m| (1..=self.last_member).contains(m))
            .map(Member)
    }

    /// The sequence number the ticket of `member` carries.
    fn seq_of(&self, member: Member) -> u64 {
        self.base + member.0
    }

    fn opened(e: &Effective, now: u64) -> bool {
        e.opens_at.is_none_or(|at| now >= at)
    }

    fn refusing(e: &Effective) -> bool {
        e.state == RoomState::Closed || e.method == QueueingMethod::Reject
    }

    /// Whether anyone may be let in now, by the tick or by a join (an open,
    /// opened room with seats to sell), as `admitting` in the prelude.
    fn admitting(e: &Effective, now: u64) -> bool {
        e.state == RoomState::Open && Self::opened(e, now) && e.seats == SeatsLeft::Available
    }

    /// The token bucket, as `refill` in the prelude.
    fn refill(&mut self, e: &Effective, now: u64) {
        let burst = e.rate.max(1.0);
        let mut allow = self.allow.unwrap_or(burst);
        let last = self.refill_at.unwrap_or(now);
        if now > last {
            allow += e.rate * (now - last) as f64 / 1000.0;
        }
        self.allow = Some(allow.min(burst));
        self.refill_at = Some(now.max(last));
    }

    /// Ends the sessions whose time is up; returns how many.
    fn expire(&mut self, now: u64) -> u64 {
        let mut n = 0;
        while let Some(&(until, member)) = self.ending.first() {
            if until > now {
                break;
            }
            self.ending.pop_first();
            self.active.remove(&member);
            self.release(member);
            n += 1;
        }
        n
    }

    /// Gives the place of `member`, which no longer holds one, back to the
    /// client it was given to under the cap, as `release` in the prelude; a
    /// client left holding nothing is forgotten. Every step that ends a
    /// place calls this.
    fn release(&mut self, member: Member) {
        if let Some(account) = self.account_of.remove(&member)
            && let hash_map::Entry::Occupied(entry) = self.accounts.entry(account)
            && *entry.get() == member
        {
            entry.remove();
        }
        let Some(client) = self.held_by.remove(&member) else {
            return;
        };
        if let hash_map::Entry::Occupied(mut held) = self.holders.entry(client) {
            *held.get_mut() = held.get().saturating_sub(1);
            if *held.get() == 0 {
                held.remove();
            }
        }
    }

    /// Indexes `account` to its new place, `member`, as `index_account` in
    /// the prelude: a place it had that ended without being released yet
    /// (a session past its time) is forgotten.
    fn index_account(&mut self, account: AccountHash, member: Member) {
        if let Some(old) = self.accounts.insert(account, member) {
            self.account_of.remove(&old);
        }
        self.account_of.insert(member, account);
    }

    /// Remembers that the solution `key` took `member`'s place, until
    /// `expires_at_ms`. The expired are pruned whenever the map has doubled
    /// since the last pruning, so it holds what is live and at most as
    /// much again.
    fn remember_solution(&mut self, key: [u8; 8], member: Member, expires_at_ms: u64, now: u64) {
        if self.solutions.len() >= self.solutions_prune_at {
            self.solutions.retain(|_, &mut (_, until)| until > now);
            self.solutions_prune_at = (self.solutions.len() * 2).max(1024);
        }
        self.solutions.insert(key, (member, expires_at_ms));
    }

    /// Places `client` holds now under the cap.
    fn held(&self, client: &str) -> u32 {
        self.holders.get(client).copied().unwrap_or(0)
    }

    /// Counts a new place for `client`.
    fn hold(&mut self, member: Member, client: &str) {
        let client = match self.holders.get_key_value(client) {
            Some((shared, _)) => shared.clone(),
            None => Arc::from(client),
        };
        *self.holders.entry(client.clone()).or_default() += 1;
        self.held_by.insert(member, client);
    }

    fn admit_one(&mut self, e: &Effective, now: u64, member: Member) -> u64 {
        let until = now + e.session_ms;
        if let Some(old) = self.active.insert(member, until) {
            self.ending.remove(&(old, member));
        }
        self.ending.insert((until, member));
        self.admitted += 1;
        until
    }

    fn session_end(&self, member: Member, now: u64) -> Option<u64> {
        self.active
            .get(&member)
            .copied()
            .filter(|&until| until > now)
    }

    fn remove_waiter(&mut self, member: Member) -> bool {
        match self.waiters.remove(&member) {
            Some((score, generation)) => {
                self.waiting.remove(&Entry { score, member });
                self.unfile(member, generation);
                true
            }
            None => false,
        }
    }

    /// The generation `now` falls in, after moving the polls to it, as
    /// `generation` in the prelude: a new generation length (the abandon
    /// time changed) renumbers them, every waiter counts as polling now, and
    /// the sweep starts again.
    fn generation(&mut self, now: u64) -> u64 {
        let abandon_ms = u64::from(self.settings.abandon_seconds) * 1000;
        let g = abandon_ms.div_ceil(6).max(1);
        let k = now / g;
        if self.polls.g != Some(g) {
            self.polls.g = Some(g);
            self.polls.newest = k;
            // As in the prelude: swept generations had the old numbering.
            self.polls.swept = 0;
            self.all_polling(k);
        } else if k > self.polls.newest {
            self.polls.newest = k;
        }
        self.polls.newest
    }

    /// Every waiter counts as polling in generation `k`.
    fn all_polling(&mut self, k: u64) {
        let everyone: MemberSet = self.waiters.keys().copied().collect();
        self.polls.by_gen.clear();
        if !everyone.is_empty() {
            self.polls.by_gen.insert(k, everyone);
        }
        for (_, generation) in self.waiters.values_mut() {
            *generation = k;
        }
    }

    /// Takes `member` out of the generation it is filed under.
    fn unfile(&mut self, member: Member, generation: u64) {
        if let btree_map::Entry::Occupied(mut set) = self.polls.by_gen.entry(generation) {
            set.get_mut().remove(&member);
            if set.get().is_empty() {
                set.remove();
            }
        }
    }

    /// Records that a waiter still polls at `now`, as `touch` in the prelude.
    fn touch(&mut self, member: Member, now: u64) {
        if !self.waiters.contains_key(&member) {
            return;
        }
        let k = self.generation(now);
        let Some((_, generation)) = self.waiters.get_mut(&member) else {
            return;
        };
        let old = std::mem::replace(generation, k);
        if old != k {
            self.unfile(member, old);
            self.polls.by_gen.entry(k).or_default().insert(member);
        }
    }

    /// Puts a new waiter in line, polling now.
    fn enter(&mut self, member: Member, score: u64, now: u64) {
        self.waiting.insert(Entry { score, member });
        self.polls.present = true;
        let k = self.generation(now);
        self.waiters.insert(member, (score, k));
        self.polls.by_gen.entry(k).or_default().insert(member);
    }

    /// The waiters to drop for not polling, as the tick's sweep in
    /// `tick.lua`: only when a generation died since the last sweep (or it
    /// stopped at its bound), lowest member first, at most `bound`.
    fn stale(&mut self, now: u64, bound: usize) -> Vec<Member> {
        let k = self.generation(now);
        let g = self.polls.g.unwrap_or(1);
        let abandon_ms = u64::from(self.settings.abandon_seconds) * 1000;
        // A gap between ticks of more than half the abandon time, as in
        // `tick.lua`: the whole line counts as polling now.
        if self
            .polls
            .tick_at
            .is_some_and(|at| now.saturating_sub(at) > abandon_ms / 2)
        {
            self.all_polling(k);
        }
        self.polls.tick_at = Some(now);
        let dead = now.saturating_sub(abandon_ms) / g;
        if !((dead > self.polls.swept || self.polls.more) && self.polls.present) {
            return Vec::new();
        }
        let mut stale: Vec<Member> = self
            .polls
            .by_gen
            .range(..=dead)
            .flat_map(|(_, members)| members.iter().copied())
            .collect();
        stale.sort_unstable();
        self.polls.more = stale.len() > bound;
        stale.truncate(bound);
        self.polls.swept = self.polls.swept.max(dead);
        stale
    }

    /// The answer of a rejoin with the ticket of `mine`, when its place
    /// still stands (as `rejoin` in `join.lua`): those inside stay inside
    /// even when the room stops taking places.
    fn rejoin(&mut self, e: &Effective, now: u64, mine: Member) -> Option<Joined> {
        if let Some(until) = self.session_end(mine, now) {
            return Some(Joined::Answer(self.view(
                e,
                now,
                Some(mine),
                Standing::Admitted { until_ms: until },
            )));
        }
        if !self.waiters.contains_key(&mine) {
            return None;
        }
        let standing = if Room::refusing(e) {
            Standing::Closed
        } else {
            self.touch(mine, now);
            if e.seats == SeatsLeft::SoldOut {
                Standing::SoldOut
            } else {
                Standing::Waiting {
                    position: self.position(e, now, mine),
                }
            }
        };
        Some(Joined::Answer(self.view(e, now, Some(mine), standing)))
    }

    /// One join, as `join.lua`'s `join_one`.
    fn join(&mut self, now: u64, req: &JoinRequest) -> Joined {
        let r = self;
        let e = r.effective(now);
        // A valid ticket whose place still stands gets that place back;
        // so does an account, when the ticket's place does not stand.
        let mine = req.existing.and_then(|seq| r.member_of(seq));
        if let Some(answer) = mine.and_then(|m| r.rejoin(&e, now, m)) {
            return answer;
        }
        let theirs = req.account.and_then(|a| r.accounts.get(&a).copied());
        if let Some(answer) = theirs
            .filter(|&m| Some(m) != mine)
            .and_then(|m| r.rejoin(&e, now, m))
        {
            return answer;
        }
        // So does a solution shown before, while the place it took stands;
        // once that place has ended the solution is spent (one solution,
        // one place).
        let solution = match req.proof {
            Proof::NotAsked => None,
            Proof::Missing => return Joined::ChallengeNeeded,
            Proof::Solved { key, expires_at_ms } => Some((key, expires_at_ms)),
        };
        let solved = solution.and_then(|(key, _)| r.solutions.get(&key).map(|&(m, _)| m));
        if let Some(m) = solved {
            if Some(m) != mine
                && Some(m) != theirs
                && let Some(answer) = r.rejoin(&e, now, m)
            {
                return answer;
            }
            return Joined::Answer(r.view(&e, now, None, Standing::Gone));
        }
        if Room::refusing(&e) {
            return Joined::Answer(r.view(&e, now, None, Standing::Closed));
        }
        if e.seats == SeatsLeft::SoldOut || (e.max_line > 0 && r.last_member >= e.max_line) {
            return Joined::Answer(r.view(&e, now, None, Standing::SoldOut));
        }
        let limit = req.limit.as_ref().filter(|l| l.max > 0);
        if let Some(l) = limit
            && r.held(&l.holder) >= l.max
        {
            // A session whose time is up holds nothing, even before a
            // tick ends it.
            r.expire(now);
            if r.held(&l.holder) >= l.max {
                return Joined::TooManyPlaces;
            }
        }

        // The order of the line is this counter: one step, never a clock.
        r.last_member += 1;
        let member = Member(r.last_member);
        if let Some(l) = limit {
            r.hold(member, &l.holder);
        }
        if let Some(account) = req.account {
            r.index_account(account, member);
        }
        if let Some((key, expires_at_ms)) = solution {
            r.remember_solution(key, member, expires_at_ms, now);
        }
        r.mark(now, member);
        let is_open = Room::opened(&e, now);
        if Room::admitting(&e, now) {
            if e.method == QueueingMethod::Passthrough {
                let until = r.admit_one(&e, now, member);
                return Joined::Answer(r.view(
                    &e,
                    now,
                    Some(member),
                    Standing::Admitted { until_ms: until },
                ));
            }
            if r.waiting.is_empty() {
                r.expire(now);
                if (r.active.len() as u64) < e.capacity {
                    r.refill(&e, now);
                    if r.allow.unwrap_or(0.0) >= 1.0 {
                        r.allow = r.allow.map(|a| a - 1.0);
                        let until = r.admit_one(&e, now, member);
                        return Joined::Answer(r.view(
                            &e,
                            now,
                            Some(member),
                            Standing::Admitted { until_ms: until },
                        ));
                    }
                }
            }
        }
        let score = if is_open {
            PREQUEUE_SPAN + member.0
        } else {
            // Ordered by the draw at the opening (as join.lua).
            let d = r.draw.get_or_insert_with(|| DrawState {
                seed: draw::new_seed(),
                at_ms: e.opens_at.unwrap_or(now),
                members: None,
                done: None,
            });
            let lo = d.members.map_or(member.0, |(lo, _)| lo);
            d.members = Some((lo, member.0));
            AWAITING_DRAW + member.0
        };
        r.enter(member, score, now);
        let position = r.position(&e, now, member);
        Joined::Answer(r.view(&e, now, Some(member), Standing::Waiting { position }))
    }

    fn position(&self, e: &Effective, now: u64, member: Member) -> Option<u64> {
        if !Self::opened(e, now) || e.method == QueueingMethod::Random {
            return None;
        }
        let &(score, _) = self.waiters.get(&member)?;
        if (AWAITING_DRAW..PREQUEUE_SPAN).contains(&score) {
            // Awaiting the draw, which the next tick applies.
            return None;
        }
        Some(self.waiting.rank(&Entry { score, member }) as u64 + 1)
    }

    /// Gives the pre-queue members `lo..=hi` still in line their drawn
    /// scores (as draw.lua: only ever lower), and marks the draw applied.
    fn apply_draw(&mut self, lo: u64, hi: u64) {
        let Some(d) = self.draw.as_mut() else {
            return;
        };
        d.done = Some(hi);
        let (seed, base) = (d.seed, self.base);
        self.write_drawn(&draw::drawn_scores(&seed, base, lo, hi));
    }

    /// Gives each of `scores`' members still in line its drawn score.
    fn write_drawn(&mut self, scores: &[(u64, u64)]) {
        for &(member, score) in scores {
            let member = Member(member);
            let Some((old, gen_)) = self.waiters.get(&member).copied() else {
                continue;
            };
            if score < old {
                self.waiting.remove(&Entry { score: old, member });
                self.waiting.insert(Entry { score, member });
                self.waiters.insert(member, (score, gen_));
            }
        }
    }

    /// Forgets departures older than [`DEPARTURES_KEPT_MS`].
    fn trim_departed(&mut self, now: u64) {
        let cutoff = now.saturating_sub(DEPARTURES_KEPT_MS);
        while self.departed.front().is_some_and(|&(at, _)| at <= cutoff) {
            self.departed.pop_front();
        }
    }

    /// Points of the line at [`sample_ranks`], as `observe.lua` takes them.
    fn take_samples(&self) -> Vec<Sample> {
        sample_ranks(self.waiting.len() as u64)
            .filter_map(|r| self.waiting.nth(r as usize).map(|e| self.sample(r, e)))
            .collect()
    }

    fn sample(&self, rank: u64, e: Entry) -> Sample {
        Sample {
            position: rank + 1,
            seq: (e.score >= PREQUEUE_SPAN).then(|| self.seq_of(e.member)),
        }
    }

    fn mark(&mut self, now: u64, member: Member) {
        if now.saturating_sub(self.mark_at) >= 1000 {
            self.marks.insert(member, now);
            self.mark_at = now;
        }
    }

    /// An answer about `member` (the visitor's place), carrying its
    /// sequence number.
    fn view(
        &self,
        e: &Effective,
        now: u64,
        member: Option<Member>,
        standing: Standing,
    ) -> Snapshot {
        Snapshot {
            seq: member.map(|m| self.seq_of(m)),
            standing,
            line: LineView {
                state: e.state,
                opens_at_ms: e.opens_at,
                waiting: self.waiting.len() as u64,
                admit_rate: self.rate_est,
                abandon_ms: e.abandon_ms,
                sale: self.sale,
                now_ms: now,
                schedule: self.schedule,
            },
        }
    }
}

impl Room {
    /// Ends the tick: measures early leaves since the last one and sums up
    /// the schedule, as the end of `tick.lua`. `active` is after admission.
    fn summarize(&mut self, e: &Effective, now: u64, expired: u64, active: u64) {
        let t = &mut self.turnover;
        let dt = t.at.map_or(0, |at| now.saturating_sub(at));
        let early = (t.active + self.admitted).saturating_sub(t.admitted + expired + active);
        // Nobody inside and nobody leaving: nothing seen, the measure stays.
        if dt > 0 && dt <= 5000 && (t.active > 0 || early > 0) {
            let window = turnover_window_ms(e.session_ms) as f64;
            let alpha = 1.0 - (-(dt as f64) / window).exp();
            t.leaves += alpha * ((early * 1000) as f64 / dt as f64 - t.leaves);
            t.inside += alpha * (t.active as f64 - t.inside);
            t.watched += dt;
        }
        t.at = Some(now);
        t.active = active;
        t.admitted = self.admitted;

        let mut ends = [0; END_BUCKETS];
        let buckets = END_BUCKETS as u64;
        for &(until, _) in &self.ending {
            let j = (1..buckets)
                .find(|&j| until <= now + j * e.session_ms / buckets)
                .unwrap_or(buckets);
            if let Some(end) = ends.get_mut(j as usize - 1) {
                *end += 1;
            }
        }
        // While nobody is let in the budget refills untouched: a resume
        // after a second or more finds it full.
        let burst = e.rate.max(1.0);
        let allow = match self.allow {
            Some(allow) if Room::admitting(e, now) => allow,
            _ => burst,
        };
        self.schedule = Some(Schedule {
            at_ms: now,
            rate: e.rate,
            allow,
            capacity: e.capacity,
            session_ms: e.session_ms,
            free: e.capacity.saturating_sub(active),
            ends,
            leaves: t.leaves,
            inside: t.inside,
            watched_ms: t.watched,
        });
    }
}

/// The queue in this process's memory.
pub struct MemoryStore {
    rooms: RwLock<RoomMap<Mutex<Room>>>,
    /// Draws too large to apply within one tick, under way.
    draws: Mutex<HashMap<RoomId, BigDraw>>,
    clock: Clock,
    /// Every new draw seed, when a test pins it; random otherwise.
    fixed_seed: Option<draw::Seed>,
}

impl Default for MemoryStore {
    fn default() -> Self {
        MemoryStore::new()
    }
}

impl MemoryStore {
    /// An empty store on the system clock.
    pub fn new() -> MemoryStore {
        MemoryStore {
            rooms: RwLock::new(RoomMap::default()),
            draws: Mutex::default(),
            clock: Clock::System,
            fixed_seed: None,
        }
    }

    /// An empty store whose clock is `clock` (unix ms), stepped by a test.
    pub fn with_fixed_clock(clock: Arc<AtomicU64>) -> MemoryStore {
        MemoryStore {
            rooms: RwLock::new(RoomMap::default()),
            draws: Mutex::default(),
            clock: Clock::Manual(clock),
            fixed_seed: None,
        }
    }

    /// Gives every new draw seed as `seed`, so a test can compare this
    /// store's draws with the Redis store's. Production never calls this.
    pub fn with_fixed_seed(mut self, seed: draw::Seed) -> MemoryStore {
        self.fixed_seed = Some(seed);
        self
    }

    fn now(&self) -> u64 {
        self.clock.now_ms()
    }

    /// One tick's share of a draw too large to apply at once: the draw
    /// values are computed on a blocking thread, then the scores written
    /// [`BIG_DRAW_CHUNK`] a tick (the room's lock is held a few tens of ms
    /// at most), the last share marking it applied. Nobody is let in
    /// meanwhile, as while any draw is pending.
    fn advance_big_draw(&self, id: &RoomId) -> Result<(), StoreError> {
        let pending = self.with_room(id, |r, now| {
            let d = r.draw?;
            let (lo, hi) = d.pending(now)?;
            (hi - lo + 1 > DRAW_AT_ONCE).then_some((d.seed, r.base, lo, hi))
        })?;
        let mut draws = self.draws.lock().map_err(|_| poisoned())?;
        let Some((seed, base, lo, hi)) = pending else {
            draws.remove(id);
            return Ok(());
        };
        let job = draws
            .entry(id.clone())
            .or_insert_with(|| BigDraw::start(seed, base, lo, hi));
        if job.hi != hi || job.seed != seed {
            *job = BigDraw::start(seed, base, lo, hi);
        }
        let Some(scores) = job.scores.get() else {
            return Ok(());
        };
        let to = (job.next + BIG_DRAW_CHUNK).min(scores.len());
        let part = scores.get(job.next..to).unwrap_or_default();
        let last = to == scores.len();
        self.with_room(id, |r, _| {
            r.write_drawn(part);
            if last && let Some(d) = r.draw.as_mut() {
                d.done = Some(hi);
            }
        })?;
        job.next = to;
        if last {
            draws.remove(id);
        }
        Ok(())
    }

    /// Runs `f` on the room under its lock, with the store's time. The
    /// rooms' lock is held meanwhile (a room behind an `Arc`, cloned out,
    /// cost two writes a call to a line every call on the room shares).
    /// Every path takes the rooms' lock before a room's, never the other
    /// way, so this cannot deadlock.
    fn with_room<T>(
        &self,
        id: &RoomId,
        f: impl FnOnce(&mut Room, u64) -> T,
    ) -> Result<T, StoreError> {
        let rooms = self.rooms.read().map_err(|_| poisoned())?;
        let room = rooms.get(id).ok_or(StoreError::UnknownRoom)?;
        let mut room = room.lock().map_err(|_| poisoned())?;
        Ok(f(&mut room, self.now()))
    }
}

/// A pre-queue up to this size is drawn within the tick that finds the
/// opening come (some tens of ms); a larger one over the next ticks
/// ([`MemoryStore::advance_big_draw`]).
const DRAW_AT_ONCE: u64 = 20_000;

/// Scores written a tick while applying a large draw.
const BIG_DRAW_CHUNK: usize = 20_000;

/// A draw too large for one tick, under way.
struct BigDraw {
    seed: draw::Seed,
    hi: u64,
    /// (member, score) in draw order, once computed.
    scores: Arc<std::sync::OnceLock<Vec<(u64, u64)>>>,
    /// The next of `scores` to write.
    next: usize,
}

impl BigDraw {
    fn start(seed: draw::Seed, base: u64, lo: u64, hi: u64) -> BigDraw {
        let scores = Arc::new(std::sync::OnceLock::new());
        let slot = scores.clone();
        // A thread of its own: the store is used outside any runtime too.
        std::thread::spawn(move || {
            let _ = slot.set(draw::drawn_scores(&seed, base, lo, hi));
        });
        BigDraw {
            seed,
            hi,
            scores,
            next: 0,
        }
    }
}

fn poisoned() -> StoreError {
    StoreError::Protocol("a room's lock was poisoned by a panic".into())
}

#[async_trait]
impl QueueStore for MemoryStore {
    fn round_trips(&self) -> bool {
        false
    }

    async fn put_room(&self, id: &RoomId, settings: &RoomSettings) -> Result<(), StoreError> {
        let now = self.now();
        let mut rooms = self.rooms.write().map_err(|_| poisoned())?;
        let room = rooms.entry(id.clone()).or_default();
        let room = room.get_mut().map_err(|_| poisoned())?;
        let created = room.state.is_none();
        if created || room.settings.admit_per_second != settings.admit_per_second {
            room.rate_est = settings.admit_per_second;
        }
        let abandon_changed = room.settings.abandon_seconds != settings.abandon_seconds;
        room.settings = settings.clone();
        let fresh = self.fixed_seed.unwrap_or_else(draw::new_seed);
        room.draw = DrawState::put(room.draw, settings.opens_at_ms(), now, fresh);
        if created {
            room.state = Some(RoomState::Open);
            room.base = now * 1000;
        } else if abandon_changed {
            // As put_room.lua: the ring is renumbered now, not by whichever
            // poll or tick comes next (the two stores call it from
            // different places).
            room.generation(now);
        }
        Ok(())
    }

    async fn set_state(&self, id: &RoomId, state: RoomState) -> Result<(), StoreError> {
        self.with_room(id, |r, _| r.state = Some(state))
    }

    async fn set_sale(&self, id: &RoomId, sale: SaleSignal) -> Result<(), StoreError> {
        sale.check()?;
        self.with_room(id, |r, _| r.sale = sale)
    }

    async fn rooms(&self) -> Result<Vec<RoomId>, StoreError> {
        let mut ids: Vec<RoomId> = self
            .rooms
            .read()
            .map_err(|_| poisoned())?
            .keys()
            .cloned()
            .collect();
        ids.sort();
        Ok(ids)
    }

    async fn figures(&self, id: &RoomId) -> Result<RoomFigures, StoreError> {
        self.with_room(id, |r, now| {
            let oldest_wait_seconds = r.waiting.first().and_then(|front| {
                r.marks
                    .range(..=front.member)
                    .next_back()
                    .map(|(_, &joined)| now.saturating_sub(joined) / 1000)
            });
            RoomFigures {
                settings: r.settings.clone(),
                state: r.state.unwrap_or(RoomState::Open),
                waiting: r.waiting.len() as u64,
                active: r.active.values().filter(|&&until| until > now).count() as u64,
                admitted_total: r.admitted,
                abandoned_total: r.abandoned,
                places_given: r.last_member,
                admit_rate: r.rate_est,
                sale: r.sale,
                oldest_wait_seconds,
                capped_clients: r.holders.len() as u64,
                capped_places: r.held_by.len() as u64,
                accounts: r.accounts.len() as u64,
            }
        })
    }

    async fn join_many(
        &self,
        id: &RoomId,
        joins: &[JoinRequest],
    ) -> Result<Vec<Joined>, StoreError> {
        // One lock for the whole batch, as one script call on Redis.
        self.with_room(id, |r, now| {
            joins.iter().map(|req| r.join(now, req)).collect()
        })
    }

    async fn status(&self, id: &RoomId, seq: u64) -> Result<Snapshot, StoreError> {
        self.with_room(id, |r, now| {
            let e = r.effective(now);
            let mine = r.member_of(seq);
            if let Some(until) = mine.and_then(|m| r.session_end(m, now)) {
                return r.view(&e, now, mine, Standing::Admitted { until_ms: until });
            }
            if Room::refusing(&e) {
                return r.view(&e, now, mine, Standing::Closed);
            }
            let Some(m) = mine.filter(|m| r.waiters.contains_key(m)) else {
                return r.view(&e, now, mine, Standing::Gone);
            };
            r.touch(m, now);
            if e.seats == SeatsLeft::SoldOut {
                return r.view(&e, now, mine, Standing::SoldOut);
            }
            let position = r.position(&e, now, m);
            r.view(&e, now, mine, Standing::Waiting { position })
        })
    }

    async fn leave(&self, id: &RoomId, seq: u64) -> Result<bool, StoreError> {
        self.with_room(id, |r, now| {
            let Some(m) = r.member_of(seq) else {
                return false;
            };
            let waited = r.remove_waiter(m);
            if waited {
                r.departed.push_back((now, m));
                r.trim_departed(now);
            }
            let inside = match r.active.remove(&m) {
                Some(until) => r.ending.remove(&(until, m)),
                None => false,
            };
            r.release(m);
            waited || inside
        })
    }

    async fn session_active(&self, id: &RoomId, seq: u64) -> Result<bool, StoreError> {
        self.with_room(id, |r, now| {
            r.member_of(seq)
                .and_then(|m| r.session_end(m, now))
                .is_some()
        })
    }

    async fn tick(&self, id: &RoomId) -> Result<TickReport, StoreError> {
        self.advance_big_draw(id)?;
        self.with_room(id, |r, now| {
            let e = r.effective(now);
            let expired = r.expire(now);

            let stale = r.stale(now, MAX_DROPS_PER_TICK as usize);
            for &member in &stale {
                r.remove_waiter(member);
                r.release(member);
            }
            r.abandoned += stale.len() as u64;

            let mut waiting = r.waiting.len() as u64;
            let mut active = r.active.len() as u64;
            let mut admitted = Vec::new();
            // No seat to sell: nobody is let in and the achieved rate is left
            // as it was, as when paused, so it does not decay to zero meanwhile.
            let pending = r.draw.and_then(|d| d.pending(now));
            if Room::admitting(&e, now) && e.method != QueueingMethod::Reject && pending.is_none() {
                r.refill(&e, now);
                let allow = r.allow.unwrap_or(0.0);
                let k = if e.method == QueueingMethod::Passthrough {
                    waiting.min(MAX_ADMITS_PER_TICK)
                } else {
                    let budget = allow.floor().max(0.0) as u64;
                    budget
                        .min(e.capacity.saturating_sub(active))
                        .min(waiting)
                        .min(MAX_ADMITS_PER_TICK)
                };
                for _ in 0..k {
                    let index = if e.method == QueueingMethod::Random {
                        rand::rng().random_range(0..r.waiting.len())
                    } else {
                        0
                    };
                    let Some(entry) = r.waiting.nth(index) else {
                        break;
                    };
                    r.remove_waiter(entry.member);
                    let until = now + e.session_ms;
                    r.active.insert(entry.member, until);
                    r.ending.insert((until, entry.member));
                    admitted.push(r.seq_of(entry.member));
                }
                let k = admitted.len() as u64;
                if e.method == QueueingMethod::Random && k > 0 {
                    r.lottery_ticks += 1;
                }
                if e.method != QueueingMethod::Passthrough {
                    r.allow = Some(allow - k as f64);
                }
                r.admitted += k;

                let dt = r.rate_at.map_or(0, |at| now.saturating_sub(at));
                if waiting > 0 && dt > 0 && dt <= 5000 {
                    let alpha = 1.0 - (-(dt as f64) / 30000.0).exp();
                    r.rate_est += alpha * ((k * 1000) as f64 / dt as f64 - r.rate_est);
                }
                r.rate_at = Some(now);
                waiting -= k;
                active += k;
            }

            r.summarize(&e, now, expired, active);
            if let Some((lo, hi)) = pending.filter(|(lo, hi)| hi - lo < DRAW_AT_ONCE) {
                r.apply_draw(lo, hi);
            }

            if waiting == 0 {
                r.marks.clear();
                r.polls.present = false;
            } else if let Some(front) = r.waiting.first()
                && front.score >= PREQUEUE_SPAN
                && let Some((&keep, _)) = r.marks.range(..=front.member).next_back()
            {
                r.marks = r.marks.split_off(&keep);
            }

            TickReport {
                admitted,
                expired,
                abandoned: stale.len() as u64,
                active,
                waiting,
            }
        })
    }

    async fn observe(&self, id: &RoomId, watch: &Watch) -> Result<Observation, StoreError> {
        self.with_room(id, |r, now| {
            let e = r.effective(now);
            let (mut gone, mut drawn) = (Vec::new(), Vec::new());
            for &seq in &watch.polled {
                let waiter = r
                    .member_of(seq)
                    .and_then(|m| r.waiters.get(&m).map(|&(score, _)| (m, score)));
                match waiter {
                    Some((m, score)) if !Room::refusing(&e) => {
                        r.touch(m, now);
                        if score < PREQUEUE_SPAN {
                            drawn.push(seq);
                        }
                    }
                    _ => gone.push(seq),
                }
            }
            let placing = watch.samples
                && e.method == QueueingMethod::Fifo
                && !Room::refusing(&e)
                && Room::opened(&e, now);
            let samples = if placing {
                r.take_samples()
            } else {
                Vec::new()
            };
            r.trim_departed(now);
            let mut departed: Vec<u64> = r
                .departed
                .iter()
                .filter(|&&(at, _)| at >= watch.since_ms)
                .map(|&(_, m)| r.seq_of(m))
                .collect();
            departed.sort_unstable();
            gone.sort_unstable();
            drawn.sort_unstable();
            let front = r.waiting.first().map(|f| r.sample(0, f));
            let line = r.view(&e, now, None, Standing::Gone).line;
            Observation {
                line,
                method: e.method,
                front,
                samples,
                samples_at_ms: now,
                gone,
                drawn,
                departed,
                next_window_edge_ms: r.next_window_edge(now),
                lottery_ticks: r.lottery_ticks,
            }
        })
    }

    async fn draw(&self, id: &RoomId) -> Result<Option<DrawView>, StoreError> {
        self.with_room(id, |r, now| {
            r.draw.map(|d| DrawView::of(&d.seed, d.at_ms, now))
        })
    }

    async fn ping(&self) -> Result<(), StoreError> {
        Ok(())
    }
}
