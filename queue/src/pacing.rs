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
//! where a long line spends its time. A sudden mass of abandons ahead, or an
//! operator's change, shows only from the tick after.
//!
//! How long admitted visitors stay is what the schedule knows least at an
//! opening: the room's measure of it is carried across a pause, but a room
//! that never let anyone in has seen nothing, and a few seconds of a few
//! sessions say little (people who book in seconds and sessions that run
//! their full length look alike in the first second). So the wait is played
//! at the early-leave rates the measure cannot rule out, the lowest and the
//! highest ([`hazards`]); where they disagree by more than [`SPREAD`] (or,
//! once the room has been watched a whole window of its measure, where
//! either lies further than `FULL_SPREAD` from the estimate) the status
//! says no ETA rather than a confident wrong one, and the client
//! polls by the soonest turn, so the first number it shows is an honest one.
//! A place the capacity cannot hold back (a rate-bound room, or the front of
//! the line) gets its ETA at once, whatever the stays.
//!
//! Polling is load in itself: a million waiters polling every second is a
//! million requests a second. So the interval grows with the expected wait
//! (far back: rarely; near the front: often), and always stays under a third
//! of the abandon time, so a client that polls as told is never dropped as
//! abandoned.

use crate::store::{END_BUCKETS, LineView, Schedule, SeatsLeft, Standing, turnover_window_ms};

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
/// Mean stays the grid of [`turn_at`] spans at most: all but e⁻⁴ (2 %) of
/// sessions have ended by then.
const STAYS: f64 = 4.0;
/// Slack for sums of fractional visitors.
const EPS: f64 = 1e-9;

/// How many standard deviations of the early leaves counted [`hazards`]
/// allows either way.
const Z: f64 = 1.5;
/// Most a wait may be longer at the lowest early-leave rate than at the
/// highest for an ETA to be shown (until the room has been watched a whole
/// window: then `FULL_SPREAD` too): the estimate is then within about an
/// eighth of either end. (At 1.5, with few stays seen, a tenth of the first
/// promises in the ETA bench's early-leavers room ran half wrong.)
pub const SPREAD: f64 = 1.25;
/// Seconds of spread always allowed: near the front a few seconds either
/// way are no promise broken.
const SPREAD_SLACK_MS: f64 = 5_000.0;
/// Once a room has been watched for a whole window of its measure, all
/// that is left unknown of the stays is the noise of how few ended early
/// in it: a wait is then also shown where the waits at either end (at
/// [`Z`] standard errors of the rate) lie within this share of the
/// estimate. A room with five inside sees a few dozen early ends a window,
/// whose ends differ by 1.6 to 2 times: under [`SPREAD`] alone it never
/// shows a number. (ETA bench, small room: first promises p90 ≤ 24 %.)
const FULL_SPREAD: f64 = 0.4;

/// The rates (per session and second) at which a session ends early that
/// the room's measure allows: (lowest, best, highest). The measure weighs
/// `inside × window` session-seconds in which `leaves × window` sessions
/// ended early; with `k` of them, the rate is `k` per that exposure, give
/// or take `Z`·√(k + 1) of them (one more above: none seen is not none
/// to come). Nothing seen at all: anything from none to all at once.
pub fn hazards(s: &Schedule) -> (f64, f64, f64) {
    let window = turnover_window_ms(s.session_ms) as f64 / 1000.0;
    let exposure = s.inside.max(0.0) * window;
    let left = s.leaves.max(0.0) * window;
    if exposure.is_nan() || left.is_nan() || exposure < 1e-9 {
        return (0.0, 0.0, f64::INFINITY);
    }
    let give = Z * (left + 1.0).sqrt();
    (
        (left - give).max(0.0) / exposure,
        left / exposure,
        (left + give + 1.0) / exposure,
    )
}

/// Milliseconds after `s.at_ms` at which the visitor `position` places from
/// the front is let in, by the schedule at the measured early-leave rate;
/// `None` when nobody ever is (no rate, no capacity).
pub fn turn_ms(s: &Schedule, position: u64) -> Option<f64> {
    turn_at(s, position, hazards(s).1)
}

/// [`turn_ms`] at `hazard` early leaves per session and second (infinite:
/// every session ends as soon as it starts). The sums are expectations:
/// fractions of visitors leave early and are let in, so a place's turn is
/// when the expected count let in reaches it.
pub fn turn_at(s: &Schedule, position: u64, hazard: f64) -> Option<f64> {
    turn_within(s, position, hazard, f64::INFINITY)
}

/// [`turn_at`] with sessions ending early at `hazard` only in their first
/// `until_ms`: one that lasts longer runs its full length (what a room
/// that has watched its sessions only so long cannot rule out).
#[allow(
    clippy::indexing_slicing,
    reason = "indices run over the loops' own ranges, within the vectors' fixed lengths"
)]
pub fn turn_within(s: &Schedule, position: u64, hazard: f64, until_ms: f64) -> Option<f64> {
    let rate = s.rate / 1000.0;
    if rate.is_nan() || rate <= 0.0 || s.capacity == 0 {
        return None;
    }
    // The grid spans a session length, or [`STAYS`] mean stays when
    // sessions end much sooner than their length (a slot comes free at the
    // step after its session ends, so a step must be short beside a stay);
    // the few still inside at its end are taken to end there.
    let session = s.session_ms.max(1) as f64;
    let hazard = hazard.max(0.0) / 1000.0;
    let span = if until_ms < STAYS / hazard {
        session
    } else {
        (STAYS / hazard).clamp(session.min(1000.0), session)
    };
    let dt = span / STEPS as f64;
    // Early leaves per session and ms; a session that has not left by its
    // end ends then. Past 40 per step, nothing of a session is left after
    // the first step (and infinity times a zero step is no number).
    let hazard = hazard.min(40.0 / dt);
    // alive[d]: the share of sessions not yet ended early when step d
    // begins, read half a step on: a slot freed within a step is usable
    // only from the next, and the half step makes up that wait on average
    // (else each turnover of a slot comes half a step late).
    let alive: Vec<f64> = (0..=STEPS)
        .map(|d| {
            let age = if d == 0 { 0.0 } else { (d as f64 + 0.5) * dt };
            (-hazard * age.min(until_ms)).exp()
        })
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
        let end = session * (j + 1) as f64 / END_BUCKETS as f64;
        spread(
            &mut frees,
            0,
            n as f64,
            ((end / dt).round() as usize).clamp(1, STEPS),
        );
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

/// A wait, in milliseconds from now: the soonest the room's measure
/// allows, and the estimate when the measure is sure enough of it.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Wait {
    soonest_ms: f64,
    estimate_ms: Option<f64>,
}

/// Milliseconds until `ahead` more visitors are let in, by the last tick's
/// schedule (before the room's first tick, at the achieved rate); `None`
/// when nobody can tell (paused, closed, no seat to sell, no rate).
fn wait_ms(ahead: u64, line: &LineView) -> Option<Wait> {
    if line.state != room::RoomState::Open || line.sale.seats != SeatsLeft::Available {
        return None;
    }
    let Some(s) = &line.schedule else {
        if line.admit_rate < 1e-6 {
            return None;
        }
        let ms = ahead as f64 * 1000.0 / line.admit_rate;
        return Some(Wait {
            soonest_ms: ms,
            estimate_ms: Some(ms),
        });
    };
    let since = line.now_ms.saturating_sub(s.at_ms) as f64;
    let (low, best, high) = hazards(s);
    // Sessions ending sooner let the line in sooner; at the latest, those
    // who stay longer than anyone has been watched run their length.
    let soonest_ms = turn_at(s, ahead, high)? - since;
    let latest_ms = turn_within(s, ahead, low, s.watched_ms as f64)? - since;
    if latest_ms - soonest_ms < 1.0 {
        // The stays do not matter here (a rate-bound turn).
        return Some(Wait {
            soonest_ms,
            estimate_ms: Some(soonest_ms),
        });
    }
    let best_ms = turn_at(s, ahead, best)? - since;
    let within = |ms: f64| ms <= best_ms.max(0.0) * FULL_SPREAD + SPREAD_SLACK_MS;
    let sure = latest_ms <= soonest_ms.max(0.0) * SPREAD + SPREAD_SLACK_MS
        || (high.is_finite()
            && s.watched_ms >= turnover_window_ms(s.session_ms)
            && within(latest_ms - best_ms)
            && within(best_ms - soonest_ms));
    Some(Wait {
        soonest_ms,
        estimate_ms: sure.then_some(best_ms),
    })
}

/// Whole seconds, at least 1 (a late turn is next, not past).
fn seconds(ms: f64) -> u64 {
    (ms / 1000.0).ceil().max(1.0) as u64
}

/// Seconds until a visitor at `position` is let in, by the schedule;
/// `None` when nobody can tell (pre-queue, lottery, paused, no seat to
/// sell, no rate), or not yet: how long admitted visitors stay is too
/// little known for this place's turn (see the module's notes).
pub fn eta_seconds(standing: Standing, line: &LineView) -> Option<u64> {
    match standing {
        Standing::Waiting {
            position: Some(position),
        } => wait_ms(position, line)?.estimate_ms.map(seconds),
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
                // A waiter whose ETA is not known yet paces by the soonest
                // turn the stays allow, so it asks again as soon as it may
                // be. No estimate at all (paused, no seat): poll at the cap.
                wait_ms(ahead, line).map_or(u64::MAX, |w| {
                    seconds(w.estimate_ms.unwrap_or(w.soonest_ms)).saturating_mul(1000)
                })
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
            watched_ms: u64::MAX,
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

    /// `s` after a window's worth of its sessions inside, none of them
    /// ending early: 20 x 30 = 600 session-seconds seen.
    fn seen(s: Schedule) -> Schedule {
        Schedule {
            inside: s.capacity as f64,
            ..s
        }
    }

    #[test]
    fn the_eta_counts_from_the_tick_and_keeps_its_nulls() {
        let mut l = line(10.0);
        l.schedule = Some(seen(full(20, 20.0, 5_000, 20)));
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

    #[test]
    fn the_measure_says_how_sure_the_early_leave_rate_is() {
        let s = full(20, 20.0, 5_000, 20);
        assert_eq!(hazards(&s), (0.0, 0.0, f64::INFINITY), "nothing seen");
        // 600 session-seconds (20 inside over the 30 s window), none left
        // early: none, give or take 1.5 + 1 per 600 s.
        let (low, best, high) = hazards(&seen(s));
        assert_eq!((low, best), (0.0, 0.0));
        close(Some(high), 2.5 / 600.0, 1e-12);
        // 8 inside on average and 4 a second ending early: over the 30 s
        // window, 240 session-seconds and 120 early ends.
        let busy = Schedule {
            inside: 8.0,
            leaves: 4.0,
            ..s
        };
        let (low, best, high) = hazards(&busy);
        let give = 1.5 * 121f64.sqrt();
        close(Some(best), 0.5, 1e-12);
        close(Some(low), (120.0 - give) / 240.0, 1e-12);
        close(Some(high), (120.0 + give + 1.0) / 240.0, 1e-12);
        // A long session widens the window to its length: 10 min sessions
        // weigh 20 x 600 s.
        let long = seen(full(20, 20.0, 600_000, 20));
        close(Some(hazards(&long).2), 2.5 / 12_000.0, 1e-12);
    }

    #[test]
    fn nothing_seen_yet_says_no_eta_where_the_stays_decide() {
        // The opening of a room that never let anyone in: capacity 20,
        // 20/s, 5 s sessions, just filled. Sessions that run their length
        // put the 300th at 70 s, sessions ending at once at 15 s.
        let mut l = line(20.0);
        l.schedule = Some(full(20, 20.0, 5_000, 20));
        assert_eq!(eta_seconds(waiting(300), &l), None, "no confident guess");
        // ... and it asks again by the soonest turn, not at the cap.
        assert_eq!(poll_after_ms(waiting(300), &l), 1_500);
        // Places the capacity cannot hold back get their ETA at once: the
        // front, and every place of a rate-bound room.
        let front = Schedule {
            free: 20,
            ends: [0; END_BUCKETS],
            allow: 0.0,
            ..full(20, 20.0, 5_000, 20)
        };
        l.schedule = Some(front);
        assert_eq!(eta_seconds(waiting(10), &l), Some(1));
        l.schedule = Some(full(100_000, 10.0, 3_600_000, 10));
        assert_eq!(eta_seconds(waiting(400), &l), Some(40));

        // The same room a clock's moments later: 20 inside since the
        // opening, nobody left early. At 0.2 s (4 session-seconds seen)
        // the stays may be anything from 1.5 s to 5; at 1 s (20 seen),
        // from 3.7 s: close enough to say the sessions' full length.
        let at = |secs: f64| Schedule {
            at_ms: 1_000_000 + (secs * 1000.0) as u64,
            inside: 20.0 * (1.0 - (-secs / 30.0).exp()),
            watched_ms: (secs * 1000.0) as u64,
            ends: [0, 0, 0, 0, 0, 0, 20, 0],
            ..full(20, 20.0, 5_000, 20)
        };
        l.now_ms = 1_000_200;
        l.schedule = Some(Schedule {
            ends: [0, 0, 0, 0, 0, 0, 0, 20],
            ..at(0.2)
        });
        assert_eq!(eta_seconds(waiting(300), &l), None);
        l.now_ms = 1_001_000;
        l.schedule = Some(at(1.0));
        // Those inside end by 4.375 s (their eighth), then 20 every 5 s.
        assert_eq!(eta_seconds(waiting(300), &l), Some(75));
        l.now_ms = 1_004_000;
        l.schedule = Some(Schedule {
            ends: [0, 20, 0, 0, 0, 0, 0, 0],
            ..at(4.0)
        });
        // Turns when those inside end (by 1.25 s, the second eighth of a
        // session), then every 5 s: the 300th in the 15th batch.
        assert_eq!(eta_seconds(waiting(300), &l), Some(72));
        assert_eq!(eta_seconds(waiting(21), &l), Some(7));
    }

    #[test]
    fn a_carried_measure_gives_the_eta_at_once() {
        // People who book in seconds: a minute's sessions, a third of
        // those inside ending early each second, measured before a pause
        // (8 inside, 8/3 leaving a second over a 60 s window: 480
        // session-seconds, 160 early ends). At the resume the turnover is
        // every 3 s or so, not every 60 s.
        let s = Schedule {
            inside: 8.0,
            leaves: 8.0 / 3.0,
            ..full(20, 20.0, 60_000, 0)
        };
        let mut l = line(20.0);
        l.schedule = Some(s);
        let eta = eta_seconds(waiting(300), &l).expect("known from the room's history");
        // 20 at once, then 20 every mean stay, (1 - e^(-20)) x 3 s.
        let want = 14.0 * 3.0;
        assert!((eta as f64 / want - 1.0).abs() < 0.1, "{eta} vs {want}");
        // Sessions run to their length would say 14 minutes.
        assert!(turn_at(&s, 300, 0.0).unwrap() > 800_000.0);
        // The same measure taken over the first 4 s of a room's life only:
        // nobody seen stayed longer, and a third of them may stay the
        // minute out. No number yet.
        let young = Schedule {
            watched_ms: 4_000,
            ..s
        };
        l.schedule = Some(young);
        assert_eq!(eta_seconds(waiting(300), &l), None);
        // ... by 20 s watched, hardly anyone could: the same ETA.
        l.schedule = Some(Schedule {
            watched_ms: 20_000,
            ..s
        });
        assert_eq!(eta_seconds(waiting(300), &l), Some(eta));
    }

    #[test]
    fn a_small_room_watched_a_whole_window_shows_its_eta() {
        // Five inside, a minute's sessions, one ending early every 2 s (a
        // mean stay of 10 s) over the 60 s window: 30 early ends in 300
        // session-seconds, rates from 0.07 to 0.13 a second, whose waits
        // differ by about 1.8 times.
        let s = Schedule {
            inside: 5.0,
            leaves: 0.5,
            watched_ms: 60_000,
            ..full(5, 5.0, 60_000, 5)
        };
        let (low, _, high) = hazards(&s);
        assert!(high / low > 1.8, "{low} {high}");
        let mut l = line(5.0);
        l.schedule = Some(s);
        // Five let in about every mean stay: the 50th in about 100 s.
        let eta = eta_seconds(waiting(50), &l).expect("a whole window watched");
        assert!((eta as f64 / 100.0 - 1.0).abs() < 0.2, "{eta}");
        // Watched for less than the window, only SPREAD judges, and the
        // ends are too far apart for it: no number.
        l.schedule = Some(Schedule {
            watched_ms: 59_000,
            ..s
        });
        assert_eq!(eta_seconds(waiting(50), &l), None);
        // Watched long, but hardly anything seen end (3 early ends): none.
        l.schedule = Some(Schedule {
            inside: 0.5,
            leaves: 0.05,
            ..s
        });
        assert_eq!(eta_seconds(waiting(50), &l), None);
        // None seen end early at all: the estimate is the sessions' full
        // minute, and the highest rate the measure allows would end them
        // after 47 s on average: close enough, ten turns of a minute.
        l.schedule = Some(Schedule { leaves: 0.0, ..s });
        assert_eq!(eta_seconds(waiting(50), &l), Some(600));
        // One inside, 5 min sessions, none seen leave early in a whole
        // window: the estimate (the full 300 s a turn) sits at the slow end.
        l.schedule = Some(Schedule {
            inside: 1.0,
            leaves: 0.0,
            watched_ms: 300_000,
            ..full(1, 5.0, 300_000, 1)
        });
        assert_eq!(eta_seconds(waiting(8), &l), None);
    }
}
