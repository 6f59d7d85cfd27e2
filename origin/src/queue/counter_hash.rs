//! Hash maps keyed by numbers the store gives out: members, and the seqs
//! signed from them (a seq reaches a map only from a ticket that verified).
//! No client chooses such a key, so none can make keys collide on purpose,
//! and one multiply (Fx's) hashes it where the default SipHash, which
//! guards against chosen collisions, cost ~800 instructions a join in the
//! embedded store and two hashes a status in the views.
//!
//! Keys a client chooses (room ids, addresses) keep the default hasher.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// A map keyed by a store-given counter.
pub type CounterMap<K, V> = HashMap<K, V, BuildHasherDefault<CounterHasher>>;
/// A set of store-given counters.
pub type CounterSet<K> = HashSet<K, BuildHasherDefault<CounterHasher>>;

/// Fx's hash: rotate, xor, multiply.
#[derive(Default)]
pub struct CounterHasher(u64);

impl Hasher for CounterHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, n: u64) {
        // The multiplier is odd, so consecutive counters fill consecutive
        // buckets and the top bits (hashbrown's tags) are well mixed.
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x517c_c1b7_2722_0a95);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_hash_apart_and_maps_work() {
        let mut set: CounterSet<u64> = CounterSet::default();
        for n in 0..10_000u64 {
            assert!(set.insert(1_795_000_000_000_000 + n));
        }
        assert_eq!(set.len(), 10_000);
        assert!(set.contains(&1_795_000_000_000_000));
        assert!(!set.contains(&1_795_000_000_010_000));
        let mut map: CounterMap<u64, u64> = CounterMap::default();
        map.insert(7, 1);
        *map.entry(7).or_default() += 1;
        assert_eq!(map.get(&7), Some(&2));
    }
}
