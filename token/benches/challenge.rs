//! Benchmarks for the join challenge: checking a solution (the seed's MAC,
//! its expiry and the hash; every pow join at the origin) and issuing a
//! seed (every join without one).

// A benchmark's set-up is fixed and its own: a failure stops it loudly.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use token::Keyring;

const NOW: u64 = 1_700_000_100;
const ROOM: &str = "spring-launch-2025";
/// The rooms' default difficulty; the check costs the same at any bits.
const BITS: u8 = 20;

/// A rotated keyring, so the check also looks the kid up past the first key.
fn keyring() -> Keyring {
    Keyring::parse("k2:bench-secret-two-0123456789,k1:bench-secret-one-0123456789")
        .expect("valid bench keyring")
}

fn bench(c: &mut Criterion) {
    let keys = keyring();
    let seed = keys.sign_seed(ROOM, NOW + 300, [7; token::SEED_RANDOM_LEN]);
    // Solved once, before any timing: about a million hashes at 20 bits.
    let (nonce, _) = token::solve(&seed, BITS, 0).expect("a nonce within u64");
    let solution = format!("{seed}.{nonce}");
    assert!(keys.check_solution(&solution, ROOM, BITS, NOW).is_ok());

    hash_rate(&keys);

    c.bench_function("check pow solution (20 bits)", |b| {
        b.iter(|| {
            keys.check_solution(
                black_box(&solution),
                black_box(ROOM),
                black_box(BITS),
                black_box(NOW),
            )
        })
    });

    c.bench_function("sign pow seed", |b| {
        b.iter(|| keys.sign_seed(black_box(ROOM), black_box(NOW + 300), black_box([7; 12])))
    });
}

/// What a solver pays: hashes a second on one thread, over 20 seeds at 16
/// bits (printed, not timed by criterion: a solve's length is luck).
fn hash_rate(keys: &Keyring) {
    let start = std::time::Instant::now();
    let mut tries = 0;
    for i in 0..20u8 {
        let seed = keys.sign_seed(ROOM, NOW + 300, [i; token::SEED_RANDOM_LEN]);
        tries += token::solve(&seed, 16, 0).expect("a nonce").1;
    }
    let per_s = tries as f64 / start.elapsed().as_secs_f64();
    eprintln!(
        "solving on one thread: {:.2} M hashes/s; 20 bits takes {:.2} s on average",
        per_s / 1e6,
        f64::from(1u32 << 20) / per_s
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
