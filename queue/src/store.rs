//! The store trait every queue backend implements, and the answers it
//! gives: standings, line views, observations, figures and errors.

use async_trait::async_trait;

use crate::draw::DrawView;
use room::{AccountHash, QueueingMethod, RoomId, RoomSettings, RoomState};

/// Where a visitor stands, as the store sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Standing {
    /// In line. `position` is 1 for next, `None` before the opening (places
    /// are drawn at the opening).
    Waiting {
        /// 1-based place in line, or `None` in the pre-queue.
        position: Option<u64>,
    },
    /// Let in until `until_ms` (unix milliseconds, store clock).
    Admitted {
        /// End of the session.
        until_ms: u64,
    },
    /// The place is gone: left, abandoned or the session ended.
    Gone,
    /// The room is closed: no place is given or kept.
    Closed,
    /// No place is given: the line cap is reached, or every seat is booked
    /// ([`SeatsLeft::SoldOut`]). A waiter who reads this keeps its place
    /// while it polls, and reads `Waiting` again if seats come back.
    SoldOut,
}

/// What the sale behind a room allows right now. The promoter computes it
/// from the booking database and writes it with [`QueueStore::set_sale`]
/// when it changes, so every origin instance reads the same one; it lives
/// with the room (one per room, nothing per waiter) and survives `put_room`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SaleSignal {
    /// Whether anybody admitted now could buy.
    pub seats: SeatsLeft,
    /// Scales the room's `admit_per_second` wherever the admission budget is
    /// refilled (its one-second cap too), so admission slows while booking
    /// struggles. In (0, 1].
    pub rate_factor: f64,
}

impl SaleSignal {
    /// A room that sells nothing, or whose seats are free: admission as set.
    pub const AVAILABLE: SaleSignal = SaleSignal {
        seats: SeatsLeft::Available,
        rate_factor: 1.0,
    };

    /// Refuses a factor outside (0, 1] (NaN too) rather than clamp it: a bad
    /// factor is the caller's bug, and clamping would hide it.
    pub fn check(&self) -> Result<(), StoreError> {
        if self.rate_factor > 0.0 && self.rate_factor <= 1.0 {
            Ok(())
        } else {
            Err(StoreError::Protocol(format!(
                "rate_factor {} is outside (0, 1]",
                self.rate_factor
            )))
        }
    }
}

impl Default for SaleSignal {
    fn default() -> Self {
        SaleSignal::AVAILABLE
    }
}

/// Whether the room's seats leave anything to sell.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SeatsLeft {
    /// Some seat can be held: admission as usual.
    #[default]
    Available,
    /// Every seat is held or booked, so nobody admitted now could buy:
    /// nobody is admitted (ticks and joins alike), waiters keep their places
    /// with no ETA, and the achieved rate is left as it was (as when paused).
    NoneAvailable,
    /// Every seat is booked: joins take no place and waiters read
    /// [`Standing::SoldOut`] (their places kept); those inside stay inside.
    SoldOut,
}

/// The room's figures that go with every answer, so one round trip serves a
/// whole status response.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LineView {
    /// The room's state.
    pub state: RoomState,
    /// Opening instant (unix ms), if the room has one.
    pub opens_at_ms: Option<u64>,
    /// Everyone in line.
    pub waiting: u64,
    /// Admissions per second actually achieved recently (while people waited).
    pub admit_rate: f64,
    /// The room's abandon time, which bounds how long clients may wait between polls.
    pub abandon_ms: u64,
    /// What the sale behind the room allows (no ETA while no seat is available).
    pub sale: SaleSignal,
    /// The store's clock (unix ms) when it answered.
    pub now_ms: u64,
    /// What the last tick saw of the admission schedule; `None` before the
    /// room's first tick.
    pub schedule: Option<Schedule>,
}

/// Buckets of [`Schedule::ends`]: the session length cut in this many equal
/// parts.
pub const END_BUCKETS: usize = 8;

/// What the admission schedule looks like, summed up by each tick so that
/// every status can tell when a place's turn comes without reading the line
/// ([`pacing`](crate::pacing) turns it into an ETA). A fixed handful of
/// numbers per room, nothing per visitor; both stores compute it the same
/// way.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Schedule {
    /// When the tick ran (unix ms, store clock).
    pub at_ms: u64,
    /// The admit rate then applied: the settings' (or a window's) times the
    /// sale's factor, per second.
    pub rate: f64,
    /// The admission budget left after the tick (tokens).
    pub allow: f64,
    /// Most visitors inside at once.
    pub capacity: u64,
    /// The session length (ms).
    pub session_ms: u64,
    /// Slots free after the tick's admissions.
    pub free: u64,
    /// Sessions inside by how soon they end: `ends[j]` end within
    /// `((j)·s/8, (j+1)·s/8]` ms of `at_ms` (s = `session_ms`); the last
    /// bucket also takes any that end later (a session length cut since).
    pub ends: [u64; END_BUCKETS],
    /// Sessions ended before their end (left, booked), per second: an
    /// average over [`turnover_window_ms`] of time when someone was inside
    /// (time with nobody inside tells nothing and is skipped, so a room's
    /// measure is carried across a pause or a quiet spell).
    pub leaves: f64,
    /// Sessions inside, on the same average; `leaves / inside` is the rate
    /// at which one session ends early (per second). Times the window, the
    /// two are the early ends and the session-seconds the average weighs:
    /// how much has been seen, which says how sure the rate is.
    pub inside: f64,
    /// How long the room has had anyone inside (ms, summed over the ticks
    /// that saw someone): the oldest stay its measure can speak for.
    pub watched_ms: u64,
}

/// The window of the early-leave average ([`Schedule::leaves`]): 30 s, or
/// the session length when longer, so a room whose sessions are long still
/// weighs a session's worth of them.
pub fn turnover_window_ms(session_ms: u64) -> u64 {
    session_ms.max(30_000)
}

impl LineView {
    /// Whether the opening instant has not come yet.
    pub fn before_opening(&self) -> bool {
        self.opens_at_ms.is_some_and(|at| self.now_ms < at)
    }

    /// Whether the sale is on: open, past its opening, and not every seat
    /// booked. A waiter's answer can then change only as the line moves or
    /// the sale ends, which is when a held status poll pays off.
    pub fn selling(&self) -> bool {
        self.state == RoomState::Open
            && self.sale.seats != SeatsLeft::SoldOut
            && !self.before_opening()
    }
}

/// One visitor's answer: its sequence number (when it holds or just got a
/// place), where it stands, and the room's figures.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Snapshot {
    /// The visitor's sequence number; `None` when no place was given.
    pub seq: Option<u64>,
    /// Where the visitor stands.
    pub standing: Standing,
    /// The room's figures.
    pub line: LineView,
}

/// What a join gives.
#[derive(Clone, Copy, Debug, PartialEq)]
#[expect(
    clippy::large_enum_variant,
    reason = "a return value moved once per join; boxing the answer would allocate on every join"
)]
pub enum Joined {
    /// The store's answer: a new or kept place, an admission, or a refusal
    /// that applies to everyone alike (closed, sold out).
    Answer(Snapshot),
    /// The client address already holds as many places as the room allows
    /// ([`PlaceLimit`]); no place was given. Its own variant, not a
    /// [`Standing`], because only a join can meet it and a status never does.
    TooManyPlaces,
    /// The room asks for a challenge, the join brought no solution and
    /// holds no standing place: no place was given.
    ChallengeNeeded,
}

impl Joined {
    /// The answer, or `None` when the place cap refused the join.
    pub fn answer(self) -> Option<Snapshot> {
        match self {
            Joined::Answer(snap) => Some(snap),
            Joined::TooManyPlaces | Joined::ChallengeNeeded => None,
        }
    }
}

/// One point of the line: the waiter at `position` (1 = next) and its
/// sequence number; `None` for a waiter placed by a pre-queue draw (its
/// order says nothing about its seq).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    /// 1-based place in line when the samples were taken.
    pub position: u64,
    /// The waiter's sequence number; `None` for a pre-queue draw.
    pub seq: Option<u64>,
}

/// What an instance asks of [`QueueStore::observe`] once per tick.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Watch {
    /// Sequence numbers that polled this instance since its last
    /// observation: each still waiting is recorded as polling (as a status
    /// call would).
    pub polled: Vec<u64>,
    /// The store time (unix ms) of this instance's last observation:
    /// departures from it on are reported (one in that very ms may have come
    /// after it). 0: none before.
    pub since_ms: u64,
    /// Whether samples are wanted at all (an instance nobody polls far back
    /// in this room needs none, and spares the store taking them).
    pub samples: bool,
}

/// A room as one observation saw it: what a per-instance snapshot needs to
/// place a sequence number in the line without asking the store again.
///
/// In a `fifo` room, after the opening, waiters are ordered by sequence
/// number behind any pre-queue draws, and nobody joins ahead of anyone: so
/// a waiter's position only falls with time, and `samples` bound it from
/// above for as long as the waiter stays in line ([`Observation::bound`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Observation {
    /// The room's figures (`now_ms`: the store's clock at the observation).
    pub line: LineView,
    /// The queueing method in force.
    pub method: QueueingMethod,
    /// The waiter at the front; `None` when nobody waits.
    pub front: Option<Sample>,
    /// Points of the line in order of position, spaced by at most
    /// max(10, 1% of the position), the last waiter included; empty unless
    /// asked for and the room is `fifo`, past its opening and not closed.
    /// Taken at `samples_at_ms` (the observation's own time).
    pub samples: Vec<Sample>,
    /// When `samples` were taken (store clock, unix ms).
    pub samples_at_ms: u64,
    /// Seqs of `Watch::polled` that are not waiting (admitted, left,
    /// dropped, never given) or that the room refuses (closed), in
    /// ascending order; not recorded as polling.
    pub gone: Vec<u64>,
    /// Seqs of `Watch::polled` waiting on a pre-queue draw, in ascending
    /// order (recorded as polling; `samples` cannot place them).
    pub drawn: Vec<u64>,
    /// Seqs that left the line (not admitted: gave up their place) at or
    /// after `Watch::since_ms`, in ascending order; the store keeps them for
    /// [`DEPARTURES_KEPT_MS`].
    pub departed: Vec<u64>,
    /// The next instant (store clock, unix ms) after the observation at
    /// which a scheduled window of the room starts or ends, if any: the
    /// method, rate or capacity may change then.
    pub next_window_edge_ms: Option<u64>,
    /// How many ticks so far let waiters in by a lottery's draw (from
    /// anywhere in the line, not the front): a view that sees it move
    /// forgets whom it saw in line, even if no observation of it fell in
    /// the lottery.
    pub lottery_ticks: u64,
}

impl Observation {
    /// A position never smaller than `seq`'s true one while `seq` waits in
    /// this `fifo` line behind the front (the caller knows it does), and at
    /// most max(10, 1%) above it when the samples were taken; `None` when
    /// the samples cannot say (no samples, or a pre-queue draw around it).
    pub fn bound(&self, seq: u64) -> Option<u64> {
        // The last sample at or ahead of seq: draws come first, then seqs
        // in ascending order.
        let i = self
            .samples
            .partition_point(|s| s.seq.is_none_or(|x| x <= seq))
            .checked_sub(1)?;
        let at = *self.samples.get(i)?;
        if at.seq == Some(seq) {
            return Some(at.position);
        }
        // Every waiter between the sample and seq holds a seq between them.
        let by_seq = at.seq.map(|x| at.position + (seq - x));
        // And seq stands ahead of the next sample.
        let by_next = self.samples.get(i + 1).map(|n| n.position - 1);
        match (by_seq, by_next) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// The 0-based ranks at which [`Observation::samples`] are taken in a line
/// of `n`: every 10 places, then every 1% (about 800 at a million), and the
/// last one. Both stores take the same ones.
pub fn sample_ranks(n: u64) -> impl Iterator<Item = u64> {
    let mut next = Some(0);
    std::iter::from_fn(move || {
        let r = next?;
        if r >= n {
            return None;
        }
        let step = (r / 100).max(10);
        next = if r + 1 == n {
            None
        } else {
            Some((r + step).min(n - 1))
        };
        Some(r)
    })
}

/// How long the store remembers who left the line, for
/// [`Observation::departed`]: an instance that has not observed a room for
/// longer forgets what it knew of that room's waiters.
pub const DEPARTURES_KEPT_MS: u64 = 60_000;

/// What one promoter tick did to one room.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TickReport {
    /// Sequence numbers admitted this tick, in the order they were let in.
    pub admitted: Vec<u64>,
    /// Sessions that ended (expired) this tick.
    pub expired: u64,
    /// Waiters dropped this tick because they stopped polling.
    pub abandoned: u64,
    /// Visitors inside after the tick.
    pub active: u64,
    /// Visitors in line after the tick.
    pub waiting: u64,
}

/// A room's live figures.
#[derive(Clone, Debug, PartialEq)]
pub struct RoomFigures {
    /// The room's settings.
    pub settings: RoomSettings,
    /// The room's state.
    pub state: RoomState,
    /// Everyone in line.
    pub waiting: u64,
    /// Visitors inside now.
    pub active: u64,
    /// Admitted since the room was created.
    pub admitted_total: u64,
    /// Waiters dropped for not polling, since the room was created.
    pub abandoned_total: u64,
    /// Places given since the room was created (the last member given).
    pub places_given: u64,
    /// Admissions per second actually achieved recently.
    pub admit_rate: f64,
    /// What the sale behind the room allows, as last set.
    pub sale: SaleSignal,
    /// How long the visitor at the front has waited, roughly (to the second
    /// it joined); `None` when nobody waits.
    pub oldest_wait_seconds: Option<u64>,
    /// Client addresses holding places under the per-address cap
    /// ([`PlaceLimit`]); one that holds nothing is forgotten.
    pub capped_clients: u64,
    /// Places (in line or inside) those clients hold.
    pub capped_places: u64,
    /// Accounts holding a place (in line or inside) now: each names one
    /// place, and is forgotten when the place ends.
    pub accounts: u64,
}

/// A cap on the places one client address may hold in a room at once: in
/// line or inside. A place stops counting when it ends (left, abandoned,
/// session over), and the store forgets a holder that holds nothing. The
/// store keeps the holder beside each place given under a cap, so the
/// holder should be short (it costs its length per place).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlaceLimit {
    /// The client, as the HTTP layer identifies it (a short key of its
    /// address or network); opaque to the store.
    pub holder: String,
    /// Most places it may hold at once.
    pub max: u32,
}

/// One join ([`QueueStore::join_many`]): the arguments of
/// [`QueueStore::join`], and the visitor's account, if it has one.
///
/// With an account, the room holds one place for it: a join whose ticket
/// names no standing place gets the place the account holds (in line or
/// inside) when it still stands, answered as a rejoin with that place's
/// ticket would be (the answer's `seq` is that place's); otherwise it takes
/// a new place as any join would, and the account names that place until
/// it ends (left, dropped for not polling, session over). A valid ticket's
/// standing place wins over the account's and leaves the account's as it
/// was. Getting the account's place back counts nothing against the
/// per-address cap: only a new place does.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JoinRequest {
    /// The sequence number of the visitor's valid ticket, if any.
    pub existing: Option<u64>,
    /// The per-address cap, if on.
    pub limit: Option<PlaceLimit>,
    /// The visitor's account (from a verified identity), if any.
    pub account: Option<AccountHash>,
    /// What the join shows of its room's challenge.
    pub proof: Proof,
}

/// What a join shows of its room's challenge (proof of work, Turnstile).
/// The origin checks a solution; the store keeps one place per solution:
/// a solution shown again gets the place it took while that place stands,
/// and [`Standing::Gone`] once it has ended, never a second place. It is
/// remembered until its seed expires (after which the origin refuses it
/// anyway).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Proof {
    /// The room asks for none (or a Turnstile room failed open).
    #[default]
    NotAsked,
    /// The room asks for one and the join brought none: only a standing
    /// place (the ticket's, or the account's) is given back; anything else
    /// is [`Joined::ChallengeNeeded`] and takes no place.
    Missing,
    /// A solution that passed, named by `key`, good until `expires_at_ms`.
    Solved {
        /// Names the solution (its seed): one solution, one place.
        key: [u8; 8],
        /// When the store may forget it (unix ms).
        expires_at_ms: u64,
    },
}

/// Why a store call failed; each variant says whether trying again can help.
/// `Clone`, so one failed batch of joins fails each caller alike.
#[derive(Clone, Debug, thiserror::Error)]
pub enum StoreError {
    /// The room does not exist. The same call fails the same way until the
    /// room is created.
    #[error("unknown room")]
    UnknownRoom,
    /// The store could not be reached: down, too slow, failing over, or (from
    /// `RedisStore::connect`) given no usable address. An outage passes: the
    /// same call may succeed later.
    #[error("store unavailable: {0}")]
    Unavailable(String),
    /// This code and the store disagree, or the process is broken: a request
    /// the store refuses as malformed, a reply this code does not understand
    /// (a bug, or a foreign key in the keyspace), a key prefix with braces,
    /// or a room lock poisoned by a panic. Trying again does not help.
    #[error("unexpected store reply: {0}")]
    Protocol(String),
}

/// The queue's storage. Every method is one atomic step in the store, so any
/// number of origin instances can share one store.
#[async_trait]
pub trait QueueStore: Send + Sync + 'static {
    /// Whether each call is a round trip to another process (Redis), which
    /// joins share by going in batches ([`joins`](crate::joins)). The
    /// embedded store answers a join within its lock: a batch would only
    /// add the wait and the hand-over.
    fn round_trips(&self) -> bool {
        true
    }

    /// Creates a room or replaces its settings, keeping its line, sessions and
    /// counters. A new room starts `open`.
    async fn put_room(&self, room: &RoomId, settings: &RoomSettings) -> Result<(), StoreError>;

    /// Sets a room's state.
    async fn set_state(&self, room: &RoomId, state: RoomState) -> Result<(), StoreError>;

    /// Records what the sale behind a room allows (see [`SaleSignal`]); it
    /// applies from the next call on. A `rate_factor` outside (0, 1] is
    /// refused with `StoreError::Protocol` and changes nothing.
    async fn set_sale(&self, room: &RoomId, sale: SaleSignal) -> Result<(), StoreError>;

    /// Every room's id.
    async fn rooms(&self) -> Result<Vec<RoomId>, StoreError>;

    /// A room's settings and live figures.
    async fn figures(&self, room: &RoomId) -> Result<RoomFigures, StoreError>;

    /// Gives a place in line, or admits at once when the room is open, nobody
    /// waits and capacity and budget allow. With `existing` (the sequence
    /// number of a valid ticket) whose place still stands, returns that place
    /// instead. A join before the opening takes a pre-queue place, ordered
    /// at the opening by the room's draw ([`draw`](crate::draw)). With `limit`, a
    /// holder already holding its cap of places gets no new place
    /// ([`Joined::TooManyPlaces`]); a new place is counted for it until the
    /// place ends. A join without an account: one with an account is a
    /// [`JoinRequest`] given to [`QueueStore::join_many`].
    async fn join(
        &self,
        room: &RoomId,
        existing: Option<u64>,
        limit: Option<&PlaceLimit>,
    ) -> Result<Joined, StoreError> {
        let one = JoinRequest {
            existing,
            limit: limit.cloned(),
            account: None,
            proof: Proof::NotAsked,
        };
        let mut answers = self.join_many(room, std::slice::from_ref(&one)).await?;
        answers
            .pop()
            .ok_or_else(|| StoreError::Protocol("a batch of one join gave no answer".into()))
    }

    // -- Joins in groups: see [`joins`].

    /// Runs [`QueueStore::join`] for each of `joins` in turn, in one atomic
    /// step: each gets its own member from the one counter, in the order
    /// given, and exactly the answer it would have got alone at that point
    /// (so two joins of one account in a batch get one place). A join with
    /// an account goes only this way (see [`JoinRequest`]). One answer per
    /// join, in order; an error fails them all alike.
    async fn join_many(
        &self,
        room: &RoomId,
        joins: &[JoinRequest],
    ) -> Result<Vec<Joined>, StoreError>;

    /// Where a visitor stands; also records that it is still polling.
    async fn status(&self, room: &RoomId, seq: u64) -> Result<Snapshot, StoreError>;

    /// Gives up a place in line or an active session; the slot (and the
    /// holder's place under a cap) is free at once. True when something was
    /// given up.
    async fn leave(&self, room: &RoomId, seq: u64) -> Result<bool, StoreError>;

    /// Whether the visitor's session is still running (not ended, left or
    /// expired); the origin checks this besides the entry token's signature.
    async fn session_active(&self, room: &RoomId, seq: u64) -> Result<bool, StoreError>;

    /// One promoter step for one room: end expired sessions, drop waiters who
    /// stopped polling, admit as many as rate, capacity and the line allow,
    /// and record the achieved rate. Safe to run from any number of
    /// instances at once.
    async fn tick(&self, room: &RoomId) -> Result<TickReport, StoreError>;

    /// Once per tick per room per instance: records the waiters in
    /// `watch.polled` still waiting as polling (as many status calls would,
    /// in one step) and tells the room as it stands ([`Observation`]).
    async fn observe(&self, room: &RoomId, watch: &Watch) -> Result<Observation, StoreError>;

    /// The room's pre-queue draw as anyone may see it ([`DrawView`]):
    /// `None` when the room has none (it never had an opening).
    async fn draw(&self, room: &RoomId) -> Result<Option<DrawView>, StoreError>;

    /// Whether the store answers.
    async fn ping(&self) -> Result<(), StoreError>;
}

/// How often the promoter reads the list of rooms again, in ticks; a
/// snapshot outlives a room's absence from that list by two more.
pub const ROOMS_REFRESH_TICKS: u32 = 10;

/// Pre-queue places score below this; places taken after the opening are
/// ordered after every one of them (by `PREQUEUE_SPAN + member`; see
/// [`draw`](crate::draw)).
pub const PREQUEUE_SPAN: u64 = 1 << 40;

/// Most waiters one tick of one room drops for not polling; with
/// [`MAX_ADMITS_PER_TICK`] it bounds how long one tick holds the store.
pub const MAX_DROPS_PER_TICK: u64 = 10_000;

/// Most visitors one tick of one room admits (at 10 ticks a second that is
/// still 200,000 a second).
pub const MAX_ADMITS_PER_TICK: u64 = 20_000;
