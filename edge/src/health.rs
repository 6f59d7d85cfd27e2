//! What this isolate has learned about the origin's queue API: up, down,
//! or unknown, from the outcomes of recent requests to it.
//!
//! Only `FAIL_MODE=open` needs to know, and there a wrong "down" opens the
//! gate to everyone, so one failure must not say it: an origin under the
//! load of an on-sale drops the odd request, and a single 503 (or one slow
//! `/readyz`) must not let the crowd around the line. [`HealthMemory`]
//! therefore keeps the last [`WINDOW_OUTCOMES`] outcomes and calls the queue
//! down only when, among those from the last [`WINDOW_MS`],
//! - at least [`MIN_FAILURES`] failed (one or two blips never suffice, even
//!   in a quiet isolate that has seen nothing else), and
//! - at least half failed (a busy isolate seeing a few failures among many
//!   answers is looking at an overloaded queue, not a dead one).
//!
//! It is up when not down and some request succeeded in the last
//! [`HEALTH_TTL_MS`]; otherwise unknown, and the gate asks `/readyz`, which
//! adds one outcome like any other. Recovery needs nothing special: answers
//! that succeed pull the ratio under half, and failures older than the
//! window stop counting, so a recovered queue holds visitors again within
//! [`WINDOW_MS`] at most.
//!
//! The edge learns for free from every `/queue/*` request it forwards (the
//! waiting pages keep polling, so in a surge the window is always full).
//! The memory is per isolate. Time is passed in: this is a plain state
//! machine, tested natively; the runtime glue only feeds outcomes in.

/// Whether the origin's queue API answers, as far as the gate knows.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum QueueHealth {
    /// Nothing recent enough is known; the gate may ask for a check.
    Unknown,
    /// It answered recently, and is not failing.
    Up,
    /// It has been failing (no connection, timeout, or 502/503/504): at
    /// least [`MIN_FAILURES`] failures, and at least half of the outcomes,
    /// in the last [`WINDOW_MS`].
    Down,
}

/// How many recent outcomes are kept; older ones are forgotten.
pub const WINDOW_OUTCOMES: usize = 20;

/// How long an outcome counts towards "down", in milliseconds. Long enough
/// for a lone waiting page backing off between tries (4 s, then at most
/// 7.5 s apart) to gather the failures a dead queue gives; short enough
/// that a recovered queue holds visitors again within it.
pub const WINDOW_MS: u64 = 30_000;

/// Fewest failures in the window that can make the queue down.
pub const MIN_FAILURES: usize = 5;

/// How long a success keeps the queue up without a check, in milliseconds.
pub const HEALTH_TTL_MS: u64 = 5_000;

/// How long the `/readyz` check may take before it counts as one failure,
/// in milliseconds.
pub const PROBE_TIMEOUT_MS: u64 = 2_000;

/// The last [`WINDOW_OUTCOMES`] outcomes, each with when it was seen.
#[derive(Copy, Clone, Debug, Default)]
pub struct HealthMemory {
    /// A ring: `(seen at, succeeded)`, `None` while never filled.
    outcomes: [Option<(u64, bool)>; WINDOW_OUTCOMES],
    /// The slot the next outcome goes into.
    next: usize,
}

impl HealthMemory {
    /// What is known at `now_ms`.
    #[must_use]
    pub fn get(&self, now_ms: u64) -> QueueHealth {
        // A clock that went backwards reads an outcome as just seen.
        let age = |at: u64| now_ms.saturating_sub(at);
        let recent = || {
            self.outcomes
                .iter()
                .flatten()
                .filter(|(at, _)| age(*at) < WINDOW_MS)
        };
        let total = recent().count();
        let failures = recent().filter(|(_, up)| !up).count();
        if failures >= MIN_FAILURES && failures * 2 >= total {
            QueueHealth::Down
        } else if recent().any(|(at, up)| *up && age(*at) < HEALTH_TTL_MS) {
            QueueHealth::Up
        } else {
            QueueHealth::Unknown
        }
    }

    /// What is known at `now_ms` just after a check: a state to decide
    /// on, never [`QueueHealth::Unknown`]. Not yet shown down counts as up
    /// (the request is held): asking again at once would add nothing, and
    /// failures short of the rule must not open the gate.
    #[must_use]
    pub fn settled(&self, now_ms: u64) -> QueueHealth {
        match self.get(now_ms) {
            QueueHealth::Down => QueueHealth::Down,
            QueueHealth::Up | QueueHealth::Unknown => QueueHealth::Up,
        }
    }

    /// Records one outcome seen at `now_ms`: `up` is whether the queue
    /// answered (see [`status_means_down`]).
    pub fn record(&mut self, up: bool, now_ms: u64) {
        if let Some(slot) = self.outcomes.get_mut(self.next) {
            *slot = Some((now_ms, up));
        }
        self.next = (self.next + 1) % WINDOW_OUTCOMES;
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

    const T: u64 = 1_000_000;

    /// Outcomes as `(ms after T, up)`.
    type Outcomes = Vec<(u64, bool)>;

    /// The memory after `outcomes`, each `(ms after T, up)`.
    fn after(outcomes: &[(u64, bool)]) -> HealthMemory {
        let mut memory = HealthMemory::default();
        for (at, up) in outcomes {
            memory.record(*up, T + at);
        }
        memory
    }

    fn fails(n: u64, from: u64, every: u64) -> Outcomes {
        (0..n).map(|i| (from + i * every, false)).collect()
    }

    #[test]
    fn states() {
        use QueueHealth::{Down, Unknown, Up};
        let ok = |at: u64| (at, true);
        let bad = |at: u64| (at, false);
        let four_then_ok = [fails(4, 0, 100), vec![ok(500)]].concat();
        let many_ok_five_bad = [
            (0..10).map(|i| ok(i * 10)).collect::<Vec<_>>(),
            fails(5, 200, 10),
        ]
        .concat();
        let down_then_recovers =
            [fails(5, 0, 100), (0..6).map(|i| ok(1_000 + i)).collect()].concat();
        let cases: Vec<(&str, Outcomes, u64, QueueHealth)> = vec![
            ("nothing seen", vec![], 0, Unknown),
            ("one failure does not open", vec![bad(0)], 1, Unknown),
            (
                "one slow readyz does not open",
                vec![bad(0)],
                2_000,
                Unknown,
            ),
            ("four failures do not open", fails(4, 0, 100), 500, Unknown),
            ("five failures in a row do", fails(5, 0, 100), 500, Down),
            ("four failures and a success: up", four_then_ok, 600, Up),
            ("a third failing is not down", many_ok_five_bad, 300, Up),
            (
                "half failing is down",
                [fails(5, 0, 10), (0..5).map(|i| ok(100 + i)).collect()].concat(),
                200,
                Down,
            ),
            (
                "failures spread wider than the window do not add up",
                fails(8, 0, 8_000),
                56_001,
                Unknown,
            ),
            (
                "down lasts while failures are recent",
                fails(5, 0, 100),
                29_999,
                Down,
            ),
            (
                "failures older than the window are forgotten",
                fails(5, 0, 100),
                30_401,
                Unknown,
            ),
            (
                "more successes than failures after an outage: up",
                down_then_recovers,
                1_100,
                Up,
            ),
            ("a success is trusted for a while", vec![ok(0)], 4_999, Up),
            ("then a check is due", vec![ok(0)], 5_000, Unknown),
            (
                "only the last outcomes count",
                [fails(10, 0, 10), (0..20).map(|i| ok(200 + i)).collect()].concat(),
                300,
                Up,
            ),
            (
                "a clock going back reads as fresh",
                vec![ok(9_000)],
                8_000,
                Up,
            ),
        ];
        for (name, outcomes, at, want) in cases {
            assert_eq!(after(&outcomes).get(T + at), want, "case: {name}");
        }
    }

    #[test]
    fn after_a_check_there_is_an_answer() {
        // One failed check: not enough to open, so the request is held.
        assert_eq!(after(&[(0, false)]).settled(T), QueueHealth::Up);
        assert_eq!(after(&[(0, true)]).settled(T), QueueHealth::Up);
        assert_eq!(after(&fails(5, 0, 1)).settled(T + 10), QueueHealth::Down);
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
