//! Seat map loads per entry session: the budget that keeps one session
//! from rendering the map over and over (`--seat-map-per-minute`).

use room::RoomId;

use super::limiter::{FORGET_EVERY, SessionLimiter};
use crate::error::ApiError;

/// The seat map loads one session may make at once, above its rate.
pub const SEAT_MAP_BURST: u32 = 20;
/// The default loads a minute of one session (`--seat-map-per-minute`):
/// the seat page polls every 3 s (20 a minute, and only changed maps count).
pub const DEFAULT_SEAT_MAP_PER_MINUTE: u32 = 120;

/// Map loads per session (room and sequence number), when limited.
pub struct MapLoads {
    limiter: Option<SessionLimiter>,
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
        MapLoads {
            limiter: (per_minute > 0)
                .then(|| SessionLimiter::per_minute(per_minute, SEAT_MAP_BURST)),
        }
    }

    /// Counts one load by the session; over the limit, 429 with the wait.
    /// Every `FORGET_EVERY`, sessions back to a full allowance are
    /// forgotten, so the map holds only sessions that loaded lately.
    pub fn check(&self, room: &RoomId, seq: u64) -> Result<(), ApiError> {
        let Some(limiter) = &self.limiter else {
            return Ok(());
        };
        limiter.prune_every(FORGET_EVERY);
        limiter
            .check(room, seq)
            .map_err(|retry_after_secs| ApiError::SeatMapRateLimited { retry_after_secs })
    }

    /// Sessions the limiter remembers now.
    pub fn sessions(&self) -> usize {
        self.limiter.as_ref().map_or(0, SessionLimiter::len)
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
