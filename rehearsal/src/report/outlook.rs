//! Whether the status's `outlook` told the truth: of the waiters last told
//! `unlikely`, how many got no seat; of those last told `likely`, how many
//! got one; how soon after the opening waiters were told `unlikely`; and
//! the share of the line told `unlikely`, second by second, for the chart.

use std::collections::{BTreeMap, HashSet};

use serde::Serialize;

use super::Check;
use crate::visitor::{Outcome, Outlook, VisitorLog};

/// Of the waiters last told `unlikely`, at least this share got no seat.
pub const UNLIKELY_TARGET: f64 = 0.95;
/// Of the waiters last told `likely`, at least this share got a seat.
pub const LIKELY_TARGET: f64 = 0.90;
/// "Told early" means within this long of the opening.
pub const EARLY_MS: u64 = 10_000;

/// Waiters last told one outlook, and what came of it.
#[derive(Debug, Default, PartialEq, Serialize)]
pub struct Told {
    /// Waiters whose last outlook while waiting was this one.
    pub waiters: usize,
    /// Of them, booked seats.
    pub got_seats: usize,
    /// Of them, admitted (their turn came), seats or not.
    pub admitted: usize,
    /// How the visits of those without seats ended (a walk-away, seats
    /// gone at their turn, a failure).
    pub no_seat: BTreeMap<Outcome, usize>,
}

impl Told {
    /// The share of them that booked seats (NaN: none).
    pub fn got_share(&self) -> f64 {
        self.got_seats as f64 / self.waiters as f64
    }
}

/// The outlook's figures.
#[derive(Debug, Serialize)]
pub struct Outlooks {
    /// Last told `likely`.
    pub likely: Told,
    /// Last told `uncertain`.
    pub uncertain: Told,
    /// Last told `unlikely`.
    pub unlikely: Told,
    /// Last told null (or never told) while waiting.
    pub null: Told,
    /// Visitors who waited (had at least one waiting answer).
    pub waiters: usize,
    /// Of them, told `unlikely` within 10 s of the opening.
    pub unlikely_within_10s: usize,
    /// Visitors who waited and got no seat.
    pub waiters_without_seats: usize,
    /// Of them, told `unlikely` within 10 s of the opening.
    pub without_seats_unlikely_within_10s: usize,
    /// When waiters without seats were first told `unlikely`, seconds
    /// after the opening.
    pub first_unlikely_s: crate::stats::Spread,
    /// Of those in line at each whole second, the share whose last
    /// outlook was `unlikely` (index = second; null: nobody in line).
    pub unlikely_share_per_second: Vec<Option<f64>>,
}

/// The figures from the logs; `None` when no visitor was told any outlook
/// (an origin that does not send it).
pub fn build(logs: &[VisitorLog], opens_ms: u64, secs: usize) -> Option<Outlooks> {
    if !logs
        .iter()
        .any(|l| l.outlooks.iter().any(|(_, o)| o.is_some()))
    {
        return None;
    }
    let mut o = Outlooks {
        likely: Told::default(),
        uncertain: Told::default(),
        unlikely: Told::default(),
        null: Told::default(),
        waiters: 0,
        unlikely_within_10s: 0,
        waiters_without_seats: 0,
        without_seats_unlikely_within_10s: 0,
        first_unlikely_s: crate::stats::spread(Vec::new()),
        unlikely_share_per_second: Vec::new(),
    };
    let mut first_unlikely = Vec::new();
    let (mut in_line, mut unlikely) = (vec![0u64; secs], vec![0u64; secs]);
    // The browsers of an account share one place: one of them booking from
    // it is each of them getting seats from it (one that took a new place
    // since was told about that one).
    let booked_places: HashSet<(usize, u64)> = logs
        .iter()
        .filter(|l| l.booked.is_some())
        .filter_map(|l| Some((l.account?, l.seq?)))
        .collect();
    for l in logs.iter().filter(|l| !l.outlooks.is_empty()) {
        o.waiters += 1;
        let shared = l.account.zip(l.seq);
        let got = l.booked.is_some() || shared.is_some_and(|p| booked_places.contains(&p));
        let last = l.outlooks.last().and_then(|(_, o)| *o);
        let told = match last {
            Some(Outlook::Likely) => &mut o.likely,
            Some(Outlook::Uncertain) => &mut o.uncertain,
            Some(Outlook::Unlikely) => &mut o.unlikely,
            None => &mut o.null,
        };
        told.waiters += 1;
        told.got_seats += usize::from(got);
        told.admitted += usize::from(l.admitted_ms.is_some());
        if !got {
            *told.no_seat.entry(l.outcome).or_insert(0) += 1;
        }
        let first = l
            .outlooks
            .iter()
            .find(|(_, o)| *o == Some(Outlook::Unlikely))
            .map(|(at, _)| *at);
        let early = first.is_some_and(|at| at <= opens_ms + EARLY_MS);
        o.unlikely_within_10s += usize::from(early);
        if !got {
            o.waiters_without_seats += 1;
            o.without_seats_unlikely_within_10s += usize::from(early);
            if let Some(at) = first {
                first_unlikely.push(at.saturating_sub(opens_ms) as f64 / 1000.0);
            }
        }
        // In line from its first waiting answer until it stopped waiting.
        let from = l.outlooks.first().map_or(0, |(at, _)| *at);
        let to = l.left_line_ms.unwrap_or(u64::MAX);
        for (s, (n, u)) in in_line.iter_mut().zip(unlikely.iter_mut()).enumerate() {
            let t = s as u64 * 1000;
            if t < from || t >= to {
                continue;
            }
            *n += 1;
            let now = l.outlooks.iter().take_while(|(at, _)| *at <= t).last();
            *u += u64::from(now.is_some_and(|(_, o)| *o == Some(Outlook::Unlikely)));
        }
    }
    o.first_unlikely_s = crate::stats::spread(first_unlikely);
    o.unlikely_share_per_second = in_line
        .iter()
        .zip(&unlikely)
        .map(|(n, u)| (*n > 0).then(|| *u as f64 / *n as f64))
        .collect();
    Some(o)
}

/// The outlook's checks: estimates, never invariants.
pub fn checks(o: &Outlooks) -> Vec<Check> {
    let pct = |n: usize, of: usize| {
        if of == 0 {
            "n/a".to_owned()
        } else {
            format!("{:.1} %", 100.0 * n as f64 / of as f64)
        }
    };
    let told = |t: &Told, what: &str, n: usize| {
        format!(
            "{} ({n} of {} {what}; {} of them admitted; no seat: {:?})",
            pct(n, t.waiters),
            t.waiters,
            t.admitted,
            t.no_seat
        )
    };
    let u = &o.unlikely;
    let l = &o.likely;
    vec![
        Check {
            name: "last told unlikely: got no seat".into(),
            target: format!("≥ {:.0} %", UNLIKELY_TARGET * 100.0),
            value: told(u, "got none", u.waiters - u.got_seats),
            ok: u.waiters == 0 || 1.0 - u.got_share() >= UNLIKELY_TARGET,
            invariant: false,
        },
        Check {
            name: "last told likely: got a seat".into(),
            target: format!("≥ {:.0} %", LIKELY_TARGET * 100.0),
            value: told(l, "booked", l.got_seats),
            ok: l.waiters == 0 || l.got_share() >= LIKELY_TARGET,
            invariant: false,
        },
        Check {
            name: "told unlikely within 10 s of the opening".into(),
            target: "reported".into(),
            value: format!(
                "{} of waiters ({} of {}); of those who got no seat {} ({} of {})",
                pct(o.unlikely_within_10s, o.waiters),
                o.unlikely_within_10s,
                o.waiters,
                pct(o.without_seats_unlikely_within_10s, o.waiters_without_seats),
                o.without_seats_unlikely_within_10s,
                o.waiters_without_seats,
            ),
            ok: true,
            invariant: false,
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn waiter(told: &[(u64, Option<Outlook>)], left_ms: u64, booked: bool) -> VisitorLog {
        VisitorLog {
            outlooks: told.to_vec(),
            left_line_ms: Some(left_ms),
            admitted_ms: booked.then_some(left_ms),
            booked: booked.then(|| (left_ms + 1_000, vec!["A-1".to_owned()])),
            ..VisitorLog::default()
        }
    }

    #[test]
    fn the_last_outlook_told_is_judged_against_the_seats_got() {
        use Outlook::*;
        let logs = vec![
            waiter(&[(500, Some(Likely))], 2_000, true),
            waiter(
                &[(500, Some(Uncertain)), (1_500, Some(Likely))],
                3_000,
                false,
            ),
            waiter(&[(500, Some(Unlikely))], 20_500, false),
            waiter(&[(12_000, Some(Unlikely))], 20_500, false),
            waiter(
                &[(500, Some(Unlikely)), (4_000, Some(Uncertain))],
                5_000,
                true,
            ),
            VisitorLog::default(), // never waited
        ];
        let o = build(&logs, 0, 22).unwrap();
        assert_eq!((o.likely.waiters, o.likely.got_seats), (2, 1));
        assert_eq!(o.likely.no_seat.get(&Outcome::TimedOut), Some(&1));
        assert_eq!((o.unlikely.waiters, o.unlikely.got_seats), (2, 0));
        assert_eq!((o.uncertain.waiters, o.uncertain.got_seats), (1, 1));
        assert_eq!(o.waiters, 5);
        assert_eq!(o.unlikely_within_10s, 2);
        assert_eq!(
            (o.waiters_without_seats, o.without_seats_unlikely_within_10s),
            (3, 1)
        );
        // At 1 s four are in line (the fourth's first answer comes at
        // 12 s), two told unlikely; at 10 s one is left, told unlikely.
        assert_eq!(o.unlikely_share_per_second[1], Some(0.5));
        assert_eq!(o.unlikely_share_per_second[10], Some(1.0));
        assert_eq!(o.unlikely_share_per_second[21], None);
        let c = checks(&o);
        assert!(c[0].ok, "{c:?}");
        assert!(!c[1].ok, "half of those told likely got a seat");
    }

    #[test]
    fn a_browser_whose_place_was_booked_by_another_got_seats() {
        let told = [(500, Some(Outlook::Likely))];
        let browser = |account, seq, booked| VisitorLog {
            account: Some(account),
            seq: Some(seq),
            ..waiter(&told, 2_000, booked)
        };
        let logs = vec![
            browser(7, 100, true),
            // The same place: its seats.
            browser(7, 100, false),
            // A place of its own, taken since: not its seats.
            browser(7, 300, false),
            browser(8, 101, false),
        ];
        let o = build(&logs, 0, 4).unwrap();
        assert_eq!((o.likely.waiters, o.likely.got_seats), (4, 2));
        assert_eq!(o.waiters_without_seats, 2);
    }

    #[test]
    fn an_origin_that_tells_nothing_has_no_figures() {
        let logs = vec![waiter(&[(500, None)], 2_000, true)];
        assert!(build(&logs, 0, 3).is_none());
    }
}
