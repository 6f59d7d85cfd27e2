//! The one clock the origin reads: handlers (token issue and expiry) and the
//! promoter take "now" from here, so a test can pin it and move it.
//!
//! The queue's stores keep their own time source on purpose: the Redis
//! store reads Redis `TIME`, so several instances with skewed clocks agree.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Wall-clock time, or a time a test sets.
#[derive(Clone, Debug, Default)]
pub enum Clock {
    /// The system clock.
    #[default]
    System,
    /// Unix milliseconds a test sets and moves.
    Manual(Arc<AtomicU64>),
}

impl Clock {
    /// A manual clock starting at `unix_ms`.
    pub fn manual(unix_ms: u64) -> Clock {
        Clock::Manual(Arc::new(AtomicU64::new(unix_ms)))
    }

    /// Unix milliseconds now.
    pub fn now_ms(&self) -> u64 {
        match self {
            Clock::System => std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            Clock::Manual(ms) => ms.load(Ordering::SeqCst),
        }
    }

    /// Unix seconds now (what tokens carry).
    pub fn now_secs(&self) -> u64 {
        self.now_ms() / 1000
    }

    /// Moves a manual clock forward; the system clock moves by itself.
    pub fn advance(&self, by: std::time::Duration) {
        if let Clock::Manual(ms) = self {
            let by = u64::try_from(by.as_millis()).unwrap_or(u64::MAX);
            ms.fetch_add(by, Ordering::SeqCst);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_moves_only_when_told() {
        let clock = Clock::manual(5_000);
        assert_eq!(clock.now_secs(), 5);
        clock.advance(std::time::Duration::from_millis(1_500));
        assert_eq!(clock.now_ms(), 6_500);
        let copy = clock.clone();
        copy.advance(std::time::Duration::from_secs(1));
        assert_eq!(clock.now_ms(), 7_500, "clones share the time");
    }
}
