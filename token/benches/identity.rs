//! Benchmarks for identity tokens: verifying one (every join of a room
//! that asks for identity) for each of the two algorithms, and hashing the
//! account it names.

// A benchmark's set-up is fixed and its own: a failure stops it loudly.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use token::{AccountHasher, IdentityKeys, ed25519_public_key, sign_ed25519, sign_hs256};

const NOW: u64 = 1_700_000_100;
const ROOM: &str = "spring-launch-2025";
const SECRET: &str = "bench-identity-secret-0123456789";
const SEED: [u8; 32] = [42; 32];

fn bench(c: &mut Criterion) {
    let keys = IdentityKeys::parse(
        Some(&format!(
            "hs-old:bench-identity-old-0123456789,hs1:{SECRET}"
        )),
        Some(&format!("ed1:{}", ed25519_public_key(&SEED))),
    )
    .expect("valid bench keys");
    // The claims a site typically sends: an account id, the room, times.
    let claims = serde_json::json!({
        "sub": "customer-0012345678",
        "aud": ROOM,
        "iat": NOW - 5,
        "exp": NOW + 600,
    });
    let hs256 = sign_hs256("hs1", SECRET.as_bytes(), &claims);
    let eddsa = sign_ed25519("ed1", &SEED, &claims);
    assert!(keys.verify(&hs256, ROOM, NOW).is_ok());
    assert!(keys.verify(&eddsa, ROOM, NOW).is_ok());

    c.bench_function("verify identity token (HS256)", |b| {
        b.iter(|| keys.verify(black_box(&hs256), black_box(ROOM), black_box(NOW)))
    });
    c.bench_function("verify identity token (EdDSA)", |b| {
        b.iter(|| keys.verify(black_box(&eddsa), black_box(ROOM), black_box(NOW)))
    });

    let hasher = AccountHasher::new(b"bench-account-key-0123456789");
    c.bench_function("hash account", |b| {
        b.iter(|| hasher.hash(black_box(ROOM), black_box("customer-0012345678")))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
