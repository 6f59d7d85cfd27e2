//! The report's maths, pure: percentiles, Kendall's tau, the inversions a
//! run proves from what visitors saw, and the ETA error.

use serde::Serialize;

/// p50, p90, p95, p99 and max of some samples, with their count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Spread {
    /// How many samples.
    pub count: usize,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Largest.
    pub max: f64,
}

/// The nearest-rank percentile `p` (0..=100) of sorted samples; NaN when empty.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    // Rank 0 (p = 0) reads the first sample; past the end reads the last.
    let index = rank.saturating_sub(1).min(sorted.len().saturating_sub(1));
    sorted.get(index).copied().unwrap_or(f64::NAN)
}

/// The [`Spread`] of `samples` (sorted here).
pub fn spread(mut samples: Vec<f64>) -> Spread {
    samples.sort_by(f64::total_cmp);
    Spread {
        count: samples.len(),
        p50: percentile(&samples, 50.0),
        p90: percentile(&samples, 90.0),
        p95: percentile(&samples, 95.0),
        p99: percentile(&samples, 99.0),
        max: samples.last().copied().unwrap_or(f64::NAN),
    }
}

/// Pairs among `n` items.
pub fn pairs(n: usize) -> u64 {
    let n = n as u64;
    n * n.saturating_sub(1) / 2
}

/// Kendall's tau from a count of discordant pairs among `n` items, every
/// other pair concordant: 1.0 is the same order, -1.0 the reverse.
/// Fewer than two items: 1.0 (nothing is out of order).
pub fn tau_from_discordant(discordant: u64, n: usize) -> f64 {
    let p = pairs(n);
    if p == 0 {
        1.0
    } else {
        1.0 - 2.0 * discordant as f64 / p as f64
    }
}

/// Kendall's tau (tau-a) between two orders of the same items: `(x, y)`
/// per item. A pair tied in either is counted as neither concordant nor
/// discordant. O(n log n): sort by x, count y's inversions by merge sort.
pub fn kendall_tau(items: &[(f64, f64)]) -> f64 {
    let mut v = items.to_vec();
    v.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
    let mut ys: Vec<f64> = v.iter().map(|p| p.1).collect();
    let discordant = inversions(&mut ys);
    // Pairs tied in x but not in y were sorted by y (concordant by
    // construction); take ties out of the concordant count.
    let ties = tied_pairs(v.iter().map(|p| p.0)) + tied_pairs_sorted_y(&v);
    let p = pairs(items.len());
    if p == 0 {
        return 1.0;
    }
    let concordant = p - discordant - ties.min(p - discordant);
    (concordant as f64 - discordant as f64) / p as f64
}

/// Pairs tied in a sorted sequence of keys.
fn tied_pairs(sorted: impl Iterator<Item = f64>) -> u64 {
    let mut total = 0;
    let (mut last, mut run) = (None::<f64>, 0u64);
    for x in sorted {
        if last == Some(x) {
            run += 1;
        } else {
            total += pairs(run as usize);
            (last, run) = (Some(x), 1);
        }
    }
    total + pairs(run as usize)
}

/// Pairs tied in y but not in x (x ascending): neither concordant nor discordant.
fn tied_pairs_sorted_y(v: &[(f64, f64)]) -> u64 {
    let mut ys: Vec<(f64, f64)> = v.iter().map(|p| (p.1, p.0)).collect();
    ys.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
    let all_y = tied_pairs(ys.iter().map(|p| p.0));
    // Pairs tied in both were counted with the x ties already.
    let both: u64 = ys.chunk_by(|a, b| a == b).map(|run| pairs(run.len())).sum();
    all_y - both
}

/// Strict inversions (`i < j`, `y[i] > y[j]`) by merge sort; sorts `ys`.
pub fn inversions(ys: &mut [f64]) -> u64 {
    if ys.len() < 2 {
        return 0;
    }
    let mut merged = Vec::with_capacity(ys.len());
    let (left, right) = ys.split_at_mut(ys.len() / 2);
    let mut count = inversions(left) + inversions(right);
    let mut left = left.iter().copied().peekable();
    let mut right = right.iter().copied().peekable();
    while let (Some(&l), Some(&r)) = (left.peek(), right.peek()) {
        if r < l {
            // r jumps every left item not yet merged.
            count += left.len() as u64;
            merged.push(r);
            right.next();
        } else {
            merged.push(l);
            left.next();
        }
    }
    merged.extend(left);
    merged.extend(right);
    ys.copy_from_slice(&merged);
    count
}

/// What one admitted visitor's reads pin down about its admission: it
/// happened after `lo` (when the last read that still said waiting, or the
/// join, was sent) and before `hi` (when the first read that said admitted
/// came back). Times in ms of the run's clock.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Admission {
    /// The visitor's place in join order (the ticket's seq, or a draw rank).
    pub order: u64,
    /// Admitted after this.
    pub lo: u64,
    /// Admitted before this.
    pub hi: u64,
}

/// Pairs proven admitted out of order: A before B in `order`, yet B was
/// seen admitted (`hi_B`) before A's read that still said waiting was sent
/// (`lo_A`). Pairs whose windows overlap cannot be told apart and are not
/// counted. O(n log n): a Fenwick tree over the `hi` values of later ones.
pub fn proven_inversions(items: &[Admission]) -> u64 {
    let mut v = items.to_vec();
    v.sort_by_key(|a| std::cmp::Reverse(a.order));
    let mut his: Vec<u64> = v.iter().map(|a| a.hi).collect();
    his.sort_unstable();
    his.dedup();
    let mut tree = vec![0u64; his.len() + 1];
    let mut count = 0;
    // Items sharing an order (should not happen) never count against each other.
    for group in v.chunk_by(|a, b| a.order == b.order) {
        for a in group {
            // hi values strictly below lo: the index of the first hi >= lo.
            let mut k = his.partition_point(|&h| h < a.lo);
            while k > 0 {
                count += tree.get(k).copied().unwrap_or(0);
                k &= k - 1;
            }
        }
        for a in group {
            let mut k = his.partition_point(|&h| h < a.hi) + 1;
            while let Some(slot) = tree.get_mut(k) {
                *slot += 1;
                k += k & k.wrapping_neg();
            }
        }
    }
    count
}

/// |ETA − wait| / wait: how wrong a promise of `eta_s` seconds was about a
/// wait of `wait_ms`; `None` when the wait was zero.
pub fn eta_error(eta_s: u64, wait_ms: u64) -> Option<f64> {
    (wait_ms > 0).then(|| (eta_s as f64 * 1000.0 - wait_ms as f64).abs() / wait_ms as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tau the slow way: every pair.
    fn tau_naive(items: &[(f64, f64)]) -> f64 {
        let (mut c, mut d) = (0i64, 0i64);
        for i in 0..items.len() {
            for j in i + 1..items.len() {
                let s = (items[i].0 - items[j].0) * (items[i].1 - items[j].1);
                if s > 0.0 {
                    c += 1;
                } else if s < 0.0 {
                    d += 1;
                }
            }
        }
        (c - d) as f64 / pairs(items.len()) as f64
    }

    #[test]
    fn tau_of_same_reverse_and_one_swap() {
        let same: Vec<_> = (0..10).map(|i| (i as f64, i as f64)).collect();
        assert_eq!(kendall_tau(&same), 1.0);
        let rev: Vec<_> = (0..10).map(|i| (i as f64, -(i as f64))).collect();
        assert_eq!(kendall_tau(&rev), -1.0);
        let mut swap = same.clone();
        swap[3].1 = 4.0;
        swap[4].1 = 3.0;
        // One discordant pair of 45.
        assert!((kendall_tau(&swap) - (1.0 - 2.0 / 45.0)).abs() < 1e-12);
        assert_eq!(tau_from_discordant(1, 10), 1.0 - 2.0 / 45.0);
        assert_eq!(kendall_tau(&[]), 1.0);
        assert_eq!(tau_from_discordant(0, 1), 1.0);
    }

    #[test]
    fn tau_matches_the_pairwise_definition_with_ties() {
        let mut r = crate::rng::Rng::new(5);
        for n in [2, 3, 7, 50, 200] {
            let items: Vec<_> = (0..n)
                .map(|_| (r.below(20) as f64, r.below(20) as f64))
                .collect();
            let (fast, slow) = (kendall_tau(&items), tau_naive(&items));
            assert!((fast - slow).abs() < 1e-12, "n {n}: {fast} vs {slow}");
        }
    }

    #[test]
    fn inversions_count_strict_pairs() {
        assert_eq!(inversions(&mut [3.0, 1.0, 2.0]), 2);
        assert_eq!(inversions(&mut [1.0, 1.0, 1.0]), 0);
        assert_eq!(inversions(&mut [4.0, 3.0, 2.0, 1.0]), 6);
    }

    fn adm(order: u64, lo: u64, hi: u64) -> Admission {
        Admission { order, lo, hi }
    }

    #[test]
    fn an_inversion_counts_only_when_the_reads_prove_it() {
        // In order: 1 seen admitted before 2's last waiting read.
        assert_eq!(proven_inversions(&[adm(1, 0, 10), adm(2, 20, 30)]), 0);
        // 2 seen admitted (hi 10) before 1 last read waiting (lo 20): proven.
        assert_eq!(proven_inversions(&[adm(1, 20, 30), adm(2, 0, 10)]), 1);
        // Overlapping windows: cannot tell, not counted.
        assert_eq!(proven_inversions(&[adm(1, 5, 30), adm(2, 0, 10)]), 0);
        // Equal instants prove nothing either.
        assert_eq!(proven_inversions(&[adm(1, 10, 30), adm(2, 0, 10)]), 0);
    }

    #[test]
    fn proven_inversions_match_the_pairwise_count() {
        let mut r = crate::rng::Rng::new(9);
        let items: Vec<_> = (0..300)
            .map(|i| {
                let lo = r.below(1000);
                adm(i, lo, lo + r.below(50))
            })
            .collect();
        let mut slow = 0;
        for a in &items {
            for b in &items {
                if a.order < b.order && b.hi < a.lo {
                    slow += 1;
                }
            }
        }
        assert_eq!(proven_inversions(&items), slow);
    }

    #[test]
    fn percentiles_and_eta_error() {
        let s = spread((1..=100).map(f64::from).collect());
        assert_eq!(
            (s.count, s.p50, s.p95, s.p99, s.max),
            (100, 50.0, 95.0, 99.0, 100.0)
        );
        assert!(spread(Vec::new()).p50.is_nan());
        assert_eq!(eta_error(40, 50_000), Some(0.2));
        assert_eq!(eta_error(60, 50_000), Some(0.2));
        assert_eq!(eta_error(1, 0), None);
    }
}
