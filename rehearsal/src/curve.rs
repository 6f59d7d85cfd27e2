//! When visitors arrive: the arrival curves, as pure functions from a
//! visitor's index to its arrival time (ms after the first arrival may
//! happen). Arrivals are placed at evenly spaced quantiles of the curve, so
//! the same settings give the same arrivals and index order is arrival order.

use clap::ValueEnum;
use serde::Serialize;

/// The shape of the arrivals.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CurveKind {
    /// Evenly over `--arrive-within` seconds (1 s: everyone in the opening second).
    Burst,
    /// A rate rising from zero to its peak over `--arrive-within` seconds.
    Ramp,
    /// A steady flow over `--arrive-within` seconds, plus `--spike-share` of
    /// the visitors within one second at `--spike-at`.
    Spike,
}

/// A curve with its parameters.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Curve {
    /// The shape.
    pub kind: CurveKind,
    /// How long arrivals last, in ms.
    pub within_ms: u64,
    /// Spike only: the share of visitors in the spike, in [0, 1].
    pub spike_share: f64,
    /// Spike only: when the spike starts, in ms.
    pub spike_at_ms: u64,
}

/// How long a spike lasts.
const SPIKE_MS: u64 = 1_000;

impl Curve {
    /// Arrival time (ms) of visitor `i` of `n`, non-decreasing in `i`.
    pub fn arrival_ms(&self, i: usize, n: usize) -> u64 {
        if n == 0 {
            return 0;
        }
        // The visitor's quantile, in (0, 1).
        let q = (i as f64 + 0.5) / n as f64;
        let span = self.within_ms as f64;
        let at = match self.kind {
            CurveKind::Burst => q * span,
            // Rate ∝ t, so the share arrived by t is (t / span)².
            CurveKind::Ramp => q.sqrt() * span,
            CurveKind::Spike => {
                // The cumulative share: the steady flow's part by t plus the
                // spike's, inverted by bisection (monotone, so exact enough).
                let share = self.spike_share.clamp(0.0, 1.0);
                let spike_at = (self.spike_at_ms as f64).min(span);
                let spike_len = (SPIKE_MS as f64).min(span.max(1.0));
                let cdf = |t: f64| {
                    let steady = (1.0 - share) * (t / span.max(1.0)).clamp(0.0, 1.0);
                    let spike = share * ((t - spike_at) / spike_len).clamp(0.0, 1.0);
                    steady + spike
                };
                let (mut lo, mut hi) = (0.0, span.max(spike_at + spike_len));
                for _ in 0..60 {
                    let mid = (lo + hi) / 2.0;
                    if cdf(mid) < q { lo = mid } else { hi = mid }
                }
                hi
            }
        };
        // Floor: an arrival inside second s is counted in second s.
        at.floor() as u64
    }

    /// How many visitors arrive in each second of the curve (for the report).
    pub fn per_second(&self, n: usize) -> Vec<u64> {
        let mut out = Vec::new();
        for i in 0..n {
            let s = (self.arrival_ms(i, n) / 1000) as usize;
            match out.get_mut(s) {
                Some(count) => *count += 1,
                None => {
                    out.resize(s, 0);
                    out.push(1);
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn curve(kind: CurveKind, within_ms: u64) -> Curve {
        Curve {
            kind,
            within_ms,
            spike_share: 0.5,
            spike_at_ms: 4_000,
        }
    }

    #[test]
    fn every_curve_is_monotone_and_inside_its_span() {
        for kind in [CurveKind::Burst, CurveKind::Ramp, CurveKind::Spike] {
            let c = curve(kind, 10_000);
            let times: Vec<u64> = (0..1000).map(|i| c.arrival_ms(i, 1000)).collect();
            assert!(times.windows(2).all(|w| w[0] <= w[1]), "{kind:?}");
            assert!(*times.last().unwrap() <= 10_000, "{kind:?}");
        }
    }

    #[test]
    fn burst_is_even() {
        let per = curve(CurveKind::Burst, 10_000).per_second(1000);
        assert_eq!(per, vec![100; 10]);
    }

    #[test]
    fn ramp_rises() {
        let per = curve(CurveKind::Ramp, 10_000).per_second(10_000);
        assert_eq!(per.len(), 10);
        assert!(per.windows(2).all(|w| w[0] < w[1]), "{per:?}");
        // Rate ∝ t: the first second carries 1 %, the last 19 %.
        assert_eq!(per[0], 100);
        assert_eq!(per[9], 1900);
    }

    #[test]
    fn spike_puts_its_share_in_one_second() {
        let per = curve(CurveKind::Spike, 10_000).per_second(10_000);
        // Half steady (500 a second), half in the fifth second (give or
        // take the bisection's last digit at the seconds' edges).
        assert!(per[4].abs_diff(5500) <= 5, "{per:?}");
        assert!(per[0].abs_diff(500) <= 5, "{per:?}");
        assert_eq!(per.iter().sum::<u64>(), 10_000);
    }

    #[test]
    fn nobody_arrives_at_no_time() {
        assert_eq!(curve(CurveKind::Burst, 0).arrival_ms(0, 1), 0);
        assert!(curve(CurveKind::Spike, 0).arrival_ms(3, 5) <= 1);
    }
}
