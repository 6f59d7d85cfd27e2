//! Benchmarks for the hot paths: verifying an entry token (every request at
//! the edge) and signing one (every admission at the origin).

// A benchmark's set-up is fixed and its own: a failure stops it loudly.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use token::{Claims, Keyring, Kind};

const NOW: u64 = 1_700_000_100;

/// A rotated keyring, so verification also exercises the kid lookup past the
/// first key.
fn keyring() -> Keyring {
    Keyring::parse("k2:bench-secret-two-0123456789,k1:bench-secret-one-0123456789")
        .expect("valid bench keyring")
}

fn claims() -> Claims {
    Claims {
        kind: Kind::Entry,
        room: "spring-launch-2025".to_string(),
        visitor: 0x0123_4567_89ab_cdef_0011_2233_4455_6677,
        seq: 123_456,
        issued_at: 1_700_000_000,
        expires_at: 1_700_000_600,
        account: None,
    }
}

fn bench(c: &mut Criterion) {
    let keys = keyring();
    let claims = claims();
    let token = keys.sign(&claims);
    assert!(
        keys.verify(&token, Kind::Entry, "spring-launch-2025", NOW)
            .is_ok()
    );

    c.bench_function("verify entry token", |b| {
        b.iter(|| {
            keys.verify(
                black_box(&token),
                Kind::Entry,
                black_box("spring-launch-2025"),
                black_box(NOW),
            )
        })
    });

    c.bench_function("sign entry token", |b| {
        b.iter(|| keys.sign(black_box(&claims)))
    });

    c.bench_function("parse keyring (2 keys)", |b| b.iter(keyring));
}

criterion_group!(benches, bench);
criterion_main!(benches);
