//! How soon waiters heard they were let in: from the moment the store let
//! each in (the admitted answer's `Waiting-Room-Admitted-At`, the session's
//! start) to the status answer that told it, as `sold_out_notice` measures
//! the sell-out. A join admitted at once is no tick's admission and is
//! counted apart; an admitted answer that did not say when (an origin
//! without the header, or before the room's first tick) too.
//!
//! A run that pauses the room mid-sale (`--pause-at`) also measures how
//! soon the waiters who had read it paused read it open again, from when
//! the operator's resume was sent.

use serde::Serialize;

use crate::stats::{self, Spread};
use crate::visitor::{Outcome, VisitorLog};

/// Waiters must hear they were let in this soon, at the median...
pub const ADMISSION_NOTICE_P50_MS: f64 = 1_000.0;
/// ... and at the 95th percentile.
pub const ADMISSION_NOTICE_P95_MS: f64 = 2_000.0;

/// How soon waiters heard they were let in.
#[derive(Debug, Default, Serialize)]
pub struct AdmissionNotice {
    /// Told by a status answer that said when they were let in.
    pub told: usize,
    /// Of those, told within 1 s of it.
    pub within_1s: usize,
    /// Of those, told within 2 s of it.
    pub within_2s: usize,
    /// From the admission to the answer, seconds.
    pub delay_s: Spread,
    /// The same for those told by a held poll ...
    pub held_s: Spread,
    /// ... and by one answered at once.
    pub at_once_s: Spread,
    /// Those whose telling poll was sent after the admission: they were
    /// between two polls, so the delay is mostly their poll interval.
    pub asked_after_s: Spread,
    /// Admitted by their join (nobody waited, a slot was free): no wait.
    pub admitted_at_join: usize,
    /// Admitted by a status answer that did not say when.
    pub undated: usize,
}

/// The figures of `logs`.
pub fn build(logs: &[VisitorLog]) -> AdmissionNotice {
    let mut n = AdmissionNotice::default();
    let (mut all, mut held, mut at_once, mut after) = (vec![], vec![], vec![], vec![]);
    for l in logs.iter().filter(|l| l.admitted_ms.is_some()) {
        let Some(h) = l.admission_heard else {
            if l.admitted_at_join {
                n.admitted_at_join += 1;
            } else {
                n.undated += 1;
            }
            continue;
        };
        let s = h.delay_ms as f64 / 1000.0;
        all.push(s);
        if h.held {
            held.push(s);
        } else {
            at_once.push(s);
        }
        if !h.asked_before {
            after.push(s);
        }
    }
    n.told = all.len();
    n.within_1s = all
        .iter()
        .filter(|s| **s * 1000.0 <= ADMISSION_NOTICE_P50_MS)
        .count();
    n.within_2s = all
        .iter()
        .filter(|s| **s * 1000.0 <= ADMISSION_NOTICE_P95_MS)
        .count();
    n.delay_s = stats::spread(all);
    n.held_s = stats::spread(held);
    n.at_once_s = stats::spread(at_once);
    n.asked_after_s = stats::spread(after);
    n
}

/// The report's check: (name, target, value, met).
pub fn check(n: &AdmissionNotice) -> (&'static str, &'static str, String, bool) {
    let d = &n.delay_s;
    let value = if d.count == 0 {
        format!(
            "n/a (nobody told by a poll; {} admitted at their join, {} undated)",
            n.admitted_at_join, n.undated
        )
    } else {
        format!(
            "p50 {:.2} s, p95 {:.2} s, max {:.2} s ({} told, {} within 1 s, {} within 2 s; held polls {} p95 {:.2} s, at once {} p95 {:.2} s; asked after it {}; {} admitted at their join, {} undated)",
            d.p50,
            d.p95,
            d.max,
            n.told,
            n.within_1s,
            n.within_2s,
            n.held_s.count,
            n.held_s.p95,
            n.at_once_s.count,
            n.at_once_s.p95,
            n.asked_after_s.count,
            n.admitted_at_join,
            n.undated,
        )
    };
    let ok = d.count == 0
        || (d.p50 * 1000.0 <= ADMISSION_NOTICE_P50_MS && d.p95 * 1000.0 <= ADMISSION_NOTICE_P95_MS);
    (
        "waiters told they were let in",
        "p50 ≤ 1 s, p95 ≤ 2 s",
        value,
        ok,
    )
}

/// How soon waiters heard the room was resumed.
#[derive(Debug, Default, Serialize)]
pub struct ResumeNotice {
    /// When the resume was sent, seconds after zero.
    pub resumed_s: f64,
    /// How long the operator's resume call took, ms (the resume took
    /// effect within it; delays count from its sending).
    pub call_ms: u64,
    /// In line at the resume, having read the room paused.
    pub waiting_at_resume: usize,
    /// Of those, told it was open again.
    pub told: usize,
    /// Of those, told within 1 s.
    pub within_1s: usize,
    /// Of those, told within 2 s.
    pub within_2s: usize,
    /// From the resume to the answer that told it, seconds.
    pub delay_s: Spread,
    /// The same for those told by a poll sent before the resume (held, or
    /// on its way) ...
    pub asked_before_s: Spread,
    /// ... and after it (between two polls).
    pub asked_after_s: Spread,
}

/// The resume's figures: the operator sent it at `sent_ms` and had its
/// answer at `back_ms` (ms after zero).
pub fn resume(logs: &[VisitorLog], sent_ms: u64, back_ms: u64) -> ResumeNotice {
    let at_resume: Vec<&VisitorLog> = logs
        .iter()
        .filter(|l| {
            l.paused_read_ms.is_some()
                && l.left_line_ms.is_none_or(|e| e > sent_ms)
                && l.outcome != Outcome::Abandoned
        })
        .collect();
    let delay = |got: u64| got.saturating_sub(sent_ms) as f64 / 1000.0;
    let (mut all, mut before, mut after) = (vec![], vec![], vec![]);
    for (asked, got) in at_resume.iter().filter_map(|l| l.resume_read) {
        let d = delay(got);
        all.push(d);
        if asked <= sent_ms {
            before.push(d);
        } else {
            after.push(d);
        }
    }
    ResumeNotice {
        resumed_s: sent_ms as f64 / 1000.0,
        call_ms: back_ms.saturating_sub(sent_ms),
        waiting_at_resume: at_resume.len(),
        told: all.len(),
        within_1s: all.iter().filter(|d| **d <= 1.0).count(),
        within_2s: all.iter().filter(|d| **d <= 2.0).count(),
        delay_s: stats::spread(all),
        asked_before_s: stats::spread(before),
        asked_after_s: stats::spread(after),
    }
}

/// The resume's check: (name, target, value, met).
pub fn resume_check(n: &ResumeNotice) -> (&'static str, &'static str, String, bool) {
    let d = &n.delay_s;
    let value = format!(
        "p50 {:.2} s, p95 {:.2} s, max {:.2} s ({} of {} in line told, {} within 1 s, {} within 2 s; by a poll sent before it {}, after it {}; the resume call took {} ms)",
        d.p50,
        d.p95,
        d.max,
        n.told,
        n.waiting_at_resume,
        n.within_1s,
        n.within_2s,
        n.asked_before_s.count,
        n.asked_after_s.count,
        n.call_ms,
    );
    let ok = d.count > 0
        && d.p50 * 1000.0 <= ADMISSION_NOTICE_P50_MS
        && d.p95 * 1000.0 <= ADMISSION_NOTICE_P95_MS;
    (
        "waiters told of the resume",
        "p50 ≤ 1 s, p95 ≤ 2 s",
        value,
        ok,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::visitor::Heard;

    fn admitted(heard: Option<Heard>) -> VisitorLog {
        VisitorLog {
            joined_ms: Some(0),
            last_waiting_sent_ms: Some(0),
            admitted_ms: Some(5_000),
            admission_heard: heard,
            ..VisitorLog::default()
        }
    }

    fn heard(delay_ms: u64, held: bool, asked_before: bool) -> Option<Heard> {
        Some(Heard {
            delay_ms,
            held,
            asked_before,
        })
    }

    #[test]
    fn the_resume_counts_from_its_sending_for_those_who_read_it_paused() {
        let waiter =
            |paused: Option<u64>, read: Option<(u64, u64)>, left: Option<u64>| VisitorLog {
                joined_ms: Some(0),
                paused_read_ms: paused,
                resume_read: read,
                left_line_ms: left,
                ..VisitorLog::default()
            };
        let logs = [
            waiter(Some(9_000), Some((9_500, 10_300)), None),
            waiter(Some(9_000), Some((10_500, 11_800)), Some(12_000)),
            // Never told; left before the resume; never read it paused.
            waiter(Some(9_000), None, None),
            waiter(Some(5_000), None, Some(6_000)),
            waiter(None, None, None),
        ];
        let n = resume(&logs, 10_000, 10_050);
        assert_eq!(
            (n.waiting_at_resume, n.told, n.within_1s, n.within_2s),
            (3, 2, 1, 2)
        );
        assert_eq!((n.asked_before_s.count, n.asked_after_s.count), (1, 1));
        assert_eq!(n.call_ms, 50);
        assert_eq!(n.delay_s.max, 1.8);
        let (_, _, value, ok) = resume_check(&n);
        assert!(ok, "p50 0.3 s, p95 1.8 s: {value}");
        let (_, _, value, ok) = resume_check(&resume(&logs[2..], 10_000, 10_050));
        assert!(!ok, "nobody told: {value}");
    }

    #[test]
    fn the_delays_are_split_by_how_the_poll_was_answered() {
        let at_join = VisitorLog {
            admitted_at_join: true,
            ..admitted(None)
        };
        let logs = [
            admitted(heard(200, true, true)),
            admitted(heard(400, true, true)),
            admitted(heard(1_500, false, false)),
            admitted(heard(3_000, false, false)),
            // Let in by its join; an undated admission after a wait.
            at_join,
            admitted(None),
            // Never admitted.
            VisitorLog::default(),
        ];
        let n = build(&logs);
        assert_eq!((n.told, n.within_1s, n.within_2s), (4, 2, 3));
        assert_eq!((n.admitted_at_join, n.undated), (1, 1));
        assert_eq!((n.held_s.count, n.at_once_s.count), (2, 2));
        assert_eq!(n.asked_after_s.count, 2);
        assert_eq!(n.delay_s.max, 3.0);
        let (_, _, value, ok) = check(&n);
        assert!(!ok, "p95 3 s: {value}");
        let fast: Vec<VisitorLog> = (0..20)
            .map(|i| admitted(heard(100 + i * 50, true, true)))
            .collect();
        let (_, _, value, ok) = check(&build(&fast));
        assert!(ok, "{value}");
    }
}
