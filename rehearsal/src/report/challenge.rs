//! The join challenge's figures: what solving cost people, and what bots
//! got for what they spent (`--challenge`, `--bots`).

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use crate::bots::{BotKind, BotLog};
use crate::stats::{self, Spread};
use crate::visitor::VisitorLog;

/// What the run's room and bots were.
pub struct Plan {
    /// The room's challenge (`"off"`, `"pow"`), as set or read back.
    pub kind: String,
    /// Its proof-of-work difficulty.
    pub bits: Option<u64>,
    /// The bots, if any: kind, count, threads each.
    pub bots: Option<(BotKind, usize, usize)>,
}

/// The challenge's figures.
#[derive(Debug, Serialize)]
pub struct Challenge {
    /// The room's challenge.
    pub kind: String,
    /// Its difficulty, in leading zero bits.
    pub bits: Option<u64>,
    /// People's joins answered 428 `challenge_required`.
    pub people_answered_428: u64,
    /// People's joins answered 403 `challenge_failed`.
    pub people_answered_403: u64,
    /// Proofs of work people solved (one thread each, as the page).
    pub people_solves: usize,
    /// Wall seconds one of those took.
    pub people_solve_s: Spread,
    /// CPU seconds people spent solving, all together.
    pub people_cpu_s: f64,
    /// The bots' figures.
    pub bots: Option<Bots>,
}

/// What bots got and spent.
#[derive(Debug, Serialize)]
pub struct Bots {
    /// Their kind.
    pub kind: BotKind,
    /// How many played.
    pub bots: usize,
    /// Threads each solving bot used.
    pub threads: usize,
    /// Joins sent.
    pub joins: u64,
    /// Joins answered 428 `challenge_required`.
    pub answered_428: u64,
    /// Joins answered 403 `challenge_failed`.
    pub answered_403: u64,
    /// Joins answered 200.
    pub answered_200: u64,
    /// Distinct places (seqs) bots held.
    pub places: usize,
    /// Bots that held a place.
    pub bots_with_a_place: usize,
    /// Most places bots held at one moment (each alive from the first
    /// answer showing it to the last request answered with it alive).
    pub max_places_at_once: usize,
    /// Bots an answer said were admitted.
    pub admitted_bots: usize,
    /// Distinct places of bots admitted.
    pub admitted_places: usize,
    /// Proofs of work bots solved.
    pub solves: u64,
    /// Hashes they tried.
    pub hashes: u64,
    /// CPU seconds their solving threads spent (each thread's own clock,
    /// `CLOCK_THREAD_CPUTIME_ID`, summed).
    pub cpu_s: f64,
    /// Hashes per CPU second.
    pub hashes_per_cpu_s: f64,
    /// Places per CPU second spent solving (`null` when nothing was spent).
    pub places_per_cpu_s: Option<f64>,
    /// Wall seconds one solve took (on all its threads).
    pub solve_wall_s: Spread,
    /// Other answers bots met, by kind.
    pub errors: BTreeMap<String, u64>,
}

/// The figures from the people's and bots' logs.
pub fn build(plan: &Plan, people: &[VisitorLog], bots: &[BotLog]) -> Challenge {
    let solves: Vec<&(f64, f64)> = people.iter().flat_map(|l| &l.solves).collect();
    Challenge {
        kind: plan.kind.clone(),
        bits: plan.bits,
        people_answered_428: people.iter().map(|l| l.challenges).sum(),
        people_answered_403: people.iter().map(|l| l.challenges_failed).sum(),
        people_solves: solves.len(),
        people_solve_s: stats::spread(solves.iter().map(|s| s.0).collect()),
        // `+ 0.0`: an empty sum is -0.0.
        people_cpu_s: solves.iter().map(|s| s.1).sum::<f64>() + 0.0,
        bots: plan
            .bots
            .map(|(kind, count, threads)| build_bots(kind, count, threads, bots)),
    }
}

fn build_bots(kind: BotKind, count: usize, threads: usize, logs: &[BotLog]) -> Bots {
    // Each place once, alive over the union of what its bots saw (the
    // `reuse` bots share one).
    let mut places: HashMap<u64, (u64, u64, bool)> = HashMap::new();
    for p in logs.iter().flat_map(|l| &l.places) {
        let e = places
            .entry(p.seq)
            .or_insert((p.first_ms, p.last_ms, false));
        e.0 = e.0.min(p.first_ms);
        e.1 = e.1.max(p.last_ms);
        e.2 |= p.admitted;
    }
    let spans: Vec<(u64, u64)> = places.values().map(|&(a, b, _)| (a, b)).collect();
    let mut errors = BTreeMap::new();
    for (k, n) in logs.iter().flat_map(|l| &l.errors) {
        *errors.entry(k.clone()).or_insert(0) += n;
    }
    let cpu_s: f64 = logs.iter().map(|l| l.cpu_s).sum();
    let hashes: u64 = logs.iter().map(|l| l.hashes).sum();
    Bots {
        kind,
        bots: count,
        threads,
        joins: logs.iter().map(|l| l.joins).sum(),
        answered_428: logs.iter().map(|l| l.answered_428).sum(),
        answered_403: logs.iter().map(|l| l.answered_403).sum(),
        answered_200: logs.iter().map(|l| l.answered_200).sum(),
        places: places.len(),
        bots_with_a_place: logs
            .iter()
            .filter(|l| !l.places.is_empty() || l.answered_200 > 0)
            .count(),
        max_places_at_once: most_at_once(&spans),
        admitted_bots: logs.iter().filter(|l| l.admitted).count(),
        admitted_places: places.values().filter(|p| p.2).count(),
        solves: logs.iter().map(|l| l.solves).sum(),
        hashes,
        cpu_s,
        hashes_per_cpu_s: if cpu_s > 0.0 {
            hashes as f64 / cpu_s
        } else {
            0.0
        },
        places_per_cpu_s: (cpu_s > 0.0).then(|| places.len() as f64 / cpu_s),
        solve_wall_s: stats::spread(
            logs.iter()
                .filter(|l| l.solves > 0)
                .map(|l| l.solve_wall_s / l.solves as f64)
                .collect(),
        ),
        errors,
    }
}

/// Most spans `[from, to]` (ms, both ends included) alive at one moment.
pub fn most_at_once(spans: &[(u64, u64)]) -> usize {
    // Starts before ends at the same moment: touching spans overlap.
    let mut edges: Vec<(u64, i8)> = spans
        .iter()
        .flat_map(|&(a, b)| [(a.min(b), -1), (a.max(b), 1)])
        .collect();
    edges.sort_unstable();
    let (mut now, mut most) = (0i64, 0i64);
    for (_, e) in edges {
        now -= i64::from(e);
        most = most.max(now);
    }
    usize::try_from(most).unwrap_or(0)
}

/// The invariant `--check` judges for the bots' kind: never-solving bots
/// take no place, bots sharing one solution at most one. `None` for
/// solving bots (they pay; nothing to hold them to).
pub fn bots_check(b: &Bots) -> Option<(&'static str, &'static str, bool)> {
    match b.kind {
        BotKind::Never => Some(("places taken by bots that never solve", "0", b.places == 0)),
        BotKind::Reuse => Some((
            "places taken by bots sharing one solution",
            "≤ 1",
            b.places <= 1,
        )),
        BotKind::Solve => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bots::BotPlace;

    fn place(seq: u64, first_ms: u64, last_ms: u64, admitted: bool) -> BotPlace {
        BotPlace {
            seq,
            first_ms,
            last_ms,
            admitted,
        }
    }

    #[test]
    fn spans_at_once() {
        assert_eq!(most_at_once(&[]), 0);
        assert_eq!(most_at_once(&[(0, 10)]), 1);
        assert_eq!(most_at_once(&[(0, 10), (10, 20)]), 2);
        assert_eq!(most_at_once(&[(0, 10), (11, 20), (5, 6)]), 2);
        assert_eq!(most_at_once(&[(0, 100), (1, 2), (3, 4), (5, 6)]), 2);
    }

    #[test]
    fn never_solving_bots_with_no_place_pass_and_one_with_a_place_fails() {
        let plan = Plan {
            kind: "pow".into(),
            bits: Some(12),
            bots: Some((BotKind::Never, 2, 2)),
        };
        let refused = BotLog {
            joins: 5,
            answered_428: 5,
            ..BotLog::default()
        };
        let c = build(&plan, &[], &[refused.clone(), refused.clone()]);
        let b = c.bots.as_ref().unwrap();
        assert_eq!((b.joins, b.answered_428, b.places), (10, 10, 0));
        assert_eq!(b.places_per_cpu_s, None);
        assert_eq!(bots_check(b).map(|c| c.2), Some(true));

        let placed = BotLog {
            answered_200: 1,
            places: vec![place(7, 100, 900, false)],
            ..refused.clone()
        };
        let c = build(&plan, &[], &[refused, placed]);
        let b = c.bots.as_ref().unwrap();
        assert_eq!((b.places, b.bots_with_a_place), (1, 1));
        assert_eq!(bots_check(b).map(|c| c.2), Some(false));
    }

    #[test]
    fn bots_sharing_one_solution_share_one_place() {
        let plan = Plan {
            kind: "pow".into(),
            bits: Some(20),
            bots: Some((BotKind::Reuse, 3, 2)),
        };
        let on = |first, last, admitted| BotLog {
            answered_200: 1,
            admitted,
            places: vec![place(42, first, last, admitted)],
            ..BotLog::default()
        };
        let logs = [on(10, 500, false), on(20, 900, true), on(30, 40, false)];
        let b = build(&plan, &[], &logs).bots.unwrap();
        assert_eq!((b.places, b.max_places_at_once), (1, 1));
        assert_eq!((b.admitted_bots, b.admitted_places), (1, 1));
        assert_eq!(bots_check(&b).map(|c| c.2), Some(true));
        let mut second = on(50, 60, false);
        second.places[0].seq = 43;
        let b = build(&plan, &[], &[on(10, 500, false), second])
            .bots
            .unwrap();
        assert_eq!((b.places, b.max_places_at_once), (2, 2));
        assert_eq!(bots_check(&b).map(|c| c.2), Some(false));
    }

    #[test]
    fn solving_bots_get_places_per_cpu_second() {
        let plan = Plan {
            kind: "pow".into(),
            bits: Some(20),
            bots: Some((BotKind::Solve, 2, 2)),
        };
        let solver = |seq, cpu_s| BotLog {
            answered_200: 1,
            solves: 1,
            hashes: 1_000_000,
            cpu_s,
            solve_wall_s: cpu_s / 2.0,
            places: vec![place(seq, 0, 10, false)],
            ..BotLog::default()
        };
        let b = build(&plan, &[], &[solver(1, 0.5), solver(2, 1.5)])
            .bots
            .unwrap();
        assert_eq!(b.places, 2);
        assert_eq!(b.places_per_cpu_s, Some(1.0));
        assert_eq!(b.hashes_per_cpu_s, 1_000_000.0);
        assert_eq!(b.solve_wall_s.max, 0.75);
        assert!(bots_check(&b).is_none());
    }

    #[test]
    fn peoples_solves_add_up() {
        let plan = Plan {
            kind: "pow".into(),
            bits: Some(12),
            bots: None,
        };
        let log = VisitorLog {
            challenges: 2,
            solves: vec![(0.2, 0.1), (0.4, 0.3)],
            ..VisitorLog::default()
        };
        let c = build(&plan, &[log], &[]);
        assert_eq!((c.people_answered_428, c.people_solves), (2, 2));
        assert!((c.people_cpu_s - 0.4).abs() < 1e-9);
        assert!(c.bots.is_none());
    }
}
