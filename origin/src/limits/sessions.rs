//! Per-session limits: how often one admission (a room and the sequence
//! number its entry token names) may do one kind of thing. Booking writes
//! (holds, releases, confirms) are limited so that one admission cannot
//! queue thousands of write transactions or leave thousands of rows; the
//! numbers sit far above what a person buying tickets does.
//!
//! Sessions whose allowance is full again are forgotten every
//! [`FORGET_EVERY`] ([`SessionLimits::housekeeping`]).

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::limiter::{FORGET_EVERY, SessionLimiter};
use crate::error::ApiError;
use room::RoomId;

/// Booking writes one session may make at once.
pub const BOOKING_WRITE_BURST: u32 = 20;
/// Booking writes one session may make per minute once its burst is spent
/// (one a second).
pub const BOOKING_WRITES_PER_MINUTE: u32 = 60;

/// What a session does, each kind with its own allowance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionAction {
    /// A hold, a release or a confirm.
    BookingWrite,
}

/// The allowance of every session, per kind of action.
pub struct SessionLimits {
    booking_writes: SessionLimiter,
}

impl Default for SessionLimits {
    fn default() -> Self {
        SessionLimits::new(BOOKING_WRITE_BURST, BOOKING_WRITES_PER_MINUTE)
    }
}

impl std::fmt::Debug for SessionLimits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionLimits")
            .field("sessions", &self.booking_writes.len())
            .finish()
    }
}

impl SessionLimits {
    /// Booking writes: `burst` at once, then `per_minute` (both at least 1).
    pub fn new(burst: u32, per_minute: u32) -> SessionLimits {
        SessionLimits {
            booking_writes: SessionLimiter::per_minute(per_minute, burst),
        }
    }

    /// Counts one `action` of the session `(room, seq)`; over its allowance,
    /// 429 `rate_limited` with the seconds to wait.
    pub fn check(&self, action: SessionAction, room: &RoomId, seq: u64) -> Result<(), ApiError> {
        let limiter = match action {
            SessionAction::BookingWrite => &self.booking_writes,
        };
        limiter.check(room, seq).map_err(|retry_after_secs| {
            metrics::counter!(crate::metric_names::SESSION_RATE_LIMITED).increment(1);
            ApiError::SessionRateLimited { retry_after_secs }
        })
    }

    /// Forgets the sessions whose allowance is full again.
    pub fn prune(&self) {
        self.booking_writes.prune();
    }

    /// Sessions remembered now.
    pub fn len(&self) -> usize {
        self.booking_writes.len()
    }

    /// Whether no session is remembered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Prunes every few seconds until `cancel` fires.
    pub async fn housekeeping(self: Arc<Self>, cancel: CancellationToken) {
        loop {
            tokio::select! {
                () = cancel.cancelled() => break,
                () = tokio::time::sleep(FORGET_EVERY) => {}
            }
            self.prune();
            tracing::debug!(sessions = self.len(), "session limiter pruned");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_gets_its_burst_then_waits_and_others_are_apart() {
        let limits = SessionLimits::new(3, 60);
        let room = RoomId::parse("concert").unwrap();
        let other = RoomId::parse("opera").unwrap();
        for _ in 0..3 {
            limits.check(SessionAction::BookingWrite, &room, 1).unwrap();
        }
        match limits.check(SessionAction::BookingWrite, &room, 1) {
            Err(ApiError::SessionRateLimited { retry_after_secs }) => {
                assert_eq!(retry_after_secs, 1)
            }
            other => panic!("{other:?}"),
        }
        // Another session, or the same number in another room, is apart.
        limits.check(SessionAction::BookingWrite, &room, 2).unwrap();
        limits
            .check(SessionAction::BookingWrite, &other, 1)
            .unwrap();
        assert_eq!(limits.len(), 3);
    }
}
