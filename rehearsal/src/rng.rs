//! A small deterministic generator (xorshift64*), so a run with the same
//! `--seed` plays the same visitors: same arrivals, same choices.

/// The generator's state; never zero.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed` (any value; zero is mapped to a non-zero state).
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    /// The next raw 64 bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in 0..n (0 when n is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next_u64() % n }
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    /// `ms` spread uniformly by ±`spread` (0.2 = ±20 %), as the waiting page's `jitter`.
    pub fn jitter(&mut self, ms: f64, spread: f64) -> f64 {
        ms * (1.0 - spread + 2.0 * spread * self.unit())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_draws_and_units_stay_in_range() {
        let (mut a, mut b) = (Rng::new(7), Rng::new(7));
        for _ in 0..1000 {
            let u = a.unit();
            assert_eq!(u, b.unit());
            assert!((0.0..1.0).contains(&u));
        }
        assert_eq!(Rng::new(0).below(0), 0);
        let j = Rng::new(3).jitter(1000.0, 0.2);
        assert!((800.0..=1200.0).contains(&j));
    }
}
