//! The gate's cost per request, natively: the whole decision for a
//! protected request with a valid entry token (token verification
//! included), for an unprotected path, for a held browser (decision plus
//! rendering the waiting page), and for a held API call (decision plus the
//! JSON 429).
//!
//! Run: `cargo bench -p edge`. The recorded figures are in BENCHMARKS.md,
//! under "The edge".

// A benchmark's set-up is fixed and its own: a failure stops it loudly.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::hint::black_box;
use std::sync::LazyLock;

use criterion::{Criterion, criterion_group, criterion_main};
use edge::health::QueueHealth;
use edge::page::Page;
use edge::reply::Reply;
use edge::revoked::Revoked;
use edge::{Decision, EdgeConfig, Input, Pass, decide};
use token::{Claims, Keyring, Kind};

const NOW: u64 = 1_800_000_000;
const KEYS: &str = "k2:bench-secret-two-0123456789,k1:bench-secret-one-0123456789";

fn config() -> EdgeConfig {
    EdgeConfig::from_vars(|name| {
        Some(
            match name {
                "ORIGIN_URL" => "https://origin.example.com",
                "ROOMS" => {
                    r#"[{"room":"spring-launch-2025","paths":["/book/","/api/"]},{"room":"vip","paths":["/vip/"]}]"#
                }
                "BYPASS_PATHS" => r#"["/static/","/favicon.ico"]"#,
                "SIGNING_KEYS" => KEYS,
                "EDGE_SECRET" => "bench-edge-secret-0123456789",
                "BYPASS_SECRET" => "bench-bypass-secret-0123456789",
                _ => return None,
            }
            .to_owned(),
        )
    })
    .expect("bench config is valid")
}

fn input<'r>(path: &'r str, accept: &'r str, cookie: Option<&'r str>) -> Input<'r> {
    Input {
        method: "GET",
        path,
        query: "perf=12",
        accept: Some(accept),
        sec_fetch_mode: Some("navigate"),
        origin: None,
        access_control_request_method: None,
        accept_language: Some("ko-KR,ko;q=0.9,en-US;q=0.8,en;q=0.7"),
        cookie,
        entry_token: None,
        bypass: None,
        now: NOW,
        queue: QueueHealth::Up,
        revoked: &NONE_REVOKED,
    }
}

/// No session revoked: what almost every request sees.
static NONE_REVOKED: LazyLock<Revoked> = LazyLock::new(Revoked::default);

fn bench(c: &mut Criterion) {
    let cfg = config();
    let page = Page::new(&cfg.page);
    let token = Keyring::parse(KEYS).expect("keys").sign(&Claims {
        kind: Kind::Entry,
        room: "spring-launch-2025".to_owned(),
        visitor: 0x0123_4567_89ab_cdef_0011_2233_4455_6677,
        seq: 123_456,
        issued_at: NOW - 60,
        expires_at: NOW + 600,
        account: None,
    });
    // A realistic cookie header: analytics cookies around the entry token.
    let cookie = format!(
        "_ga=GA1.1.123456789.1700000000; session=abcdef0123456789; wr_ticket_spring-launch-2025=x.y; wr_entry_spring-launch-2025={token}; theme=dark"
    );
    let html = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";

    let admitted = input("/book/seats", html, Some(&cookie));
    assert_eq!(
        decide(&cfg, &admitted),
        Decision::Forward(Pass::Admitted("spring-launch-2025"))
    );
    c.bench_function("gate: protected, valid entry token", |b| {
        b.iter(|| decide(black_box(&cfg), black_box(&admitted)))
    });

    let unprotected = input("/about/venue", html, Some(&cookie));
    assert_eq!(
        decide(&cfg, &unprotected),
        Decision::Forward(Pass::Unprotected)
    );
    c.bench_function("gate: unprotected path", |b| {
        b.iter(|| decide(black_box(&cfg), black_box(&unprotected)))
    });

    let held = input("/book/seats", html, None);
    c.bench_function("gate: held browser, decision + waiting page", |b| {
        b.iter(|| {
            let decision = decide(black_box(&cfg), black_box(&held));
            Reply::for_decision(&decision, &page, false)
        })
    });

    let api = input("/api/seats", "application/json", None);
    c.bench_function("gate: held API call, decision + JSON 429", |b| {
        b.iter(|| {
            let decision = decide(black_box(&cfg), black_box(&api));
            Reply::for_decision(&decision, &page, false)
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
