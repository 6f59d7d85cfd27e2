//! Failed attempts per client address, so a client guessing the admin key
//! is slowed to a few tries a second, and the log of refusals that cannot
//! be flooded. Knows client keys and time; nothing of HTTP or the store.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use crate::clients::ClientKey;

/// Failures a client may make at once before it must wait.
const BURST: f64 = 5.0;
/// Failures per second a client earns back.
const PER_SECOND: f64 = 2.0;
/// Past this many addresses, those back to a clean slate are forgotten.
const PRUNE_ABOVE: usize = 10_000;

/// Each client's recent failures, leaking away at `PER_SECOND`.
#[derive(Debug, Default)]
pub struct Strikes {
    clients: Mutex<HashMap<ClientKey, (f64, Instant)>>,
}

impl Strikes {
    /// Whether `client` may try now; `Err` carries the seconds to wait.
    /// Checked before the attempt is judged, so a right guess made while
    /// throttled is refused like a wrong one.
    pub fn check(&self, client: &ClientKey) -> Result<(), u64> {
        let clients = self.clients.lock().unwrap_or_else(|e| e.into_inner());
        let Some(&(level, at)) = clients.get(client) else {
            return Ok(());
        };
        let level = leaked(level, at, Instant::now());
        if level + 1.0 > BURST {
            Err(((level + 1.0 - BURST) / PER_SECOND).ceil().max(1.0) as u64)
        } else {
            Ok(())
        }
    }

    /// Counts one failed attempt by `client`.
    pub fn strike(&self, client: ClientKey) {
        let now = Instant::now();
        let mut clients = self.clients.lock().unwrap_or_else(|e| e.into_inner());
        if clients.len() > PRUNE_ABOVE {
            clients.retain(|_, (level, at)| leaked(*level, *at, now) > 0.0);
        }
        let entry = clients.entry(client).or_insert((0.0, now));
        *entry = (leaked(entry.0, entry.1, now) + 1.0, now);
    }
}

fn leaked(level: f64, at: Instant, now: Instant) -> f64 {
    (level - now.duration_since(at).as_secs_f64() * PER_SECOND).max(0.0)
}

/// Logs a refused admin call: the first in a second in full, the rest of
/// that second only as a count in the next line, so a flood of guesses
/// costs one log line a second.
pub fn log_refusal(client: Option<&ClientKey>, code: &str, path: &str) {
    static SECOND: AtomicU64 = AtomicU64::new(0);
    static QUIET: AtomicU64 = AtomicU64::new(0);
    let now = room::clock::Clock::System.now_ms() / 1000;
    let last = SECOND.load(Ordering::Relaxed);
    if now != last
        && SECOND
            .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    {
        let suppressed = QUIET.swap(0, Ordering::Relaxed);
        match client {
            Some(c) => tracing::warn!(code, path, client = %c, suppressed, "admin call refused"),
            None => tracing::warn!(code, path, suppressed, "admin call refused"),
        }
    } else {
        QUIET.fetch_add(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_of_failures_then_a_wait() {
        let strikes = Strikes::default();
        let a = ClientKey::of([10, 0, 0, 1].into(), 64);
        let b = ClientKey::of([10, 0, 0, 2].into(), 64);
        for _ in 0..5 {
            assert_eq!(strikes.check(&a), Ok(()));
            strikes.strike(a);
        }
        assert_eq!(strikes.check(&a), Err(1));
        assert_eq!(strikes.check(&b), Ok(()), "other addresses are unaffected");
    }
}
