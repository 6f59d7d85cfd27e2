//! Seat map loads per entry session: the budget that keeps one session
//! from rendering the map over and over (`--seat-map-per-minute`).

use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use governor::clock::Clock;
use governor::{DefaultKeyedRateLimiter, Quota};
use room::RoomId;

use crate::error::ApiError;

/// The seat map loads one session may make at once, above its rate.
pub const SEAT_MAP_BURST: u32 = 20;
/// The default loads a minute of one session (`--seat-map-per-minute`):
/// the seat page polls every 3 s (20 a minute, and only changed maps count).
pub const DEFAULT_SEAT_MAP_PER_MINUTE: u32 = 120;
/// How often sessions back to a full allowance are forgotten.
const FORGET_EVERY: Duration = Duration::from_secs(10);
/// Map loads per session (room and sequence number), when limited.
pub struct MapLoads {
    limiter: Option<DefaultKeyedRateLimiter<(RoomId, u64)>>,
    /// When sessions were last forgotten (ms since `born`).
    pruned_ms: AtomicU64,
    born: Instant,
}

impl Default for MapLoads {
    /// No limit, as [`AppState::new`](crate::state::AppState::new) has no abuse limits; the binary sets
    /// `--seat-map-per-minute` (default [`DEFAULT_SEAT_MAP_PER_MINUTE`]).
    fn default() -> Self {
        MapLoads::new(0)
    }
}

impl MapLoads {
    /// `per_minute` loads a minute per session, in bursts of
    /// [`SEAT_MAP_BURST`]; 0: no limit.
    pub fn new(per_minute: u32) -> MapLoads {
        let burst = NonZeroU32::new(SEAT_MAP_BURST).unwrap_or(NonZeroU32::MIN);
        MapLoads {
            limiter: NonZeroU32::new(per_minute).map(|rate| {
                DefaultKeyedRateLimiter::keyed(Quota::per_minute(rate).allow_burst(burst))
            }),
            pruned_ms: AtomicU64::new(0),
            born: Instant::now(),
        }
    }

    /// Counts one load by the session; over the limit, 429 with the wait.
    /// Every `FORGET_EVERY`, sessions back to a full allowance are
    /// forgotten, so the map holds only sessions that loaded lately.
    pub fn check(&self, room: &RoomId, seq: u64) -> Result<(), ApiError> {
        let Some(limiter) = &self.limiter else {
            return Ok(());
        };
        let now = u64::try_from(self.born.elapsed().as_millis()).unwrap_or(u64::MAX);
        let last = self.pruned_ms.load(Ordering::Relaxed);
        if now.saturating_sub(last) >= FORGET_EVERY.as_millis() as u64
            && self
                .pruned_ms
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            limiter.retain_recent();
            limiter.shrink_to_fit();
        }
        limiter
            .check_key(&(room.clone(), seq))
            .map_err(|not_until| {
                let wait = not_until.wait_time_from(limiter.clock().now());
                ApiError::SeatMapRateLimited {
                    retry_after_secs: wait.as_secs_f64().ceil().max(1.0) as u64,
                }
            })
    }

    /// Sessions the limiter remembers now.
    pub fn sessions(&self) -> usize {
        self.limiter.as_ref().map_or(0, |l| l.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_past_its_burst_waits() {
        let loads = MapLoads::new(60);
        let room = RoomId::parse("concert").unwrap();
        for _ in 0..SEAT_MAP_BURST {
            assert!(loads.check(&room, 7).is_ok());
        }
        match loads.check(&room, 7) {
            Err(ApiError::SeatMapRateLimited { retry_after_secs }) => {
                assert_eq!(retry_after_secs, 1)
            }
            other => panic!("{other:?}"),
        }
        // Another session, or the same number in another room, is its own.
        assert!(loads.check(&room, 8).is_ok());
        assert!(loads.check(&RoomId::parse("other").unwrap(), 7).is_ok());
        assert!(MapLoads::new(0).check(&room, 7).is_ok());
        assert_eq!(loads.sessions(), 3);
    }
}
