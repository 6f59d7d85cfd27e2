//! The one limiter behind every per-session allowance: a `governor` rate
//! limiter keyed by session (a room and the sequence number its entry
//! token names), with its quota, its wait rounding and its pruning here.
//!
//! Keys come from verified entry tokens only, and sessions whose allowance
//! is full again are forgotten when their owner prunes (on a timer, every
//! [`FORGET_EVERY`] inline, or on the sale loop's pass), so memory follows
//! the sessions active lately. Each instance counts on its own (the edge
//! may spread one session over several).

use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use governor::clock::Clock;
use governor::{DefaultKeyedRateLimiter, Quota};

use room::RoomId;

/// How often sessions back to a full allowance are forgotten.
pub const FORGET_EVERY: Duration = Duration::from_secs(10);

/// A session: its room and its entry's sequence number.
pub type SessionKey = (RoomId, u64);

/// One allowance per session.
pub struct SessionLimiter {
    limiter: DefaultKeyedRateLimiter<SessionKey>,
    /// When [`SessionLimiter::prune_every`] last pruned (ms since `born`).
    pruned_ms: AtomicU64,
    born: Instant,
}

impl SessionLimiter {
    /// `burst` at once, then `per_minute` a minute (each at least 1).
    pub fn per_minute(per_minute: u32, burst: u32) -> SessionLimiter {
        SessionLimiter::new(Quota::per_minute(at_least_one(per_minute)), burst)
    }

    /// `burst` at once, then `per_second` a second (each at least 1).
    pub fn per_second(per_second: u32, burst: u32) -> SessionLimiter {
        SessionLimiter::new(Quota::per_second(at_least_one(per_second)), burst)
    }

    fn new(rate: Quota, burst: u32) -> SessionLimiter {
        SessionLimiter {
            limiter: DefaultKeyedRateLimiter::keyed(rate.allow_burst(at_least_one(burst))),
            pruned_ms: AtomicU64::new(0),
            born: Instant::now(),
        }
    }

    /// Counts one action of the session `(room, seq)`; over its allowance,
    /// `Err` with the whole seconds to wait (at least 1).
    pub fn check(&self, room: &RoomId, seq: u64) -> Result<(), u64> {
        self.limiter
            .check_key(&(room.clone(), seq))
            .map_err(|not_until| {
                let wait = not_until.wait_time_from(self.limiter.clock().now());
                wait.as_secs_f64().ceil().max(1.0) as u64
            })
    }

    /// Forgets the sessions whose allowance is full again.
    pub fn prune(&self) {
        self.limiter.retain_recent();
        self.limiter.shrink_to_fit();
    }

    /// Prunes when `every` has passed since this last pruned (one caller
    /// of many does), for owners with no timer of their own.
    pub fn prune_every(&self, every: Duration) {
        let now = u64::try_from(self.born.elapsed().as_millis()).unwrap_or(u64::MAX);
        let last = self.pruned_ms.load(Ordering::Relaxed);
        if now.saturating_sub(last) >= every.as_millis() as u64
            && self
                .pruned_ms
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            self.prune();
        }
    }

    /// Sessions remembered now.
    pub fn len(&self) -> usize {
        self.limiter.len()
    }

    /// Whether no session is remembered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn at_least_one(n: u32) -> NonZeroU32 {
    NonZeroU32::new(n).unwrap_or(NonZeroU32::MIN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_gets_its_burst_then_waits_and_others_are_apart() {
        let limiter = SessionLimiter::per_minute(60, 3);
        let room = RoomId::parse("concert").unwrap();
        let other = RoomId::parse("opera").unwrap();
        for _ in 0..3 {
            limiter.check(&room, 1).unwrap();
        }
        assert_eq!(limiter.check(&room, 1), Err(1));
        // Another session, or the same number in another room, is apart.
        limiter.check(&room, 2).unwrap();
        limiter.check(&other, 1).unwrap();
        assert_eq!(limiter.len(), 3);
    }

    #[test]
    fn zero_means_one() {
        let limiter = SessionLimiter::per_second(0, 0);
        let room = RoomId::parse("concert").unwrap();
        limiter.check(&room, 1).unwrap();
        assert_eq!(limiter.check(&room, 1), Err(1));
    }
}
