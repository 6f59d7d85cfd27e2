//! How often a client should poll and how long it will wait: pure functions
//! of what the store reported.
//!
//! The wait is read off the admission schedule the last tick summed up
//! ([`Schedule`]): admissions are bounded both by the rate (a token bucket)
//! and by slots coming free, which happens when the sessions inside end (their
//! ends are known, in eighths of the session length), sooner for those who
//! leave early (at the measured early-leave rate, taken as constant over a
//! session's life), and again for each visitor let in, one (shortened)
//! session later. [`turn_ms`] plays that forward over two session lengths
//! on a grid of 1/32 of one, then repeats its last session length, which is
//! where a long line spends its time. It does not know what nobody has
//! measured yet: before anyone has left early, sessions run their full
//! length; a sudden mass of abandons ahead, or an operator's change, shows
//! only from the tick after.
//!
//! Polling is load in itself: a million waiters polling every second is a
//! million requests a second. So the interval grows with the expected wait
//! (far back: rarely; near the front: often), and always stays under a third
//! of the abandon time, so a client that polls as told is never dropped as
//! abandoned.

use crate::store::{END_BUCKETS, LineView, Schedule, SeatsLeft, Standing};

/// Shortest interval: near the front, once a second.
pub const MIN_POLL_MS: u64 = 1_000;
/// Longest interval, however far back.
pub const MAX_POLL_MS: u64 = 60_000;
/// Share of the expected wait between two polls: a waiter polls about this
/// many times before its turn (more near the front, where the floor rules).
const POLLS_PER_WAIT: u64 = 10;

/// The longest interval the room's abandon time allows.
fn ceiling(abandon_ms: u64) -> u64 {
    (abandon_ms / 3).clamp(MIN_POLL_MS, MAX_POLL_MS)
}

/// Grid steps per session length in [`turn_ms`].
const STEPS: usize = 32;
/// How far [`turn_ms`] plays the schedule step by step, in session lengths
/// (the first is the sessions inside now, the second its turnover).
const HORIZON: usize = 2 * STEPS;
/// Slack for sums of fractional visitors.
const EPS: f64 = 1e-9;

/// Milliseconds after `s.at_ms` at which the visitor `position` places from
/// the front is let in, by the schedule; `None` when nobody ever is (no
/// rate, no capacity). The sums are expectations: fractions of visitors
/// leave early and are let in, so a place's turn is when the expected count
/// let in reaches it.
#[allow(
    clippy::indexing_slicing,
    reason = "indices run over the loops' own ranges, within the vectors' fixed lengths"
)]
pub fn turn_ms(s: &Schedule, position: u64) -> Option<f64> {
    let rate = s.rate / 1000.0;
    if rate.is_nan() || rate <= 0.0 || s.capacity == 0 {
        return None;
    }
    let dt = s.session_ms.max(1) as f64 / STEPS as f64;
    // Early leaves per session and ms; a session that has not left by its
    // end ends then.
    let hazard = if s.inside > 0.0 {
        s.leaves / s.inside / 1000.0
    } else {
        0.0
    };
    let alive: Vec<f64> = (0..=STEPS)
        .map(|d| (-hazard * dt * d as f64).exp())
        .collect();
    // frees[i]: slots that come free during step i - 1, usable from step i.
    let mut frees = vec![0.0; HORIZON + STEPS + 1];
    let spread = |frees: &mut [f64], from: usize, n: f64, steps: usize| {
        for d in 1..=steps {
            frees[from + d] += n * (alive[d - 1] - alive[d]);
        }
        frees[from + steps] += n * alive[steps];
    };
    frees[0] = s.free as f64;
    for (j, &n) in s.ends.iter().enumerate() {
        spread(&mut frees, 0, n as f64, (j + 1) * STEPS / END_BUCKETS);
    }

    let need = position as f64;
    let burst = s.rate.max(1.0);
    let (mut slots, mut allow, mut done) = (0.0, s.allow, 0.0);
    // Within a step the budget in hand goes at once, then `rate` per ms.
    let within = |need: f64, done: f64, allow: f64| (need - done - allow).max(0.0) / rate;
    // (let in before the step, budget at its start, let in during it)
    let mut steps = Vec::with_capacity(HORIZON);
    for i in 0..HORIZON {
        slots += frees[i];
        let can = allow + rate * dt;
        let k = slots.min(can).max(0.0);
        if need <= done + k + EPS {
            return Some(i as f64 * dt + within(need, done, allow));
        }
        steps.push((done, allow, k));
        done += k;
        slots -= k;
        allow = (can - k).min(burst);
        spread(&mut frees, i, k, STEPS);
    }

    // Further back, the last session length repeats: every `period` (the
    // mean time a slot is held) lets in as many as the rate or the capacity
    // allow, whichever is fewer.
    let period = dt * alive[..STEPS].iter().sum::<f64>();
    let per_period = (rate * period).min(s.capacity as f64);
    let periods = ((need - done) / per_period).ceil();
    let target = need - periods * per_period;
    let at = steps
        .iter()
        .position(|&(before, _, k)| target <= before + k + EPS)
        .map_or(HORIZON as f64 * dt, |i| {
            let (before, allow, _) = steps[i];
            i as f64 * dt + within(target, before, allow)
        });
    Some(at + periods * period)
}

/// Seconds until `ahead` more visitors are let in, by the last tick's
/// schedule (before the room's first tick, at the configured rate); `None`
/// when nobody can tell (paused, closed, no seat to sell, no rate).
fn wait_seconds(ahead: u64, line: &LineView) -> Option<u64> {
    if line.state != room::RoomState::Open || line.sale.seats != SeatsLeft::Available {
        return None;
    }
    let ms = match &line.schedule {
        Some(s) => turn_ms(s, ahead)? - line.now_ms.saturating_sub(s.at_ms) as f64,
        None if line.admit_rate >= 1e-6 => ahead as f64 * 1000.0 / line.admit_rate,
        None => return None,
    };
    Some((ms / 1000.0).ceil().max(1.0) as u64)
}

/// Seconds until a visitor at `position` is let in, by the schedule;
/// `None` when nobody can tell (pre-queue, lottery, paused, no seat to
/// sell, no rate).
pub fn eta_seconds(standing: Standing, line: &LineView) -> Option<u64> {
    match standing {
        Standing::Waiting {
            position: Some(position),
        } => wait_seconds(position, line),
        _ => None,
    }
}

/// How long the client should wait before its next status request.
pub fn poll_after_ms(standing: Standing, line: &LineView) -> u64 {
    let top = ceiling(line.abandon_ms);
    match standing {
        Standing::Waiting { position } => {
            let expected_ms = if line.before_opening() {
                // Pre-queue: poll again at the opening, not before it is
                // useful; the cap keeps the client from being dropped.
                line.opens_at_ms
                    .map_or(0, |at| at.saturating_sub(line.now_ms))
                    .saturating_mul(POLLS_PER_WAIT)
            } else {
                // A lottery has no places: pace by the length of the line.
                let ahead = position.unwrap_or(line.waiting);
                // No estimate (paused, no seat, nothing measured): poll at the cap.
                wait_seconds(ahead, line).map_or(u64::MAX, |s| s.saturating_mul(1000))
            };
            (expected_ms / POLLS_PER_WAIT).clamp(MIN_POLL_MS, top)
        }
        // Nothing will change soon for these; the client mostly stops polling.
        Standing::Admitted { .. } | Standing::Gone | Standing::Closed | Standing::SoldOut => top,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::SaleSignal;
    use room::RoomState;

    fn line(rate: f64) -> LineView {
        LineView {
            state: RoomState::Open,
            opens_at_ms: None,
            waiting: 1_000_000,
            admit_rate: rate,
            abandon_ms: 60_000,
            sale: SaleSignal::AVAILABLE,
            now_ms: 1_000_000,
            schedule: None,
        }
    }

    /// A room just after a tick at 1_000_000 that filled it: `inside`
    /// sessions that all end one session length from now, no budget left.
    fn full(capacity: u64, rate: f64, session_ms: u64, inside: u64) -> Schedule {
        let mut ends = [0; END_BUCKETS];
        ends[END_BUCKETS - 1] = inside;
        Schedule {
            at_ms: 1_000_000,
            rate,
            allow: 0.0,
            capacity,
            session_ms,
            free: capacity - inside,
            ends,
            leaves: 0.0,
            inside: 0.0,
        }
    }

    fn close(got: Option<f64>, want: f64, within: f64) {
        let got = got.expect("an estimate");
        assert!(
            (got - want).abs() <= within,
            "got {got}, want {want} ± {within}"
        );
    }

    #[test]
    fn capacity_bound_turns_come_with_the_sessions_ending() {
        // Capacity 20, 20/s, sessions 5 s: 20 in every 5 s, not 20 a second.
        let s = full(20, 20.0, 5_000, 20);
        assert_eq!(turn_ms(&s, 1), Some(5_000.0));
        assert_eq!(turn_ms(&s, 20), Some(5_000.0));
        assert_eq!(turn_ms(&s, 21), Some(10_000.0));
        assert_eq!(turn_ms(&s, 41), Some(15_000.0));
        assert_eq!(turn_ms(&s, 280), Some(70_000.0));
        assert_eq!(turn_ms(&s, 2_000), Some(500_000.0));
        // Sessions ending sooner (a tick mid-cycle) bring every turn forward.
        let mut mid = s;
        mid.ends = [0, 0, 0, 20, 0, 0, 0, 0];
        assert_eq!(turn_ms(&mid, 20), Some(2_500.0));
        assert_eq!(turn_ms(&mid, 21), Some(7_500.0));
    }

    #[test]
    fn rate_bound_turns_come_at_the_rate() {
        // Capacity 100,000, 10/s, sessions 1 h: the slots never run out.
        let s = full(100_000, 10.0, 3_600_000, 10);
        assert_eq!(turn_ms(&s, 1), Some(100.0));
        assert_eq!(turn_ms(&s, 400), Some(40_000.0));
        close(turn_ms(&s, 1_000_000), 100_000_000.0, 1.0);
        // The budget in hand goes first.
        let banked = Schedule { allow: 10.0, ..s };
        assert_eq!(turn_ms(&banked, 10), Some(0.0));
        assert_eq!(turn_ms(&banked, 410), Some(40_000.0));
    }

    #[test]
    fn both_bounds_the_slots_then_the_rate() {
        // Capacity 10, 4/s, sessions 5 s: at 5 s ten slots free; the budget
        // (one second's worth, 4) goes at once, the rest at 4/s.
        let s = full(10, 4.0, 5_000, 10);
        let s = Schedule { allow: 4.0, ..s };
        assert_eq!(turn_ms(&s, 4), Some(5_000.0));
        close(turn_ms(&s, 8), 6_000.0, 1e-6);
        close(turn_ms(&s, 10), 6_500.0, 1e-6);
        // Those slots free again from 10 s on, in the order they were taken.
        close(turn_ms(&s, 14), 10_000.0, 1e-6);
        close(turn_ms(&s, 20), 11_500.0, 160.0);
        // Further back, 10 every 5 s: capacity, not the rate, sets the pace.
        close(turn_ms(&s, 1_004), 505_000.0, 160.0);
    }

    #[test]
    fn early_leavers_free_their_slots_sooner() {
        // Capacity 20, 20/s, sessions 10 s; one in five leaves each second.
        let nominal = full(20, 20.0, 10_000, 20);
        let s = Schedule {
            leaves: 4.0,
            inside: 20.0,
            ..nominal
        };
        let hazard: f64 = 0.2;
        // Turns come sooner than nominal ones, at once (those inside leave too).
        assert!(turn_ms(&s, 1).unwrap() < 1_000.0, "{:?}", turn_ms(&s, 1));
        assert_eq!(turn_ms(&nominal, 1), Some(10_000.0));
        // Far back, each slot turns over in the mean time a session lasts,
        // (1 - e^(-hS)) / h rather than S (to within the grid).
        let held = (1.0 - (-hazard * 10.0).exp()) / hazard * 1000.0;
        let far = turn_ms(&s, 20_000).unwrap();
        let want = 20_000.0 / 20.0 * held;
        assert!((far / want - 1.0).abs() < 0.04, "{far} vs {want}");
        close(turn_ms(&nominal, 20_000), 10_000_000.0, 1e-6);
    }

    #[test]
    fn the_eta_counts_from_the_tick_and_keeps_its_nulls() {
        let mut l = line(10.0);
        l.schedule = Some(full(20, 20.0, 5_000, 20));
        assert_eq!(eta_seconds(waiting(21), &l), Some(10));
        l.now_ms += 3_000;
        assert_eq!(eta_seconds(waiting(21), &l), Some(7));
        l.now_ms += 20_000;
        assert_eq!(
            eta_seconds(waiting(21), &l),
            Some(1),
            "late: next, not past"
        );
        for state in [RoomState::Paused, RoomState::Closed] {
            let off = LineView { state, ..l };
            assert_eq!(eta_seconds(waiting(21), &off), None);
        }
        let pre = Standing::Waiting { position: None };
        assert_eq!(eta_seconds(pre, &l), None);
    }

    fn waiting(position: u64) -> Standing {
        Standing::Waiting {
            position: Some(position),
        }
    }

    #[test]
    fn eta_from_the_achieved_rate() {
        assert_eq!(eta_seconds(waiting(100), &line(10.0)), Some(10));
        assert_eq!(eta_seconds(waiting(1), &line(10.0)), Some(1));
        assert_eq!(eta_seconds(waiting(100), &line(0.0)), None);
        let paused = LineView {
            state: RoomState::Paused,
            ..line(10.0)
        };
        assert_eq!(eta_seconds(waiting(100), &paused), None);
        let no_seats = LineView {
            sale: SaleSignal {
                seats: SeatsLeft::NoneAvailable,
                rate_factor: 1.0,
            },
            ..line(10.0)
        };
        assert_eq!(eta_seconds(waiting(100), &no_seats), None);
    }

    #[test]
    fn poll_interval_grows_with_distance_and_stays_under_the_abandon_time() {
        let l = line(10.0);
        let near = poll_after_ms(waiting(1), &l);
        let mid = poll_after_ms(waiting(1_000), &l);
        let far = poll_after_ms(waiting(1_000_000), &l);
        assert_eq!(near, MIN_POLL_MS);
        assert!(near < mid && mid <= far, "{near} {mid} {far}");
        assert!(far <= l.abandon_ms / 3);
        let short = LineView {
            abandon_ms: 3_000,
            ..l
        };
        assert_eq!(poll_after_ms(waiting(1_000_000), &short), 1_000);
    }

    #[test]
    fn a_lottery_paces_by_the_length_of_the_line() {
        let l = line(10.0);
        let lottery = Standing::Waiting { position: None };
        assert_eq!(poll_after_ms(lottery, &l), 20_000);
        assert_eq!(eta_seconds(lottery, &l), None);
    }

    #[test]
    fn prequeue_polls_near_the_opening() {
        let mut l = line(10.0);
        l.opens_at_ms = Some(l.now_ms + 5_000);
        let pre = Standing::Waiting { position: None };
        assert_eq!(poll_after_ms(pre, &l), 5_000);
        l.opens_at_ms = Some(l.now_ms + 3_600_000);
        assert_eq!(poll_after_ms(pre, &l), 20_000);
        l.opens_at_ms = Some(l.now_ms + 10);
        assert_eq!(poll_after_ms(pre, &l), MIN_POLL_MS);
    }
}
