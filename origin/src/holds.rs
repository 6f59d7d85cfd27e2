//! Held status polls (a long poll for what a waiter waits to hear). A
//! status request that says `Prefer: wait=N` (RFC 7240) and would read
//! `waiting` may be held ([`hold_secs`]) until the room's signal or the
//! line's front changes in a way that can change its answer, or until
//! min(N, its poll interval, [`MAX_WAIT_SECS`]) seconds pass; the status
//! route then answers afresh, with `Preference-Applied: wait=N`. Every
//! held waiter so hears it was let in, the sell-out, a pause, a resume or
//! a closing within a tick or two of this instance's view seeing it, at no
//! more requests than its poll interval already asks for.
//!
//! Who is held:
//! - every waiter of a paused room (past its opening): nothing changes for
//!   anyone until the room is resumed or closed, which wakes them all;
//! - every waiter while no seat is available (the endgame: nothing changes
//!   for anyone until holds end or the last seat sells);
//! - a waiter near the front ([`front_zone`]: it may be let in before its
//!   hold ends) of an open room with seats to sell: the whole wait where
//!   the line's front tells when it is let in ([`front_tells`]: a `fifo`
//!   line with a waiter in join order at its front, so in seq order),
//!   else [`NEAR_FRONT_SECS`] at most (in a lottery, or among pre-queue
//!   draws, a waiter may be let in without the front passing it);
//! - once the seats have run out since the room opened
//!   ([`RoomSignal::ran_out`]), a waiter beyond the front zone while a few
//!   seats are back (nobody that far back can be let in before its hold
//!   ends, so its held answer is the one its next poll would have had).
//!   Holding only while no seat is available is not enough: seats coming
//!   back from ended holds flip a sale near its end in and out of that
//!   many times a minute, and a waiter answered at once in such a moment
//!   would be told to come back a whole poll interval later (up to 6 s)
//!   and hear of the sell-out that late.
//!
//! Far-back waiters of an open room are not held before the seats first
//! run out: every waiter would then keep a connection open for the whole
//! sale, and 20,000 visitors on a machine that allows 20,000 open files
//! per process would meet refused connections. They poll at their
//! interval, which shrinks as they near the front (a tenth of their wait),
//! and are held once inside the front zone, which reaches further than the
//! line moves in two of their intervals. Waiters before the opening are
//! not held either: they poll at the opening, when they are drawn.
//!
//! What wakes a hold (compared with the signal when it began):
//! - the room's state, queueing method, opening or abandon time changed
//!   (a pause, a resume, a closing);
//! - every seat is booked (`sold_out`);
//! - the waiter was let in, left or was dropped: where the front tells,
//!   the seq at the front passed the waiter's (or nobody waits), so it
//!   hears within a view's refresh of the tick that let it in;
//! - where the front does not tell, for a waiter near the front: the line
//!   moved (the seq at its front changed), or seats came back; one far
//!   back keeps waiting (its answer would only gain an ETA), so seats
//!   coming and going do not send the whole line back at once;
//! - this instance stopped viewing the room (deleted), or shuts down.
//!
//! What bounds it: at most [`Holds::max`] holds per instance, and
//! [`HOLDS_PER_TICKET`] per ticket (beyond either a poll is answered at
//! once, as without the header: one ticket on thousands of connections
//! would otherwise take every hold, and every other waiter would fall back
//! to its poll interval in the sale's last moments); the wait is clamped
//! and never longer than the poll interval the answer gives, which stays
//! under a third of the abandon time, so a client that polls again right
//! after a held answer is never dropped as abandoned (it was marked as
//! polling when its hold began); a `Prefer` this module cannot read is
//! ignored, as a preference may be. A hold is only the handler's own future
//! (no task, no timer of its own beyond its sleep): a client that goes
//! away drops it, and `Held` gives its place back.
//!
//! [`Holds::hold`] returns the signal it ended on: a hold the sell-out
//! ended is answered `sold_out` from it, and one a closing ended `closed`,
//! with no store or view read (every held waiter of the room wakes in the
//! same instant).
//!
//! Not here: what the answer is (`http::queue`), what the view knows and
//! when its signal changes (`queue::snapshot`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use std::convert::Infallible;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderName};
use tokio_util::sync::CancellationToken;

use queue::LineView;
use queue::snapshot::{RoomSignal, RoomWatch, front_zone};
use queue::{SeatsLeft, Standing, pacing};
use room::{QueueingMethod, RoomId, RoomState};

/// Longest hold, whatever the client prefers.
pub const MAX_WAIT_SECS: u64 = 20;
/// Longest hold near the front while a few seats are back: such a waiter
/// may be let in any tick, and in a lottery (or among pre-queue draws)
/// that need not move the front of the line, which wakes a hold.
pub const NEAR_FRONT_SECS: u64 = 1;
/// Most holds one instance keeps at once unless told otherwise: each keeps
/// a connection open, and the default `--max-connections` is 10,000.
pub const DEFAULT_MAX_HELD: usize = 8_000;
/// Holds one ticket may have at once: the browsers of one account share
/// its place and ticket (a person's phone and laptop, a tab or two), and
/// each hears its turn from a held poll; one ticket on thousands of
/// connections still takes no more.
pub const HOLDS_PER_TICKET: usize = 4;
/// The response header that says a poll was held, and for how long at most.
pub const PREFERENCE_APPLIED: HeaderName = HeaderName::from_static("preference-applied");
/// `Prefer` (RFC 7240), named once: a name given as text is parsed again
/// on every lookup, and every status poll looks.
const PREFER: HeaderName = HeaderName::from_static("prefer");
/// Most characters of `Prefer` values read: a longer one is not a client
/// that means it.
const MAX_PREFER_LEN: usize = 256;

/// The instance's holds: how many there are, the cap, and the release that
/// ends them all at shutdown.
pub struct Holds {
    max: usize,
    held: AtomicUsize,
    /// The tickets (room, seq) held now, and how many holds each.
    tickets: Mutex<HashMap<(RoomId, u64), usize>>,
    released: CancellationToken,
}

impl Default for Holds {
    fn default() -> Self {
        Holds::new(DEFAULT_MAX_HELD)
    }
}

impl Holds {
    /// At most `max` holds at once (0: none).
    pub fn new(max: usize) -> Holds {
        Holds {
            max,
            held: AtomicUsize::new(0),
            tickets: Mutex::new(HashMap::new()),
            released: CancellationToken::new(),
        }
    }

    /// The cap.
    pub fn max(&self) -> usize {
        self.max
    }

    /// Polls held now.
    pub fn held(&self) -> usize {
        self.held.load(Ordering::Acquire)
    }

    /// Ends every hold at once, and refuses new ones: graceful shutdown
    /// must not wait for them.
    pub fn release_all(&self) {
        self.released.cancel();
    }

    /// A place for one hold of the ticket `seq` of `room`, if the cap
    /// allows, the ticket holds fewer than [`HOLDS_PER_TICKET`] and the
    /// instance is not shutting down.
    fn enter(&self, room: &RoomId, seq: u64) -> Option<Held<'_>> {
        if self.released.is_cancelled() {
            return None;
        }
        let mut n = self.held.load(Ordering::Acquire);
        loop {
            if n >= self.max {
                return None;
            }
            match self
                .held
                .compare_exchange_weak(n, n + 1, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => break,
                Err(now) => n = now,
            }
        }
        // Counted first, so the guard gives the count back on every way out.
        let mut held = Held {
            holds: self,
            ticket: None,
        };
        let ticket = (room.clone(), seq);
        let mut tickets = self.tickets.lock().unwrap_or_else(PoisonError::into_inner);
        let holds = tickets.entry(ticket.clone()).or_insert(0);
        if *holds >= HOLDS_PER_TICKET {
            return None;
        }
        *holds += 1;
        drop(tickets);
        held.ticket = Some(ticket);
        metrics::gauge!(crate::metric_names::HELD_POLLS).increment(1.0);
        Some(held)
    }

    /// Holds a waiter's poll: waits on `watch` (subscribed before its
    /// answer was computed, so no change since is missed) for at most
    /// `secs` seconds, until a change that can change the answer of the
    /// waiter at `position` (see the module doc). `None` when it was not
    /// held at all (the cap, shutdown): answer at once, without
    /// `Preference-Applied`; else the room's signal when the hold ended.
    pub async fn hold(
        &self,
        (room, seq): (&RoomId, u64),
        watch: RoomWatch,
        position: Option<u64>,
        line: &LineView,
        secs: u64,
    ) -> Option<Option<RoomSignal>> {
        let RoomWatch {
            mut signal,
            mut front,
            start,
        } = watch;
        let held = self.enter(room, seq)?;
        let wait = Duration::from_secs(secs);
        // The signal when subscribed (the answer in hand was computed after
        // it): a change since then, even before the hold began, is judged
        // against it. The receiver's current value would already be the
        // changed one, and a room closed meanwhile would hold the poll to
        // its end.
        let start = start?;
        let near_front = position.is_none_or(|p| p <= front_zone(line, wait));
        let tells = front_tells(Some(start), *front.borrow(), position);
        // Let in (or gone) before the hold began: answer now.
        if tells && near_front && passed(*front.borrow_and_update(), seq) {
            return Some(*signal.borrow());
        }
        // Far back, the line's moving changes nothing before the hold ends.
        let mut line_moves = near_front;
        // Seats coming back wake one near the front only where the front
        // cannot tell when it is let in.
        let seats_wake = near_front && !tells;
        let timeout = tokio::time::sleep(wait);
        tokio::pin!(timeout);
        loop {
            tokio::select! {
                () = &mut timeout => break,
                () = held.holds.released.cancelled() => break,
                changed = signal.changed() => {
                    let Ok(()) = changed else { return Some(None) };
                    if wakes(start, *signal.borrow_and_update(), seats_wake) {
                        break;
                    }
                }
                moved = front.changed(), if line_moves => match moved {
                    Ok(()) if !tells || passed(*front.borrow_and_update(), seq) => break,
                    // The line moved, with this waiter still behind its front.
                    Ok(()) => {}
                    // The view is gone: the signal says so too.
                    Err(_) => line_moves = false,
                },
            }
        }
        Some(*signal.borrow())
    }
}

/// One poll's place among the holds, and its ticket's; given back when
/// dropped (also when the client goes away and the handler's future is
/// dropped mid-hold).
struct Held<'a> {
    holds: &'a Holds,
    /// Set once the ticket's place is taken (and the gauge counts it).
    ticket: Option<(RoomId, u64)>,
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.holds.held.fetch_sub(1, Ordering::AcqRel);
        if let Some(ticket) = self.ticket.take() {
            let mut tickets = self
                .holds
                .tickets
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if let Some(holds) = tickets.get_mut(&ticket) {
                *holds = holds.saturating_sub(1);
                if *holds == 0 {
                    tickets.remove(&ticket);
                }
            }
            drop(tickets);
            metrics::gauge!(crate::metric_names::HELD_POLLS).decrement(1.0);
        }
    }
}

/// Whether the room's signal moving from `start` to `now` can change a
/// waiter's answer before its hold ends; seats coming back do when
/// `seats_wake` (see the module doc).
fn wakes(start: RoomSignal, now: Option<RoomSignal>, seats_wake: bool) -> bool {
    let Some(now) = now else {
        return true;
    };
    let same_room = RoomSignal {
        seats: start.seats,
        ran_out: start.ran_out,
        ..now
    } == start;
    !same_room
        || match now.seats {
            SeatsLeft::SoldOut => true,
            SeatsLeft::Available => seats_wake,
            SeatsLeft::NoneAvailable => false,
        }
}

/// Whether the line's front tells when a waiter at `position` is let in:
/// in a `fifo` room (`signal`) whose front is a waiter in join order
/// (`front`, its seq: no pre-queue draw is ahead, draws come first), the
/// line is in seq order, so a waiter is let in, leaves or is dropped
/// exactly when the seq at the front passes its own. A waiter with no
/// position (a lottery, a pre-queue) is not placed by the front.
pub fn front_tells(signal: Option<RoomSignal>, front: Option<u64>, position: Option<u64>) -> bool {
    signal.is_some_and(|s| s.method == QueueingMethod::Fifo)
        && front.is_some()
        && position.is_some()
}

/// Whether the line's front (its seq; `None`: nobody waits) has passed the
/// waiter `seq`, in a line whose front tells ([`front_tells`]).
fn passed(front: Option<u64>, seq: u64) -> bool {
    front.is_none_or(|f| f > seq)
}

/// How long the poll of a waiter at `position` (`None`: not known) that
/// may be held `secs` seconds is held, given what it watches (`watch`:
/// the room's signal when it subscribed, and the line's front); 0:
/// answered at once (see the module doc).
pub fn hold_secs(line: &LineView, watch: &RoomWatch, position: Option<u64>, secs: u64) -> u64 {
    if line.before_opening() {
        return 0;
    }
    match line.state {
        // Nothing moves until the room is resumed or closed.
        RoomState::Paused => return secs,
        RoomState::Open => {}
        RoomState::Closed => return 0,
    }
    let ran_out = watch.start.is_some_and(|s| s.ran_out);
    let near = position.is_none_or(|p| p <= front_zone(line, Duration::from_secs(secs)));
    match line.sale.seats {
        SeatsLeft::NoneAvailable => secs,
        SeatsLeft::Available if near => {
            if front_tells(watch.start, *watch.front.borrow(), position) {
                secs
            } else {
                secs.min(NEAR_FRONT_SECS)
            }
        }
        SeatsLeft::Available if ran_out => secs,
        SeatsLeft::Available | SeatsLeft::SoldOut => 0,
    }
}

/// The seconds a poll that prefers `preferred` may be held: never longer
/// than its answer's poll interval (rounded down to whole seconds) nor
/// [`MAX_WAIT_SECS`]; 0 means not at all.
pub fn wait_secs(preferred: u64, standing: Standing, line: &LineView) -> u64 {
    let interval = pacing::poll_after_ms(standing, line) / 1000;
    preferred.min(interval).min(MAX_WAIT_SECS)
}

/// The request's `wait` preference ([`prefer_wait`]), read from its headers
/// in place (the status route takes no copy of them).
pub struct Preferred(pub Option<u64>);

impl<S: Send + Sync> FromRequestParts<S> for Preferred {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(Preferred(prefer_wait(&parts.headers)))
    }
}

/// The `wait` preference of a request's `Prefer` headers, in seconds (the
/// first one given); `None` when there is none or it cannot be read. A
/// value too large for a number is unreadable; a large number is clamped
/// later ([`wait_secs`]).
pub fn prefer_wait(headers: &HeaderMap) -> Option<u64> {
    headers
        .get_all(PREFER)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .filter(|v| v.len() <= MAX_PREFER_LEN)
        .flat_map(|v| v.split(','))
        .find_map(|preference| {
            // `wait=10; param` or `wait="10"`: the token and its value only.
            let head = preference.split(';').next()?;
            let (name, value) = head.split_once('=')?;
            if !name.trim().eq_ignore_ascii_case("wait") {
                return None;
            }
            let value = value.trim();
            let value = value
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .unwrap_or(value);
            if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            value.parse().ok()
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn prefer(values: &[&str]) -> Option<u64> {
        let mut headers = HeaderMap::new();
        for v in values {
            headers.append("prefer", HeaderValue::from_str(v).unwrap());
        }
        prefer_wait(&headers)
    }

    #[test]
    fn the_wait_preference_is_read_leniently_and_anything_odd_is_ignored() {
        let table: &[(&[&str], Option<u64>)] = &[
            (&[], None),
            (&["wait=10"], Some(10)),
            (&["WAIT = 7"], Some(7)),
            (&["respond-async, wait=5"], Some(5)),
            (&["wait=\"12\""], Some(12)),
            (&["wait=3; foo=bar"], Some(3)),
            (&["handling=lenient", "wait=4"], Some(4)),
            (&["wait=0"], Some(0)),
            (&["wait=999999999999"], Some(999_999_999_999)),
            (&["wait"], None),
            (&["wait="], None),
            (&["wait=-1"], None),
            (&["wait=1.5"], None),
            (&["wait=abc"], None),
            (&["waiting=10"], None),
            (&["wait=99999999999999999999999999"], None),
            (&["wait=\"5"], None),
        ];
        for (values, want) in table {
            assert_eq!(prefer(values), *want, "{values:?}");
        }
        let long = format!("{}wait=5", "x, ".repeat(100));
        assert_eq!(prefer(&[&long]), None, "a long Prefer is not read");
    }

    fn signal(seats: SeatsLeft) -> RoomSignal {
        RoomSignal {
            state: room::RoomState::Open,
            seats,
            method: room::QueueingMethod::Fifo,
            opens_at_ms: None,
            abandon_ms: 60_000,
            ran_out: true,
        }
    }

    #[test]
    fn a_hold_wakes_when_the_answer_can_change() {
        let start = signal(SeatsLeft::NoneAvailable);
        assert!(wakes(start, Some(signal(SeatsLeft::SoldOut)), false));
        assert!(wakes(start, Some(signal(SeatsLeft::Available)), true));
        assert!(!wakes(start, Some(signal(SeatsLeft::Available)), false));
        assert!(!wakes(start, Some(start), true));
        assert!(wakes(start, None, false), "the view is gone");
        let paused = RoomSignal {
            state: room::RoomState::Paused,
            ..start
        };
        assert!(wakes(start, Some(paused), false));
        let shorter = RoomSignal {
            abandon_ms: 9_000,
            ..start
        };
        assert!(wakes(start, Some(shorter), false));
    }

    /// A room closed after the poll subscribed but before its hold began
    /// (during the store's answer, say) ends the hold at once: the change
    /// is judged against the signal at subscription, not the receiver's
    /// current value, which is already the closed one.
    #[tokio::test]
    async fn a_change_between_subscribing_and_holding_is_not_missed() {
        let open = signal(SeatsLeft::Available);
        let (signals, rx) = tokio::sync::watch::channel(Some(open));
        let (_fronts, front) = tokio::sync::watch::channel(Some(1));
        let watch = RoomWatch {
            signal: rx,
            front,
            start: Some(open),
        };
        let closed = RoomSignal {
            state: room::RoomState::Closed,
            ..open
        };
        signals.send_replace(Some(closed));
        let line = LineView {
            state: room::RoomState::Open,
            opens_at_ms: None,
            waiting: 100_000,
            admit_rate: 1.0,
            abandon_ms: 60_000,
            sale: queue::SaleSignal::AVAILABLE,
            now_ms: 0,
            schedule: None,
        };
        let holds = Holds::new(10);
        // Far back (no wake for the line moving), for up to 20 s: it must
        // end well before.
        let room = RoomId::parse("r").unwrap();
        let hold = holds.hold((&room, 1), watch, Some(90_000), &line, 20);
        let ended = tokio::time::timeout(Duration::from_secs(5), hold).await;
        assert_eq!(
            ended.ok(),
            Some(Some(Some(closed))),
            "held past a closing it should have seen"
        );
    }

    /// A line of 1,000 at one a second, at `now_ms` on the store's clock.
    fn line_at(state: room::RoomState, seats: SeatsLeft, now_ms: u64) -> LineView {
        LineView {
            state,
            opens_at_ms: None,
            waiting: 1_000,
            admit_rate: 1.0,
            abandon_ms: 60_000,
            sale: queue::SaleSignal {
                seats,
                rate_factor: 1.0,
            },
            now_ms,
            schedule: None,
        }
    }

    /// What a poll watches: the signal `start` and the line's front, and
    /// the senders that move them.
    fn watching(
        start: RoomSignal,
        front: Option<u64>,
    ) -> (
        tokio::sync::watch::Sender<Option<RoomSignal>>,
        tokio::sync::watch::Sender<Option<u64>>,
        RoomWatch,
    ) {
        let (signals, signal) = tokio::sync::watch::channel(Some(start));
        let (fronts, front) = tokio::sync::watch::channel(front);
        let watch = RoomWatch {
            signal,
            front,
            start: Some(start),
        };
        (signals, fronts, watch)
    }

    #[test]
    fn how_long_a_poll_is_held_follows_the_room_the_seats_and_the_place() {
        use SeatsLeft::{Available, NoneAvailable, SoldOut};
        use room::RoomState::{Closed, Open, Paused};
        let line = |state, seats| line_at(state, seats, 0);
        // A 3 s hold at 1 a second: the front zone is 2 x 1 x 5 + 100.
        let zone = front_zone(&line(Open, Available), Duration::from_secs(3));
        assert_eq!(zone, 110);
        let fifo = |ran_out| RoomSignal {
            ran_out,
            ..signal(SeatsLeft::Available)
        };
        let lottery = |ran_out| RoomSignal {
            method: QueueingMethod::Random,
            ..fifo(ran_out)
        };
        // (signal, front seq, room, seats, position, secs allowed, held)
        let table = [
            // Near the front of a fifo line: held until let in.
            (fifo(false), Some(1), Open, Available, Some(1), 3, 3),
            (fifo(false), Some(1), Open, Available, Some(zone), 3, 3),
            (fifo(true), Some(1), Open, Available, Some(zone), 3, 3),
            // The front cannot tell: pre-queue draws at it, a lottery, no
            // position.
            (fifo(false), None, Open, Available, Some(1), 3, 1),
            (lottery(false), Some(1), Open, Available, Some(1), 3, 1),
            (fifo(true), Some(1), Open, Available, None, 3, 1),
            // Far back with seats to sell: held once they have run out.
            (fifo(false), Some(1), Open, Available, Some(zone + 1), 3, 0),
            (fifo(true), Some(1), Open, Available, Some(zone + 1), 3, 3),
            // The endgame holds everyone.
            (
                fifo(false),
                Some(1),
                Open,
                NoneAvailable,
                Some(zone + 1),
                3,
                3,
            ),
            (lottery(false), None, Open, NoneAvailable, None, 3, 3),
            // A paused room holds everyone until it is resumed or closed.
            (
                fifo(false),
                Some(1),
                Paused,
                Available,
                Some(zone + 1),
                3,
                3,
            ),
            (fifo(true), Some(1), Paused, NoneAvailable, Some(1), 3, 3),
            // Never held: sold out, closed, or no wait allowed.
            (fifo(true), Some(1), Open, SoldOut, Some(zone + 1), 3, 0),
            (fifo(true), Some(1), Closed, Available, Some(zone + 1), 3, 0),
            (fifo(true), Some(1), Open, Available, Some(1), 0, 0),
            (fifo(true), Some(1), Paused, Available, Some(1), 0, 0),
        ];
        for (start, front, state, seats, position, secs, held) in table {
            let (_s, _f, watch) = watching(start, front);
            assert_eq!(
                hold_secs(&line(state, seats), &watch, position, secs),
                held,
                "{start:?} {front:?} {state:?} {seats:?} {position:?} {secs}"
            );
        }
    }

    /// Before the opening nobody is held, paused or not: they poll at the
    /// opening. Once the store's clock passes it, the same poll is held.
    #[test]
    fn nobody_is_held_before_the_opening() {
        use room::RoomState::{Open, Paused};
        let (_s, _f, watch) = watching(signal(SeatsLeft::Available), Some(1));
        for state in [Open, Paused] {
            let mut line = line_at(state, SeatsLeft::Available, 10_000);
            line.opens_at_ms = Some(12_000);
            assert_eq!(hold_secs(&line, &watch, Some(1), 3), 0, "{state:?}");
            line.now_ms = 12_000;
            assert_eq!(hold_secs(&line, &watch, Some(1), 3), 3, "{state:?}");
        }
    }

    /// A waiter near the front of a fifo line is held while the line moves
    /// ahead of it, and answered the moment the front passes its seq (it
    /// was let in); one with the front already past it is answered at
    /// once.
    #[tokio::test]
    async fn a_hold_near_the_front_ends_when_the_front_passes_it() {
        let open = RoomSignal {
            ran_out: false,
            ..signal(SeatsLeft::Available)
        };
        let line = line_at(room::RoomState::Open, SeatsLeft::Available, 0);
        let room = RoomId::parse("r").unwrap();
        let holds = Holds::new(10);
        let (_signals, fronts, watch) = watching(open, Some(40));
        let hold = holds.hold((&room, 42), watch, Some(3), &line, 20);
        tokio::pin!(hold);
        // The line moves, the waiter still behind the front: held on.
        for front in [Some(41), Some(42)] {
            fronts.send_replace(front);
            let early = tokio::time::timeout(Duration::from_millis(150), &mut hold).await;
            assert!(early.is_err(), "answered with the front at {front:?}");
        }
        let at = std::time::Instant::now();
        fronts.send_replace(Some(43));
        let ended = tokio::time::timeout(Duration::from_secs(5), &mut hold).await;
        assert_eq!(ended.ok(), Some(Some(Some(open))));
        assert!(
            at.elapsed() < Duration::from_millis(500),
            "{:?}",
            at.elapsed()
        );
        assert_eq!(holds.held(), 0);

        // Nobody waits any more: it is not waiting either.
        let (_signals, fronts, watch) = watching(open, Some(42));
        let hold = holds.hold((&room, 42), watch, Some(1), &line, 20);
        fronts.send_replace(None);
        let ended = tokio::time::timeout(Duration::from_secs(5), hold).await;
        assert_eq!(ended.ok(), Some(Some(Some(open))));

        // Passed already when the hold began.
        let (_signals, _fronts, watch) = watching(open, Some(50));
        let ended = tokio::time::timeout(
            Duration::from_secs(5),
            holds.hold((&room, 42), watch, Some(1), &line, 20),
        )
        .await;
        assert_eq!(ended.ok(), Some(Some(Some(open))));
    }

    /// Every waiter of a paused room is held, far back too, and every one
    /// wakes on the resume (and on a closing).
    #[tokio::test]
    async fn a_resume_wakes_every_held_waiter() {
        let paused = RoomSignal {
            state: room::RoomState::Paused,
            ran_out: false,
            ..signal(SeatsLeft::Available)
        };
        let line = line_at(room::RoomState::Paused, SeatsLeft::Available, 0);
        let room = RoomId::parse("r").unwrap();
        let holds = Holds::new(10);
        for (position, state) in [
            (1, room::RoomState::Open),
            (90_000, room::RoomState::Open),
            (90_000, room::RoomState::Closed),
        ] {
            let (signals, fronts, watch) = watching(paused, Some(1));
            let hold = holds.hold((&room, 2), watch, Some(position), &line, 20);
            tokio::pin!(hold);
            // The front waiter leaves: nothing for this one.
            fronts.send_replace(Some(2));
            let early = tokio::time::timeout(Duration::from_millis(150), &mut hold).await;
            assert!(early.is_err(), "answered before the resume");
            let changed = RoomSignal { state, ..paused };
            let at = std::time::Instant::now();
            signals.send_replace(Some(changed));
            let ended = tokio::time::timeout(Duration::from_secs(5), &mut hold).await;
            assert_eq!(
                ended.ok(),
                Some(Some(Some(changed))),
                "{position} {state:?}"
            );
            assert!(at.elapsed() < Duration::from_millis(500));
        }
    }

    /// Seats coming back wake a waiter near the front only where the front
    /// cannot tell when it is let in (a lottery here); in a fifo line the
    /// front's passing does.
    #[test]
    fn seats_back_wake_only_where_the_front_cannot_tell() {
        let start = signal(SeatsLeft::NoneAvailable);
        let back = Some(signal(SeatsLeft::Available));
        assert!(wakes(start, back, true));
        assert!(!wakes(start, back, false));
        let fifo = signal(SeatsLeft::Available);
        assert!(front_tells(Some(fifo), Some(1), Some(5)));
        assert!(
            !front_tells(Some(fifo), None, Some(5)),
            "draws at the front"
        );
        assert!(!front_tells(Some(fifo), Some(1), None), "no place");
        let lottery = RoomSignal {
            method: QueueingMethod::Random,
            ..fifo
        };
        assert!(!front_tells(Some(lottery), Some(1), Some(5)));
        assert!(!front_tells(None, Some(1), Some(5)));
    }

    #[test]
    fn the_cap_counts_holds_and_gives_places_back() {
        let holds = Holds::new(2);
        let room = RoomId::parse("r").unwrap();
        let a = holds.enter(&room, 1).expect("first");
        let b = holds.enter(&room, 2).expect("second");
        assert!(holds.enter(&room, 3).is_none(), "over the cap");
        assert_eq!(holds.held(), 2);
        drop(a);
        assert_eq!(holds.held(), 1);
        let c = holds.enter(&room, 3).expect("a place came back");
        drop((b, c));
        assert_eq!(holds.held(), 0);
        holds.release_all();
        assert!(holds.enter(&room, 4).is_none(), "none while shutting down");
        assert_eq!(holds.held(), 0);
    }

    #[test]
    fn a_few_holds_per_ticket() {
        let holds = Holds::new(8);
        let (r, s) = (RoomId::parse("r").unwrap(), RoomId::parse("s").unwrap());
        let mut a: Vec<_> = (0..HOLDS_PER_TICKET)
            .map(|_| holds.enter(&r, 1).expect("the ticket's browsers"))
            .collect();
        assert!(holds.enter(&r, 1).is_none(), "the same ticket once more");
        assert_eq!(
            holds.held(),
            HOLDS_PER_TICKET,
            "a refused hold takes no place"
        );
        let b = holds.enter(&s, 1).expect("the same seq in another room");
        let c = holds.enter(&r, 2).expect("another ticket");
        a.pop();
        let d = holds.enter(&r, 1).expect("one of the ticket's holds ended");
        drop((a, b, c, d));
        assert_eq!(holds.held(), 0);
        assert!(holds.tickets.lock().unwrap().is_empty(), "nothing kept");
    }
}
