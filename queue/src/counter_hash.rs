//! Hash maps keyed by numbers the store gives out: members, and the seqs
//! signed from them (a seq reaches a map only from a ticket that verified).
//! No client chooses such a key, so none can make keys collide on purpose,
//! and one multiply hashes it where the default SipHash, which guards
//! against chosen collisions, cost ~800 instructions a join in the embedded
//! store and two hashes a status in the views.
//!
//! The hash keeps the counter itself in its low bits (the table's bucket)
//! and mixes only its top seven (hashbrown's tag): consecutive counters,
//! as places are taken and let in, fill consecutive buckets, a few to a
//! cache line, and a window of live counters narrower than the table never
//! collides.
//!
//! Keys a client chooses (room ids, addresses) keep the default hasher.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// A map keyed by a store-given counter.
pub type CounterMap<K, V> = HashMap<K, V, BuildHasherDefault<CounterHasher>>;
/// A set of store-given counters.
pub type CounterSet<K> = HashSet<K, BuildHasherDefault<CounterHasher>>;

/// The counter in the low bits, a multiply's top bits over its top seven.
#[derive(Default)]
pub struct CounterHasher(u64);

/// The bits hashbrown reads as a bucket's tag.
const TAG_BITS: u64 = 0xFE00_0000_0000_0000;

impl Hasher for CounterHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = self.0.rotate_left(5) ^ n;
    }

    fn finish(&self) -> u64 {
        let h = self.0;
        h ^ (h.wrapping_mul(0x517c_c1b7_2722_0a95) & TAG_BITS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_counter_keeps_its_low_bits_and_gets_mixed_tags() {
        let hash = |n: u64| {
            let mut h = CounterHasher::default();
            h.write_u64(n);
            h.finish()
        };
        let tags: std::collections::HashSet<u64> = (0..1_000u64).map(|n| hash(n) >> 57).collect();
        assert!(tags.len() > 100, "{} tags", tags.len());
        for n in [0, 1, 7, 1 << 40, 1_795_000_000_000_123] {
            assert_eq!(hash(n) & !TAG_BITS, n & !TAG_BITS);
        }
    }

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
