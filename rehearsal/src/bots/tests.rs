//! Bots and people against a stub origin that asks every join for a
//! proof of work, as the contract says: 428 with a seed without a solution,
//! 403 for a bad one, and one place per solution (a solution used again
//! gets the place it got).

use std::collections::HashMap;
use std::io::{Read, Write};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use token::{Claims, Keyring, Kind};

use super::*;
use crate::visitor::{Ctx, Outcome, Plan};

const ROOM: &str = "r";
const BITS: u8 = 10;
const KEYS: &str = "k1:rehearsal-stub-secret-0123456789";

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// What the stub saw and gave.
#[derive(Default)]
struct Seen {
    seeds: AtomicU64,
    refused: AtomicU64,
    /// Places by the seed they were solved for.
    places: Mutex<HashMap<[u8; 8], u64>>,
}

/// A loopback origin for room `r`: joins need a solution at [`BITS`]; an
/// accepted join is `state` (`admitted` or `sold_out`) with a ticket.
fn stub(state: &'static str) -> (String, Arc<Seen>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    let seen = Arc::new(Seen::default());
    let s = seen.clone();
    std::thread::spawn(move || {
        let keys = Keyring::parse(KEYS).expect("keys");
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let mut buf = vec![0u8; 8192];
            let n = conn.read(&mut buf).unwrap_or(0);
            let req = String::from_utf8_lossy(&buf[..n]).to_string();
            let line = req.lines().next().unwrap_or("").to_owned();
            let solution = req.lines().find_map(|l| {
                let (name, value) = l.split_once(':')?;
                name.eq_ignore_ascii_case(token::CHALLENGE_HEADER)
                    .then(|| value.trim().to_owned())
            });
            let now = unix_now();
            let (status, cookie, body) = if line.starts_with("POST /queue/r/leave") {
                ("204 No Content", None, String::new())
            } else if let Some(sol) = solution {
                match keys.check_solution(&sol, ROOM, BITS, now) {
                    Ok(solved) => {
                        let mut places = s.places.lock().unwrap();
                        let next = places.len() as u64 + 1;
                        let seq = *places.entry(solved.key).or_insert(next);
                        let ticket = keys.sign(&Claims {
                            kind: Kind::Ticket,
                            room: ROOM.into(),
                            visitor: u128::from(seq),
                            seq,
                            issued_at: now,
                            expires_at: now + 600,
                            account: None,
                        });
                        (
                            "200 OK",
                            Some(format!("wr_ticket_r={ticket}; Path=/")),
                            format!(r#"{{"state":"{state}"}}"#),
                        )
                    }
                    Err(_) => {
                        s.refused.fetch_add(1, Relaxed);
                        (
                            "403 Forbidden",
                            None,
                            r#"{"error":{"code":"challenge_failed","message":"no"}}"#.into(),
                        )
                    }
                }
            } else {
                let i = s.seeds.fetch_add(1, Relaxed);
                let mut random = [0u8; token::SEED_RANDOM_LEN];
                random[..8].copy_from_slice(&i.to_be_bytes());
                let seed = keys.sign_seed(ROOM, now + 300, random);
                (
                    "428 Precondition Required",
                    None,
                    format!(
                        r#"{{"error":{{"code":"challenge_required","message":"solve"}},"challenge":{{"kind":"pow","seed":"{seed}","bits":{BITS},"expires_at":"x"}}}}"#
                    ),
                )
            };
            let cookie = cookie.map_or(String::new(), |c| format!("set-cookie: {c}\r\n"));
            let _ = write!(
                conn,
                "HTTP/1.1 {status}\r\ncontent-type: application/json\r\n{cookie}content-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (format!("http://{addr}"), seen)
}

fn ctx(base: &str, run_for: Duration) -> Arc<Ctx> {
    let start = Instant::now();
    Arc::new(Ctx {
        http: crate::client::Http::new(base, ROOM, 64).expect("client"),
        room: ROOM.into(),
        performance: "p".into(),
        start,
        deadline: start + run_for,
        counters: Default::default(),
        keys: Some(Keyring::parse(KEYS).expect("keys")),
    })
}

async fn play_all(ctx: &Arc<Ctx>, bots: Bots, n: usize) -> Vec<BotLog> {
    let bots = Arc::new(bots);
    let tasks: Vec<_> = (0..n)
        .map(|i| {
            tokio::spawn(play(
                ctx.clone(),
                bots.clone(),
                BotPlan {
                    arrive_ms: 0,
                    seed: i as u64,
                },
            ))
        })
        .collect();
    let mut logs = Vec::new();
    for t in tasks {
        logs.push(t.await.expect("bot"));
    }
    logs
}

#[tokio::test]
async fn a_bot_that_never_solves_gets_428s_and_no_place() {
    let (base, seen) = stub("admitted");
    // Out of time after its first try.
    let ctx = ctx(&base, Duration::from_millis(800));
    let logs = play_all(&ctx, Bots::new(BotKind::Never, 2), 3).await;
    for l in &logs {
        assert_eq!((l.joins, l.answered_428, l.answered_200), (1, 1, 0));
        assert!(l.places.is_empty() && l.errors.is_empty(), "{l:?}");
    }
    assert_eq!(seen.seeds.load(Relaxed), 3);
    assert!(seen.places.lock().unwrap().is_empty());
}

#[tokio::test]
async fn bots_sharing_one_solution_get_one_place() {
    let (base, seen) = stub("admitted");
    let ctx = ctx(&base, Duration::from_secs(30));
    let logs = play_all(&ctx, Bots::new(BotKind::Reuse, 2), 4).await;
    assert_eq!(logs.iter().map(|l| l.solves).sum::<u64>(), 1);
    let seqs: Vec<u64> = logs
        .iter()
        .flat_map(|l| l.places.iter().map(|p| p.seq))
        .collect();
    assert_eq!(seqs, vec![1; 4], "{logs:?}");
    assert!(logs.iter().all(|l| l.admitted));
    assert_eq!(seen.places.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn solving_bots_pay_for_a_place_each() {
    let (base, seen) = stub("admitted");
    let ctx = ctx(&base, Duration::from_secs(30));
    let logs = play_all(&ctx, Bots::new(BotKind::Solve, 2), 3).await;
    let mut seqs: Vec<u64> = logs
        .iter()
        .flat_map(|l| l.places.iter().map(|p| p.seq))
        .collect();
    seqs.sort_unstable();
    assert_eq!(seqs, vec![1, 2, 3]);
    for l in &logs {
        assert_eq!((l.solves, l.answered_428, l.answered_200), (1, 1, 1));
        assert!(l.hashes >= 1 && l.cpu_s >= 0.0, "{l:?}");
    }
    assert_eq!(seen.refused.load(Relaxed), 0);
}

#[tokio::test]
async fn a_person_solves_the_428_and_joins_again() {
    let (base, seen) = stub("sold_out");
    let ctx = ctx(&base, Duration::from_secs(30));
    let plan = Plan {
        index: 0,
        arrive_ms: 0,
        abandon_after_ms: None,
        seats: 1,
        declined_first: false,
        lets_hold_expire: false,
        seed: 1,
        account: None,
    };
    let log = crate::visitor::play(ctx, plan).await;
    assert_eq!(log.outcome, Outcome::SoldOut);
    assert_eq!((log.challenges, log.challenges_failed), (1, 0));
    assert_eq!(log.solves.len(), 1);
    assert!(log.errors.is_empty(), "{:?}", log.errors);
    assert_eq!(seen.places.lock().unwrap().len(), 1);
}
