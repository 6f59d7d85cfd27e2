//! What this isolate last learned about the origin's queue API: up, down,
//! or unknown (never learned, or learned too long ago).
//!
//! Only `FAIL_MODE=open` needs to know. The edge learns for free from every
//! `/queue/*` request it forwards (the waiting pages keep polling, so in a
//! surge this is always fresh), and asks `/readyz` itself only when a held
//! visitor arrives and nothing recent is known. The memory is per isolate
//! and short, so a recovered queue is noticed within seconds.

/// Whether the origin's queue API answers, as far as the gate knows.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum QueueHealth {
    /// Nothing recent is known; the gate may ask for a check.
    Unknown,
    /// It answered recently.
    Up,
    /// It failed recently (no connection, timeout, or 502/503/504).
    Down,
}

/// How long one observation is trusted, in milliseconds.
pub const HEALTH_TTL_MS: u64 = 5_000;

/// How long the `/readyz` check may take before the queue counts as down,
/// in milliseconds.
pub const PROBE_TIMEOUT_MS: u64 = 2_000;

/// The last observation and when it was made.
#[derive(Copy, Clone, Debug, Default)]
pub struct HealthMemory {
    last: Option<(bool, u64)>,
}

impl HealthMemory {
    /// What is known at `now_ms`.
    #[must_use]
    pub fn get(&self, now_ms: u64) -> QueueHealth {
        match self.last {
            Some((up, at)) if now_ms.saturating_sub(at) < HEALTH_TTL_MS => {
                if up {
                    QueueHealth::Up
                } else {
                    QueueHealth::Down
                }
            }
            _ => QueueHealth::Unknown,
        }
    }

    /// Records an observation made at `now_ms`.
    pub fn record(&mut self, up: bool, now_ms: u64) {
        self.last = Some((up, now_ms));
    }
}

/// Whether an origin answer with this status means the queue is down:
/// the origin answers 503 when its store is unreachable, and 502/504 come
/// from proxies in front of a dead origin.
#[must_use]
pub fn status_means_down(status: u16) -> bool {
    matches!(status, 502..=504)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn observations_expire() {
        let mut memory = HealthMemory::default();
        assert_eq!(memory.get(1_000), QueueHealth::Unknown);
        memory.record(false, 1_000);
        assert_eq!(memory.get(1_000), QueueHealth::Down);
        assert_eq!(memory.get(1_000 + HEALTH_TTL_MS - 1), QueueHealth::Down);
        assert_eq!(memory.get(1_000 + HEALTH_TTL_MS), QueueHealth::Unknown);
        memory.record(true, 9_000);
        assert_eq!(memory.get(9_001), QueueHealth::Up);
        // A clock that goes backwards still reads the observation as fresh.
        assert_eq!(memory.get(8_000), QueueHealth::Up);
    }

    #[test]
    fn which_statuses_mean_down() {
        for s in [502, 503, 504] {
            assert!(status_means_down(s));
        }
        for s in [200, 204, 401, 404, 429, 500, 501, 505] {
            assert!(!status_means_down(s), "{s}");
        }
    }
}
