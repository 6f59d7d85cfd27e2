//! Status snapshots: each origin instance's per-room view of the line,
//! refreshed once a tick by [`QueueStore::observe`], that answers a status
//! poll from far back in a `fifo` line with no store round trip, and the
//! "still polling" marks those answers owe the store, written once a tick in
//! the same call.
//!
//! What makes an answer from memory safe to give (every check in
//! [`Snapshots::answer`]; anything else asks the store):
//! - the view is at most two ticks old;
//! - the room is `fifo`, open or paused, past its opening, and not sold
//!   out (no seat available is fine: nobody is admitted then, and when
//!   seats come back admission starts within the budget's reach, as below);
//! - no scheduled window starts or ends within the view's life and the
//!   second after it (a window may change the method or the rate; the
//!   stores report the next edge, and near it the store answers);
//! - this instance saw the waiter in line at an observation of the `fifo`
//!   room, by a mark it sent (so it is not a pre-queue draw), recently
//!   enough that the abandonment rule cannot have dropped it since (an
//!   observation of any other method forgets every waiter: a lottery admits
//!   from anywhere in the line; so does one whose store counts a lottery
//!   drawn since the last, which no observation may have fallen in);
//! - no observation since reported it gone or departed (left: the store
//!   keeps departures for [`DEPARTURES_KEPT_MS`]; a view that missed that
//!   long forgets every waiter), and this instance did not see it leave;
//! - it is behind the front of the line, so not admitted (a fifo line
//!   admits from the front only);
//! - and its position bound ([`Observation::bound`]) lies beyond what the
//!   admission budget could let in before the next view: twice the rate over
//!   the view's life plus a second, plus the one second the budget banks,
//!   plus [`FRONT_MARGIN`]. A rate raised more than twofold shows from the
//!   next tick.
//!
//! An operator's change (settings or state, through the admin API) takes
//! the view of the instance that made it out of use until its next
//! observation; other instances see it at their next one, within two ticks.
//!
//! Once every seat is booked, such a waiter (checked the same way, the
//! front zone included: seats may come back before the next view) reads
//! `sold_out` from the view.
//!
//! Such a waiter's position only falls while it waits (joins go behind it),
//! so the bound stays an upper bound for the view's life, and is within
//! max(10, 1%) of the true one when the samples were taken. Random rooms
//! never answer from memory: any waiter may be admitted by the next tick.
//! An instance started with `--status-snapshot off` keeps no view and sends
//! no marks: every status asks the store.
//!
//! Each view also publishes its room's [`RoomSignal`] on a `watch`
//! channel, changed by the observation that first sees a new one: held
//! status polls (`Prefer: wait`, in `http::hold`) wait on it.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use room::{QueueingMethod, RoomId, RoomMap, RoomState};

use crate::counter_hash::{CounterMap, CounterSet};
use crate::store::{
    DEPARTURES_KEPT_MS, LineView, Observation, QueueStore, ROOMS_REFRESH_TICKS, SaleSignal,
    SeatsLeft, Snapshot, Standing, StoreError, Watch,
};

/// Places beyond the budget's reach that still ask the store.
pub const FRONT_MARGIN: u64 = 100;
/// Most marks one room gathers between two ticks; polls beyond ask the store
/// (which records them itself).
const MAX_MARKS: usize = 200_000;
/// Most waiters one room's view remembers as seen in line.
const MAX_CONFIRMED: usize = 4_000_000;

/// Every room's view, in one instance.
pub struct Snapshots {
    enabled: bool,
    tick: Duration,
    rooms: RwLock<RoomMap<Arc<Mutex<RoomView>>>>,
    /// When the newest list of rooms was asked for ([`Snapshots::retain`]).
    listed_at: Mutex<Option<Instant>>,
    /// When a refused ticket last had the list read again.
    relisted_at: Mutex<Option<Instant>>,
}

/// What a held status poll waits on: the part of a room's view whose change
/// can change a waiter's answer at once. Figures that move every tick (the
/// line's length, the achieved rate) are not in it, so it changes only when
/// the room's state, its sale or its settings do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RoomSignal {
    /// Open, paused or closed.
    pub state: RoomState,
    /// What the seats leave to sell.
    pub seats: SeatsLeft,
    /// How the room picks whom to admit.
    pub method: QueueingMethod,
    /// The opening (unix ms), if any.
    pub opens_at_ms: Option<u64>,
    /// The abandon time (ms), which bounds how long a poll may be held.
    pub abandon_ms: u64,
    /// Every seat has been held or booked at some moment since the room
    /// was last seen open: seats available now are returns (ended holds),
    /// soon taken again. Changes only with `seats` or `state`.
    pub ran_out: bool,
}

impl RoomSignal {
    /// The signal of `obs`, following `before` (this view's last one).
    fn of(obs: &Observation, before: Option<RoomSignal>) -> RoomSignal {
        let open = obs.line.state == RoomState::Open;
        let seats = obs.line.sale.seats;
        RoomSignal {
            state: obs.line.state,
            seats,
            method: obs.method,
            opens_at_ms: obs.line.opens_at_ms,
            abandon_ms: obs.line.abandon_ms,
            ran_out: open && (seats != SeatsLeft::Available || before.is_some_and(|b| b.ran_out)),
        }
    }
}

/// What a held poll subscribes to: the room's signal, and the seq at the
/// front of its line (`None`: nobody waits, or the front is unknown), which
/// moves as the line is admitted. Both are subscribed before the poll's
/// answer is computed, so no change after it is missed.
pub struct RoomWatch {
    /// The room's signal.
    pub signal: watch::Receiver<Option<RoomSignal>>,
    /// The signal when subscribed, which `signal` counts as seen: a change
    /// between subscribing and holding is judged against this one (the
    /// receiver's current value would hide it).
    pub start: Option<RoomSignal>,
    /// The seq at the front of the line, as the latest observation saw it.
    pub front: watch::Receiver<Option<u64>>,
}

/// One room's view.
struct RoomView {
    /// When this view was made (a listing asked for before keeps it).
    created: Instant,
    /// The latest observation, and when this instance asked for it.
    latest: Option<(Observation, Instant)>,
    /// Seqs that polled since the last observation, owed to the store.
    marks: CounterSet<u64>,
    /// Marks a failed observation carried, put back for the next one once
    /// (see [`RoomView::put_back`]); a new poll takes its seq out.
    retried: CounterSet<u64>,
    /// Seq -> store time (ms) of the observation that last found it in
    /// line (not on a pre-queue draw).
    seen_in_line: CounterMap<u64, u64>,
    /// Store time of the latest observation (0: none yet).
    since_ms: u64,
    /// Store time the seen-in-line map was last pruned.
    pruned_ms: u64,
    /// The room's signal as the latest observation saw it (`None` before
    /// the first).
    signal: watch::Sender<Option<RoomSignal>>,
    /// The seq at the front of the line as the latest observation saw it.
    front: watch::Sender<Option<u64>>,
    /// Bumped by each change this instance wrote ([`Snapshots::settings_written`]):
    /// an observation asked before it is not installed after it.
    written: u64,
    /// The store's count of lottery ticks at the latest observation.
    lottery_ticks: u64,
    /// When the latest observation installed was asked for (kept when an
    /// operator's change takes the view out of use).
    last_asked: Option<Instant>,
    /// The gaps between the asking of the latest two observations installed
    /// and of the one before each (`Duration::MAX`: none before).
    gaps: [Duration; 2],
}

impl Default for RoomView {
    fn default() -> Self {
        RoomView {
            created: Instant::now(),
            latest: None,
            marks: CounterSet::default(),
            retried: CounterSet::default(),
            seen_in_line: CounterMap::default(),
            since_ms: 0,
            pruned_ms: 0,
            signal: watch::Sender::new(None),
            front: watch::Sender::new(None),
            written: 0,
            lottery_ticks: 0,
            last_asked: None,
            gaps: [Duration::MAX; 2],
        }
    }
}

impl Default for Snapshots {
    fn default() -> Self {
        Snapshots::off()
    }
}

impl Snapshots {
    /// Views refreshed every `tick` (the promoter's interval).
    pub fn new(tick: Duration) -> Snapshots {
        Snapshots {
            enabled: true,
            tick,
            rooms: RwLock::new(RoomMap::default()),
            listed_at: Mutex::new(None),
            relisted_at: Mutex::new(None),
        }
    }

    /// No views: every status asks the store (to measure the views against).
    pub fn off() -> Snapshots {
        Snapshots {
            enabled: false,
            tick: Duration::from_millis(100),
            rooms: RwLock::new(RoomMap::default()),
            listed_at: Mutex::new(None),
            relisted_at: Mutex::new(None),
        }
    }

    /// Whether views are kept at all.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    fn view(&self, room: &RoomId) -> Option<Arc<Mutex<RoomView>>> {
        let rooms = self.rooms.read().unwrap_or_else(PoisonError::into_inner);
        rooms.get(room).cloned()
    }

    /// `f` on `room`'s view, if there is one, without taking a reference to
    /// it (an `Arc` clone and drop are two writes to a line every poll of
    /// the room shares). No code takes the rooms' lock while it holds a
    /// view's, so holding both here cannot deadlock.
    fn with_view<R>(&self, room: &RoomId, f: impl FnOnce(&mut RoomView) -> R) -> Option<R> {
        let rooms = self.rooms.read().unwrap_or_else(PoisonError::into_inner);
        let view = rooms.get(room)?;
        let mut v = view.lock().unwrap_or_else(PoisonError::into_inner);
        Some(f(&mut v))
    }

    fn view_or_new(&self, room: &RoomId) -> Arc<Mutex<RoomView>> {
        if let Some(v) = self.view(room) {
            return v;
        }
        let mut rooms = self.rooms.write().unwrap_or_else(PoisonError::into_inner);
        rooms.entry(room.clone()).or_default().clone()
    }

    /// The status of `seq` from the view, when it can be given safely (see
    /// the module doc), with the poll recorded as a mark; `None`: ask the
    /// store.
    pub fn answer(&self, room: &RoomId, seq: u64) -> Option<Snapshot> {
        if !self.enabled {
            return None;
        }
        self.with_view(room, |v| self.answer_from(v, seq))?
    }

    fn answer_from(&self, v: &mut RoomView, seq: u64) -> Option<Snapshot> {
        let (obs, taken) = v.latest.as_ref()?;
        let age = taken.elapsed();
        if age > self.max_age() {
            return None;
        }
        let line = &obs.line;
        let open = matches!(line.state, RoomState::Open | RoomState::Paused);
        if obs.method != QueueingMethod::Fifo || !open || line.before_opening() {
            return None;
        }
        // A scheduled window that starts or ends before this answer's
        // horizon (the view's life and the second the front zone allows
        // for) may change the method or the rate: the store answers across
        // it.
        if obs
            .next_window_edge_ms
            .is_some_and(|edge| edge <= line.now_ms + self.margin_ms())
        {
            return None;
        }
        let seen = *v.seen_in_line.get(&seq)?;
        // The stores' coarse marks may drop a waiter up to one generation
        // (abandon time / 6) before the abandon time is up.
        let earliest_drop = line.abandon_ms - line.abandon_ms.div_ceil(6);
        if seen + earliest_drop < line.now_ms + self.margin_ms() {
            return None;
        }
        if obs.front?.seq.is_some_and(|front| front > seq) {
            return None;
        }
        // The front zone asks the store even in a sold-out room: seats
        // coming back (another instance's sale loop, or a write racing this
        // view's observation) let the front in before the view shows it.
        let position = obs.bound(seq)?;
        if position <= self.front_zone(line, Duration::ZERO) {
            return None;
        }
        let standing = if line.sale.seats == SeatsLeft::SoldOut {
            Standing::SoldOut
        } else {
            Standing::Waiting {
                position: Some(position),
            }
        };
        let line = LineView {
            now_ms: line.now_ms + age.as_millis() as u64,
            ..*line
        };
        if v.marks.len() >= MAX_MARKS && !v.marks.contains(&seq) {
            return None;
        }
        v.mark(seq);
        Some(Snapshot {
            seq: Some(seq),
            standing,
            line,
        })
    }

    /// Whether this instance observed `room` within a view's life: it
    /// exists (a refused ticket for it is 401 without asking the store).
    pub fn observed(&self, room: &RoomId) -> bool {
        self.enabled
            && self
                .with_view(room, |v| {
                    v.latest
                        .as_ref()
                        .is_some_and(|(_, at)| at.elapsed() <= self.max_age())
                })
                .unwrap_or(false)
    }

    /// The room's signal and the front of its line, to wait for their next
    /// change; `None` when views are off or this instance has not observed
    /// the room yet (nothing would ever change them).
    pub fn watch(&self, room: &RoomId) -> Option<RoomWatch> {
        if !self.enabled {
            return None;
        }
        self.with_view(room, |v| {
            v.latest.as_ref()?;
            Some(RoomWatch {
                start: *v.signal.borrow(),
                signal: v.signal.subscribe(),
                front: v.front.subscribe(),
            })
        })?
    }

    /// This instance just wrote `sale` for `room` to the store: the view
    /// takes it at once (the rest of the observation stands), so held polls
    /// wake now rather than at the next observation.
    pub fn sale_written(&self, room: &RoomId, sale: SaleSignal) {
        if !self.enabled {
            return;
        }
        self.with_view(room, |v| {
            let before = *v.signal.borrow();
            let Some((obs, _)) = v.latest.as_mut() else {
                return;
            };
            obs.line.sale = sale;
            let signal = Some(RoomSignal::of(obs, before));
            v.signal.send_if_modified(|s| {
                let changed = *s != signal;
                *s = signal;
                changed
            });
        });
    }

    /// This instance just changed `room`'s settings or state (the admin
    /// API): its view answers nobody until the next observation, which
    /// sees the change (a rate raised past what the front zone allows for,
    /// a lottery, an opening moved later, a closed room). Other instances
    /// see it at their next observation, within two ticks.
    /// A room made here has a view from now on: it exists (see
    /// [`Snapshots::exists`]) before the promoter's next listing.
    pub fn settings_written(&self, room: &RoomId) {
        if !self.enabled {
            return;
        }
        let view = self.view_or_new(room);
        let mut v = view.lock().unwrap_or_else(PoisonError::into_inner);
        v.latest = None;
        v.written += 1;
    }

    /// How long this instance's view of `room` may have missed the line's
    /// moves: the longer of the gaps before its latest two observations (a
    /// hold woken by the latest may ask after the next is in);
    /// `Duration::MAX` when unknown. A hold near the front wakes whenever
    /// an observation shows the line moved, so one still held when an
    /// observation shows the room closed missed at most this much.
    pub fn blind_for(&self, room: &RoomId) -> Duration {
        self.with_view(room, |v| v.gaps[0].max(v.gaps[1]))
            .unwrap_or(Duration::MAX)
    }

    /// The interval views are refreshed at.
    pub fn tick(&self) -> Duration {
        self.tick
    }

    /// How long a view answers: two ticks, so one late or failed refresh
    /// does not send every poll to the store.
    fn max_age(&self) -> Duration {
        2 * self.tick
    }

    /// The places from the front of `line` that the admission budget may
    /// reach within `since` and a view's life: a waiter there asks the
    /// store (anything said of it from memory may be stale).
    pub fn front_zone(&self, line: &LineView, since: Duration) -> u64 {
        front_zone(line, since + self.max_age())
    }

    /// Time the abandonment rule must leave a waiter after its last mark
    /// for the view to answer for it: the view's life plus a second.
    fn margin_ms(&self) -> u64 {
        self.max_age().as_millis() as u64 + 1000
    }

    /// Learns from the store's answer to `seq`'s status: a waiter is marked
    /// (so the next observation sees it in line); anyone else is no longer
    /// answered from the view.
    pub fn saw(&self, room: &RoomId, seq: u64, standing: Standing) {
        if !self.enabled {
            return;
        }
        let view = self.view_or_new(room);
        let mut v = view.lock().unwrap_or_else(PoisonError::into_inner);
        match standing {
            Standing::Waiting { .. } | Standing::SoldOut => {
                if v.marks.len() < MAX_MARKS {
                    v.mark(seq);
                }
            }
            Standing::Admitted { .. } | Standing::Gone | Standing::Closed => {
                v.seen_in_line.remove(&seq);
                v.marks.remove(&seq);
            }
        }
    }

    /// `seq` left through this instance: never answered from the view again.
    pub fn forget(&self, room: &RoomId, seq: u64) {
        self.with_view(room, |v| {
            v.seen_in_line.remove(&seq);
            v.marks.remove(&seq);
        });
    }

    /// The store's list of rooms, asked for at `asked` (the promoter's, or
    /// [`Snapshots::claim_relist`]'s): drops the views of rooms not in it
    /// (deleted, or never there) unless made since it was asked for, and
    /// keeps one for each room in it, so that [`Snapshots::exists`] can
    /// answer.
    pub fn retain(&self, rooms: &[RoomId], asked: Instant) {
        if !self.enabled {
            return;
        }
        {
            let mut all = self.rooms.write().unwrap_or_else(PoisonError::into_inner);
            all.retain(|id, view| {
                rooms.contains(id)
                    || view.lock().unwrap_or_else(PoisonError::into_inner).created > asked
            });
            for room in rooms {
                all.entry(room.clone()).or_default();
            }
        }
        let mut listed = self
            .listed_at
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if listed.is_none_or(|at| at < asked) {
            *listed = Some(asked);
        }
    }

    /// Whether this caller may read the store's list of rooms again now
    /// (a refused ticket for a room this instance does not know, which may
    /// have been made since on another instance): once a tick at most, for
    /// all such requests together.
    pub fn claim_relist(&self) -> bool {
        if !self.enabled {
            return false;
        }
        let mut last = self
            .relisted_at
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if last.is_some_and(|at| at.elapsed() < self.tick) {
            return false;
        }
        *last = Some(Instant::now());
        true
    }

    /// Whether `room` exists, as far as the rooms listed within a listing's
    /// life (and the rooms seen or made here since) say; `None` when they
    /// cannot say (views off, no recent listing). Only a request whose
    /// ticket was refused asks, to tell 401 from 404 without a store call
    /// each (a flood of made-up room ids otherwise reaches the store one
    /// script a request); on `Some(false)` it may read the list again
    /// ([`Snapshots::claim_relist`]), so a room made on another instance is
    /// known within a tick.
    pub fn exists(&self, room: &RoomId) -> Option<bool> {
        if !self.enabled {
            return None;
        }
        let life = self.tick * (ROOMS_REFRESH_TICKS + 2);
        let listed = *self
            .listed_at
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if listed.is_none_or(|at| at.elapsed() > life) {
            return None;
        }
        Some(self.view(room).is_some())
    }

    /// One observation of `room`: sends the marks gathered since the last
    /// one and installs the new view. On failure the marks are kept for
    /// the next try and the old view ages out.
    pub async fn refresh(&self, store: &dyn QueueStore, room: &RoomId) -> Result<(), StoreError> {
        if !self.enabled {
            return Ok(());
        }
        let view = self.view_or_new(room);
        let (watch, written) = {
            let mut v = view.lock().unwrap_or_else(PoisonError::into_inner);
            let watch = Watch {
                samples: !v.marks.is_empty() || !v.seen_in_line.is_empty(),
                polled: v.marks.drain().collect(),
                since_ms: v.since_ms,
            };
            (watch, v.written)
        };
        // The view's age counts from here, not from its arrival: a slow
        // reply or a stalled task must not make it look younger than the
        // store's figures are.
        let asked = Instant::now();
        let result = store.observe(room, &watch).await;
        let mut v = view.lock().unwrap_or_else(PoisonError::into_inner);
        match result {
            // Asked before a change this instance wrote: it may not show
            // it (the marks it carried are in the store all the same).
            Ok(_) if v.written != written => {
                v.retried.clear();
                Ok(())
            }
            Ok(obs) => {
                v.install(&watch, obs, asked);
                Ok(())
            }
            Err(e) => {
                v.put_back(watch.polled);
                Err(e)
            }
        }
    }
}

impl RoomView {
    /// A poll of `seq`, owed to the store.
    fn mark(&mut self, seq: u64) {
        self.marks.insert(seq);
        if !self.retried.is_empty() {
            self.retried.remove(&seq);
        }
    }

    /// The marks `polled` of a failed observation go to the next one, once:
    /// a reply that timed out may have come after the store wrote them, and
    /// marks sent again with every failure would keep a client that stopped
    /// polling in line for as long as the failures last. A mark lost after
    /// two failures costs nothing: one that polls as told polls again
    /// within a third of the abandon time, and once the view is two ticks
    /// old its polls go to the store.
    fn put_back(&mut self, polled: Vec<u64>) {
        let mut again = CounterSet::default();
        for seq in polled {
            // Polled again meanwhile: owed as a new mark, not a retry.
            if self.marks.contains(&seq) {
                continue;
            }
            if !self.retried.contains(&seq) {
                self.marks.insert(seq);
                again.insert(seq);
            }
        }
        self.retried = again;
    }

    /// Installs `obs`, asked of the store at `asked`.
    fn install(&mut self, watch: &Watch, obs: Observation, asked: Instant) {
        self.retried.clear();
        let gap = self.last_asked.map_or(Duration::MAX, |before| {
            asked.saturating_duration_since(before)
        });
        self.gaps = [gap, self.gaps[0]];
        self.last_asked = Some(asked);
        let now = obs.line.now_ms;
        let fifo = obs.method == QueueingMethod::Fifo;
        // Departures are kept a minute: a view that missed half of that
        // may have missed some, and forgets whom it saw.
        // Outside a fifo line anyone may be admitted, not only the front:
        // whom a lottery saw is no longer known to wait once the room turns
        // fifo again (a window's end, an operator's change).
        // A lottery drawn between two observations, none of them random,
        // is told by the store's count of lottery ticks.
        if self.since_ms == 0
            || now.saturating_sub(self.since_ms) > DEPARTURES_KEPT_MS / 2
            || !fifo
            || obs.lottery_ticks != self.lottery_ticks
        {
            self.seen_in_line.clear();
        }
        self.lottery_ticks = obs.lottery_ticks;
        for seq in obs.departed.iter().chain(&obs.gone).chain(&obs.drawn) {
            self.seen_in_line.remove(seq);
        }
        let not_seen: HashSet<u64> = obs.gone.iter().chain(&obs.drawn).copied().collect();
        for &seq in &watch.polled {
            if fifo
                && !not_seen.contains(&seq)
                && (self.seen_in_line.len() < MAX_CONFIRMED || self.seen_in_line.contains_key(&seq))
            {
                self.seen_in_line.insert(seq, now);
            }
        }
        // Waiters not seen for an abandon time cannot be answered for.
        if now.saturating_sub(self.pruned_ms) >= 1000 {
            let abandon = obs.line.abandon_ms;
            self.seen_in_line.retain(|_, &mut at| at + abandon > now);
            self.pruned_ms = now;
        }
        self.since_ms = now;
        let signal = Some(RoomSignal::of(&obs, *self.signal.borrow()));
        let front = obs.front.and_then(|f| f.seq);
        self.latest = Some((obs, asked));
        // Wakes the held polls near the front whenever the line moves.
        self.front.send_if_modified(|f| {
            let changed = *f != front;
            *f = front;
            changed
        });
        // Only a change wakes the held polls.
        self.signal.send_if_modified(|s| {
            let changed = *s != signal;
            *s = signal;
            changed
        });
    }
}

/// Places from the front that may be admitted before a view `max_age` old
/// is replaced: what the budget could let in over that and the next second
/// (it banks one second of the rate), doubled, plus [`FRONT_MARGIN`].
pub fn front_zone(line: &LineView, max_age: Duration) -> u64 {
    let rate = line
        .schedule
        .map_or(line.admit_rate, |s| s.rate.max(line.admit_rate))
        .max(1.0);
    let seconds = max_age.as_secs_f64() + 1.0;
    (2.0 * rate * (1.0 + seconds)).ceil() as u64 + FRONT_MARGIN
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Sample, sample_ranks};

    /// A line of waiters `seqs` (in order) as an observation samples it.
    fn observed(seqs: &[u64]) -> Observation {
        let samples = sample_ranks(seqs.len() as u64)
            .map(|r| Sample {
                position: r + 1,
                seq: Some(seqs[r as usize]),
            })
            .collect();
        Observation {
            line: LineView {
                state: RoomState::Open,
                opens_at_ms: None,
                waiting: seqs.len() as u64,
                admit_rate: 1.0,
                abandon_ms: 60_000,
                sale: crate::store::SaleSignal::AVAILABLE,
                now_ms: 0,
                schedule: None,
            },
            method: QueueingMethod::Fifo,
            front: seqs.first().map(|&seq| Sample {
                position: 1,
                seq: Some(seq),
            }),
            samples,
            samples_at_ms: 0,
            gone: Vec::new(),
            drawn: Vec::new(),
            departed: Vec::new(),
            next_window_edge_ms: None,
            lottery_ticks: 0,
        }
    }

    #[test]
    fn the_signal_changes_with_an_observation_or_a_sale_written_here() {
        let views = Snapshots::new(Duration::from_millis(100));
        let room = RoomId::parse("r").unwrap();
        assert!(views.watch(&room).is_none(), "nothing observed yet");
        let view = views.view_or_new(&room);
        let install = |obs: Observation| {
            let mut v = view.lock().unwrap();
            v.install(&Watch::default(), obs, Instant::now());
        };
        install(observed(&[1, 2, 3]));
        let RoomWatch {
            signal: mut rx,
            mut front,
            ..
        } = views.watch(&room).expect("observed");
        assert_eq!(rx.borrow().unwrap().seats, SeatsLeft::Available);
        assert_eq!(*front.borrow(), Some(1));
        // The line growing behind its front changes neither.
        install(observed(&[1, 2, 3, 4]));
        assert!(!rx.has_changed().unwrap());
        assert!(!front.has_changed().unwrap());
        // The line moving is no change of the signal; its front moves.
        install(observed(&[2, 3, 4, 5]));
        assert!(!rx.has_changed().unwrap());
        assert!(front.has_changed().unwrap());
        assert_eq!(*front.borrow_and_update(), Some(2));
        views.sale_written(
            &room,
            SaleSignal {
                seats: SeatsLeft::SoldOut,
                rate_factor: 1.0,
            },
        );
        assert!(rx.has_changed().unwrap());
        assert_eq!(rx.borrow_and_update().unwrap().seats, SeatsLeft::SoldOut);
        // An observation that still shows the old sale changes it back.
        install(observed(&[2, 3]));
        assert!(rx.has_changed().unwrap());
        views.retain(&[], Instant::now());
        drop(view);
        assert!(rx.has_changed().is_err(), "the view is gone");
    }

    #[test]
    fn samples_are_every_ten_then_every_percent_and_the_last() {
        let ranks: Vec<u64> = sample_ranks(25).collect();
        assert_eq!(ranks, [0, 10, 20, 24]);
        assert_eq!(sample_ranks(0).count(), 0);
        assert_eq!(sample_ranks(1).collect::<Vec<_>>(), [0]);
        let n = sample_ranks(1_000_000).count();
        assert!((700..900).contains(&n), "{n} samples at a million");
    }

    #[test]
    fn the_bound_is_never_below_and_within_one_percent_or_ten() {
        // Seqs with gaps (left or dropped waiters), as a line has them.
        let seqs: Vec<u64> = (0..50_000u64).map(|i| 1_000 + i * 3 + i % 2).collect();
        let obs = observed(&seqs);
        for (i, &seq) in seqs.iter().enumerate() {
            let truth = i as u64 + 1;
            let bound = obs.bound(seq).unwrap();
            assert!(bound >= truth, "{seq}: {bound} < {truth}");
            assert!(
                bound - truth <= (truth / 100).max(10),
                "{seq}: {bound} vs {truth}"
            );
        }
        // Ahead of the first sample: not in this line.
        assert_eq!(obs.bound(999), None);
        // Later, some ahead have gone: the old bound still holds above.
        let later: Vec<u64> = seqs.iter().copied().filter(|s| s % 5 != 0).collect();
        for (i, &seq) in later.iter().enumerate() {
            assert!(obs.bound(seq).unwrap() > i as u64);
        }
    }

    #[test]
    fn ran_out_holds_from_the_first_time_no_seat_is_left_until_the_room_closes() {
        let at = |state, seats| {
            let mut obs = observed(&[1]);
            obs.line.state = state;
            obs.line.sale.seats = seats;
            obs
        };
        use RoomState::{Open, Paused};
        use SeatsLeft::{Available, NoneAvailable, SoldOut};
        let steps = [
            (Open, Available, false),
            (Open, NoneAvailable, true),
            (Open, Available, true),
            (Open, SoldOut, true),
            (Open, Available, true),
            (Paused, Available, false),
            (Open, Available, false),
        ];
        let mut before = None;
        for (state, seats, ran_out) in steps {
            let now = RoomSignal::of(&at(state, seats), before);
            assert_eq!(now.ran_out, ran_out, "{state:?} {seats:?}");
            before = Some(now);
        }
    }
}
