//! The room follows its seats: a background loop in every origin instance
//! that turns what the booking database says into each room's sale signal
//! in the queue's store, so every instance admits by the same rule.
//!
//! - No seat available (all held or booked): nobody new is admitted, since
//!   nobody could buy. Seats coming back (ended holds, cancellations) resume
//!   admission on the next pass.
//! - Every seat booked: the room is sold out; waiters read `sold_out` and
//!   joins take no place.
//! - Adaptive admission (rooms with `target_booking_p99_ms`): the admit
//!   rate is scaled by a factor that falls (×0.7 a second) while booking's
//!   p99 latency, measured here over the last few seconds, is over the
//!   target, and climbs back (+0.1 a second) once it is comfortably under.
//!   A target removed lets the factor climb back the same way, not at once:
//!   a jump from 0.05 to 1 would let twenty times the rate in within a
//!   tick, onto a booking system that was just struggling and past what
//!   the status snapshots of other instances look ahead for (twice the
//!   rate, `queue::snapshot`).
//! - The booking database away (stopped, frozen, unreachable): a room that
//!   sells admits nobody until its seats can be read again, since its last
//!   seats may be gone; waiters keep their places. Several instances write
//!   the same signal; one that alone cannot reach the database would
//!   alternate with the others, pass by pass.
//!
//! Each pass also hands the seats it read, with the room's admissions, to
//! the outlook waiters are told (`outlook`).
//!
//! The loop also sweeps ended holds, so counts and the seat map see freed
//! seats promptly. A signal it writes reaches this instance's status views
//! at once, so held status polls wake on the last seat booked without
//! waiting for the next observation. (Passes keep their own pace rather than
//! run after every hold and booking: on a loaded two-core machine the extra
//! passes cost more than the 250 ms they would save.)
//!
//! The queue knows nothing of booking and booking nothing of the queue:
//! this module is where the two meet.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::history::History;
use crate::latency::Latency;
use crate::metric_names::SEATS;
use crate::outlook::{Figures, Outlooks};
use booking::{BookingStore, RoomSeats};
use queue::snapshot::Snapshots;
use queue::{QueueStore, SaleSignal, SeatsLeft, StoreError};
use room::RoomId;
use room::clock::Clock;

/// How often the signal is recomputed and ended holds are swept.
pub const PASS: Duration = Duration::from_millis(250);
/// How often near a room's sell-out ([`near_the_end`]): every seat may go
/// within one pass then, and each pass of lag let the promoter admit
/// visitors after the last seat sold (up to 32 in the rehearsal's smoke run,
/// who then found no seat and were never told the sale was over).
pub const PASS_NEAR_THE_END: Duration = Duration::from_millis(50);
/// How often the rate factor may move.
const ADJUST_EVERY: Duration = Duration::from_secs(1);
/// The factor never falls below this, so a struggling sale still admits.
const MIN_FACTOR: f64 = 0.05;

/// The factor after one adjustment: toward what booking's p99 asks for
/// against the room's target, or, with no target (removed, or never set),
/// climbing back to 1 as from a fast sale.
fn adjusted_factor(factor: f64, target: Option<Duration>, p99: Option<Duration>) -> f64 {
    match target {
        Some(target) => next_factor(factor, p99, target),
        None => next_factor(factor, None, Duration::ZERO),
    }
}

/// Which way the factor moves for a measured p99 against the target.
pub fn next_factor(factor: f64, p99: Option<Duration>, target: Duration) -> f64 {
    match p99 {
        Some(p) if p > target => (factor * 0.7).max(MIN_FACTOR),
        // Well under the target, or too quiet to measure: recover.
        Some(p) if p.as_secs_f64() < target.as_secs_f64() * 0.8 => (factor + 0.1).min(1.0),
        None => (factor + 0.1).min(1.0),
        Some(_) => factor,
    }
}

/// What the seats say the room may do.
pub fn seats_left(seats: Option<RoomSeats>) -> SeatsLeft {
    match seats {
        None => SeatsLeft::Available,
        Some(s) if s.sold_out() => SeatsLeft::SoldOut,
        Some(s) if s.available == 0 => SeatsLeft::NoneAvailable,
        Some(_) => SeatsLeft::Available,
    }
}

/// Whether a room's unsold seats are so few that they may all be booked
/// before the next ordinary pass: at most 20, or 5 % of the room.
pub fn near_the_end(seats: Option<RoomSeats>) -> bool {
    seats.is_some_and(|s| {
        let unsold = s.available + s.held;
        !s.sold_out() && unsold <= (s.total / 20).max(20)
    })
}

/// One room's memory between passes: its adaptive factor, and whether the
/// last read of its seats found any (a room that sells nothing through
/// this origin keeps admitting while the database is away).
struct Followed {
    factor: f64,
    adjusted: Instant,
    sells: bool,
}

/// How long a pass waits for a room's seats before it counts the booking
/// database as away (a healthy one answers in milliseconds).
pub const SEATS_DEADLINE: Duration = Duration::from_secs(1);

/// What a room may do while its seats cannot be read: admit nobody, since
/// nobody could buy (a sold-out room stays sold out).
pub fn seats_unreadable(current: SeatsLeft) -> SeatsLeft {
    match current {
        SeatsLeft::Available => SeatsLeft::NoneAvailable,
        other => other,
    }
}

/// Who hears what a pass read, besides the queue's store: the console's
/// history, this instance's status views and the waiters' outlook.
#[derive(Clone)]
pub struct Watchers {
    /// Every room's recent figures (the seats read).
    pub history: Arc<History>,
    /// The status views (a signal written reaches them at once).
    pub views: Arc<Snapshots>,
    /// The outlook's figures (seats and admissions).
    pub outlooks: Arc<Outlooks>,
}

/// The loop: every [`PASS`], for every room computes the signal and writes
/// it when the store holds another (so a restarted store, or another
/// instance's older view, is corrected within a pass), then sweeps ended
/// holds. While the booking database cannot be read, rooms that sell admit
/// nobody (their seats may all be gone); the next pass that reads them
/// restores their signal. Runs until `cancel` fires; failures are logged
/// once and retried.
pub async fn run(
    queue: Arc<dyn QueueStore>,
    booking: Arc<BookingStore>,
    latency: Arc<Latency>,
    watchers: Watchers,
    clock: Clock,
    cancel: CancellationToken,
) {
    let mut followed: HashMap<RoomId, Followed> = HashMap::new();
    let mut failing = false;
    loop {
        let result = pass(
            queue.as_ref(),
            &booking,
            &latency,
            &watchers,
            &clock,
            &mut followed,
        )
        .await;
        let soon = matches!(result, Ok(true));
        match result {
            Ok(_) if failing => {
                tracing::info!("sale signal: stores reachable again");
                failing = false;
            }
            Ok(_) => {}
            Err(e) if !failing => {
                tracing::warn!(error = %e, "sale signal: a store is unreachable; retrying");
                failing = true;
            }
            Err(_) => {}
        }
        tokio::select! {
            () = cancel.cancelled() => break,
            () = tokio::time::sleep(if soon { PASS_NEAR_THE_END } else { PASS }) => {}
        }
    }
    tracing::info!("sale signal stopped");
}

/// A booking call bounded by `deadline`.
async fn bounded<T>(
    deadline: Duration,
    call: impl Future<Output = Result<T, booking::BookingError>>,
) -> Result<T, String> {
    match tokio::time::timeout(deadline, call).await {
        Ok(result) => result.map_err(|e| format!("booking: {e}")),
        Err(_) => Err(format!(
            "booking: no answer within {} ms",
            deadline.as_millis()
        )),
    }
}

/// The room's seats by state, for `/metrics` (rooms selling nothing here
/// have none).
fn gauge_seats(room: &RoomId, seats: Option<RoomSeats>) {
    let Some(seats) = seats else { return };
    for (state, n) in [
        ("available", seats.available),
        ("held", seats.held),
        ("booked", seats.booked),
    ] {
        metrics::gauge!(SEATS, "room" => room.to_string(), "state" => state).set(n as f64);
    }
}

/// One pass over every room; whether any is near its end ([`near_the_end`]).
async fn pass(
    queue: &dyn QueueStore,
    booking: &BookingStore,
    latency: &Latency,
    watchers: &Watchers,
    clock: &Clock,
    followed: &mut HashMap<RoomId, Followed>,
) -> Result<bool, String> {
    let Watchers {
        history,
        views,
        outlooks,
    } = watchers;
    let mut soon = false;
    let now = clock.now_ms();
    // Set by the first booking call that fails: the other rooms are then
    // not asked (each would wait out the deadline), and admit nobody too.
    let mut booking_down: Option<String> = None;
    let rooms = queue.rooms().await.map_err(|e| e.to_string())?;
    followed.retain(|room, _| rooms.contains(room));
    latency.retain(&rooms);
    outlooks.retain(&rooms);
    for room in rooms {
        let figures = match queue.figures(&room).await {
            Ok(f) => f,
            Err(StoreError::UnknownRoom) => continue,
            Err(e) => return Err(e.to_string()),
        };
        let seats = match &booking_down {
            Some(_) => None,
            None => match bounded(SEATS_DEADLINE, booking.room_seats(room.as_str(), now)).await {
                Ok(seats) => Some(seats),
                Err(e) => {
                    booking_down = Some(e);
                    None
                }
            },
        };
        let state = followed.entry(room.clone()).or_insert(Followed {
            factor: figures.sale.rate_factor,
            adjusted: Instant::now(),
            // Until read: assume it sells, so an unread room admits nobody.
            sells: true,
        });
        let seats_left = match seats {
            Some(seats) => {
                // The console's seat figures and the seat gauges: what was
                // read here anyway.
                history.note_seats(&room, seats);
                gauge_seats(&room, seats);
                // And the outlook's: the seats with this pass's admissions.
                outlooks.note(&room, seats.map(|s| Figures::of(s, &figures)));
                soon |= near_the_end(seats);
                state.sells = seats.is_some();
                seats_left(seats)
            }
            None if state.sells => seats_unreadable(figures.sale.seats),
            None => figures.sale.seats,
        };
        if state.adjusted.elapsed() >= ADJUST_EVERY {
            let target = figures
                .settings
                .target_booking_p99_ms
                .map(|ms| Duration::from_millis(u64::from(ms)));
            let p99 = target.and_then(|_| latency.p99(&room));
            let next = adjusted_factor(state.factor, target, p99);
            if next != state.factor {
                tracing::info!(%room, from = state.factor, to = next, "adaptive admission");
            }
            state.factor = next;
            state.adjusted = Instant::now();
        }
        let signal = SaleSignal {
            seats: seats_left,
            rate_factor: state.factor,
        };
        if figures.sale != signal {
            match queue.set_sale(&room, signal).await {
                Ok(()) => {}
                Err(StoreError::UnknownRoom) => continue,
                Err(e) => return Err(e.to_string()),
            }
            if figures.sale.seats != signal.seats {
                tracing::info!(%room, seats = ?signal.seats, "sale signal");
            }
            views.sale_written(&room, signal);
        }
    }
    if let Some(e) = booking_down {
        return Err(e);
    }
    // After the signals: seats of ended holds read as available by time
    // alone, so the sweep only moves counts and versions (and recovers
    // paying holds); a sweep that fails leaves the signals as read. Its
    // deadline is a request's: a database that froze mid-sweep holds the
    // loop that long, then the next pass's seat reads find it away.
    bounded(booking.deadline(false), booking.sweep(now)).await?;
    end_booked_sessions(queue, booking).await;
    Ok(soon)
}

/// Ends the queue sessions whose purchase recovery finished (their confirm
/// never answered, so never ended them): the slot goes to the next waiter
/// and the admission cannot buy again. One that cannot be ended now is
/// tried again next pass.
async fn end_booked_sessions(queue: &dyn QueueStore, booking: &BookingStore) {
    let mut retry = Vec::new();
    for (room, seq) in booking.take_booked_sessions() {
        let Some(id) = RoomId::parse(&room) else {
            continue;
        };
        match queue.leave(&id, seq).await {
            Ok(_) => tracing::info!(room = %id, seq, "session ended: its purchase was recovered"),
            Err(StoreError::UnknownRoom) => {}
            Err(_) => retry.push((room, seq)),
        }
    }
    booking.keep_booked_sessions(retry);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seats(available: u64, held: u64, booked: u64) -> Option<RoomSeats> {
        Some(RoomSeats {
            available,
            held,
            booked,
            total: available + held + booked,
        })
    }

    #[test]
    fn the_seats_decide_what_the_room_may_do() {
        assert_eq!(seats_left(None), SeatsLeft::Available);
        assert_eq!(seats_left(seats(1, 5, 5)), SeatsLeft::Available);
        assert_eq!(seats_left(seats(0, 1, 9)), SeatsLeft::NoneAvailable);
        assert_eq!(seats_left(seats(0, 0, 10)), SeatsLeft::SoldOut);
    }

    #[test]
    fn seats_that_cannot_be_read_admit_nobody() {
        assert_eq!(
            seats_unreadable(SeatsLeft::Available),
            SeatsLeft::NoneAvailable
        );
        assert_eq!(
            seats_unreadable(SeatsLeft::NoneAvailable),
            SeatsLeft::NoneAvailable
        );
        assert_eq!(seats_unreadable(SeatsLeft::SoldOut), SeatsLeft::SoldOut);
    }

    #[test]
    fn passes_come_faster_only_when_the_last_seats_may_go_any_moment() {
        assert!(!near_the_end(None), "a room without seats");
        assert!(!near_the_end(seats(500, 100, 400)));
        assert!(near_the_end(seats(15, 5, 980)), "20 unsold of 1,000");
        assert!(near_the_end(seats(0, 3, 197)), "all held, 3 unsold");
        assert!(near_the_end(seats(0, 400, 9_600)), "5 % of 10,000");
        assert!(!near_the_end(seats(1, 500, 9_499)), "501 unsold of 10,000");
        assert!(
            !near_the_end(seats(0, 0, 200)),
            "sold out: nothing to watch"
        );
    }

    #[test]
    fn the_factor_falls_when_booking_is_slow_and_recovers_when_fast() {
        let target = Duration::from_millis(100);
        let slow = Some(Duration::from_millis(300));
        let fast = Some(Duration::from_millis(20));
        let mut f = 1.0;
        for _ in 0..3 {
            f = next_factor(f, slow, target);
        }
        assert!((f - 0.343).abs() < 1e-9, "{f}");
        for _ in 0..100 {
            f = next_factor(f, slow, target);
        }
        assert_eq!(f, MIN_FACTOR, "never stops admitting");
        assert_eq!(
            next_factor(0.5, Some(Duration::from_millis(90)), target),
            0.5
        );
        for _ in 0..20 {
            f = next_factor(f, fast, target);
        }
        assert_eq!(f, 1.0);
        assert_eq!(next_factor(0.5, None, target), 0.6);
    }

    #[test]
    fn a_target_removed_lets_the_factor_climb_back_a_step_a_second() {
        // A room that never had a target stays at 1.
        assert_eq!(adjusted_factor(1.0, None, None), 1.0);
        // From the floor: at most three times the rate from one step to
        // the next (0.05 to 0.15), never more than the status snapshots'
        // front zone allows for (twice the rate over the view's life and
        // the banked second, doubled), and 1 within ten steps.
        let mut f = MIN_FACTOR;
        let mut steps = 0;
        while f < 1.0 {
            let next = adjusted_factor(f, None, Some(Duration::from_secs(9)));
            assert!(next / f <= 3.0 + 1e-9, "{f} to {next}");
            f = next;
            steps += 1;
        }
        assert!(steps <= 10, "{steps} steps");
        // With a target, the p99 against it decides.
        let target = Some(Duration::from_millis(100));
        assert_eq!(
            adjusted_factor(1.0, target, Some(Duration::from_millis(300))),
            0.7
        );
    }
}
