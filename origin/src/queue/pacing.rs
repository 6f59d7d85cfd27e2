//! How often a client should poll and how long it will wait: pure functions
//! of what the store reported.
//!
//! Polling is load in itself: a million waiters polling every second is a
//! million requests a second. So the interval grows with the expected wait
//! (far back: rarely; near the front: often), and always stays under a third
//! of the abandon time, so a client that polls as told is never dropped as
//! abandoned.

use super::{LineView, SeatsLeft, Standing};

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

/// Seconds until `ahead` more visitors are let in at the achieved rate;
/// `None` when nobody can tell (paused, closed, no seat to sell, no rate
/// measured).
fn wait_seconds(ahead: u64, line: &LineView) -> Option<u64> {
    if line.state != crate::room::RoomState::Open
        || line.sale.seats != SeatsLeft::Available
        || line.admit_rate < 1e-6
    {
        return None;
    }
    Some((ahead as f64 / line.admit_rate).ceil() as u64)
}

/// Seconds until a visitor at `position` is let in at the achieved rate;
/// `None` when nobody can tell (pre-queue, lottery, paused, no seat to
/// sell, no rate measured).
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
    use crate::queue::SaleSignal;
    use crate::room::RoomState;

    fn line(rate: f64) -> LineView {
        LineView {
            state: RoomState::Open,
            opens_at_ms: None,
            waiting: 1_000_000,
            admit_rate: rate,
            abandon_ms: 60_000,
            sale: SaleSignal::AVAILABLE,
            now_ms: 1_000_000,
        }
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
