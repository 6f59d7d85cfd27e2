//! How honest the ETA is (`scripts/eta-bench.sh` builds it in release mode
//! and runs it; BENCHMARKS.md, "ETA honesty", has its figures).
//!
//! Three rooms, each filled while paused and then resumed:
//!
//! - rate-bound: capacity 100,000, 10/s, sessions 1 h, 400 visitors;
//! - capacity-bound: capacity 20, 20/s, sessions 5 s, 300 visitors;
//! - early leavers: capacity 20, 20/s, sessions 10 s, 300 visitors, each of
//!   whom leaves after a uniform 0-10 s inside.
//!
//! Visitors join evenly over the 20 s before the opening and poll when
//! `poll_after_ms` says (a paused room says a third of the abandon time, so
//! their first polls after the opening spread over its first 20 s). The
//! promoter ticks every 100 ms. For each visitor the ETA it was first shown
//! and the first it was shown 20 s or more after the opening are compared
//! with the wait that followed (to the tick that let it in); promises with
//! waits of 10 s or less are left out. The error is |ETA - wait| / wait.
//! Beside the ETA the status carries, the one from the achieved rate
//! (`position / admit_rate`, the simple formula, for comparison) is scored on
//! the same polls.
//!
//! The store runs on a pinned clock that this program steps from event to
//! event (store calls as the HTTP handlers make them, without HTTP), so the
//! two minutes of on-sale play out in well under a second on the embedded
//! store and in seconds on Redis (`--store redis`, a Redis the caller names,
//! default 127.0.0.1:6379; the run's keys are deleted at the end).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use clap::{Parser, ValueEnum};
use origin::queue::memory::MemoryStore;
use origin::queue::redis::{RedisConfig, RedisStore};
use origin::queue::{QueueStore, Standing, pacing};
use origin::room::{RoomId, RoomSettings, RoomState};

/// A fixed start instant (2027-01-15), so runs do not depend on the date.
const T0: u64 = 1_800_000_000_000;
/// The opening (the resume), after the joins.
const OPENING_MS: u64 = 20_000;
/// The promoter's interval.
const TICK_MS: u64 = 100;
/// When the second promise is taken, after the opening.
const LATER_MS: u64 = 20_000;
/// Promises with a shorter wait are not scored.
const MIN_WAIT_MS: u64 = 10_000;
/// The run stops here whatever happens.
const END_MS: u64 = 900_000;

#[derive(Parser, Debug)]
#[command(about = "Scores the ETA shown to waiters against their real waits")]
struct Args {
    /// Which store to run on.
    #[arg(long, value_enum, default_value_t = StoreKind::Memory)]
    store: StoreKind,
    /// The Redis to use with --store redis.
    #[arg(long, default_value = "redis://127.0.0.1:6379")]
    redis_url: String,
    /// Seed of the early leavers' times inside.
    #[arg(long, default_value_t = 16)]
    seed: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum StoreKind {
    Memory,
    Redis,
}

struct Case {
    id: &'static str,
    name: &'static str,
    capacity: u32,
    rate: f64,
    session_seconds: u32,
    visitors: usize,
    /// Each visitor leaves after a uniform time in 0..this (ms) inside.
    leaves_within_ms: Option<u64>,
}

const CASES: [Case; 3] = [
    Case {
        id: "eta-rate",
        name: "rate-bound: capacity 100,000, 10/s, sessions 1 h",
        capacity: 100_000,
        rate: 10.0,
        session_seconds: 3_600,
        visitors: 400,
        leaves_within_ms: None,
    },
    Case {
        id: "eta-capacity",
        name: "capacity-bound: capacity 20, 20/s, sessions 5 s",
        capacity: 20,
        rate: 20.0,
        session_seconds: 5,
        visitors: 300,
        leaves_within_ms: None,
    },
    Case {
        id: "eta-leavers",
        name: "early leavers: capacity 20, 20/s, sessions 10 s, leave after 0-10 s",
        capacity: 20,
        rate: 20.0,
        session_seconds: 10,
        visitors: 300,
        leaves_within_ms: Some(10_000),
    },
];

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    Tick,
    Resume,
    Poll(usize),
    Leave(usize),
}

/// A promise: when it was shown (ms after T0) and the ETA (s).
type Promise = (u64, u64);

#[derive(Default)]
struct Visitor {
    seq: u64,
    admitted_at: Option<u64>,
    first: Option<Promise>,
    later: Option<Promise>,
    first_old: Option<Promise>,
    later_old: Option<Promise>,
}

/// A small deterministic generator (xorshift64*), so runs repeat.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n.max(1)
    }
}

/// p50 and p90 of the errors of the promises that were followed by a wait
/// over [`MIN_WAIT_MS`], and how many there were.
fn score(visitors: &[Visitor], pick: impl Fn(&Visitor) -> Option<Promise>) -> (f64, f64, usize) {
    let mut errors: Vec<f64> = visitors
        .iter()
        .filter_map(|v| {
            let (shown, eta) = pick(v)?;
            let wait = v.admitted_at?.checked_sub(shown)?;
            (wait > MIN_WAIT_MS).then(|| (eta as f64 * 1000.0 - wait as f64).abs() / wait as f64)
        })
        .collect();
    errors.sort_by(f64::total_cmp);
    let q = |p: f64| {
        errors
            .get(((errors.len() as f64 * p).ceil() as usize).saturating_sub(1))
            .copied()
            .unwrap_or(f64::NAN)
    };
    (q(0.5), q(0.9), errors.len())
}

async fn play(
    store: &dyn QueueStore,
    clock: &AtomicU64,
    case: &Case,
    seed: u64,
) -> Result<Vec<Visitor>, String> {
    let err = |e: origin::queue::StoreError| e.to_string();
    let room = RoomId::parse(case.id).ok_or("bad room id")?;
    clock.store(T0, Ordering::SeqCst);
    let settings = RoomSettings {
        capacity: case.capacity,
        admit_per_second: case.rate,
        session_seconds: case.session_seconds,
        ..RoomSettings::default()
    };
    store.put_room(&room, &settings).await.map_err(err)?;
    store
        .set_state(&room, RoomState::Paused)
        .await
        .map_err(err)?;

    let mut rng = Rng(seed | 1);
    let mut events = BinaryHeap::new();
    let mut visitors: Vec<Visitor> = Vec::with_capacity(case.visitors);
    let mut by_seq = HashMap::new();
    // Everyone joins while paused, evenly over the time before the opening.
    for i in 0..case.visitors {
        let at = OPENING_MS * i as u64 / case.visitors as u64;
        clock.store(T0 + at, Ordering::SeqCst);
        let snap = store
            .join(&room, None, None)
            .await
            .map_err(err)?
            .answer()
            .ok_or("no place")?;
        let seq = snap.seq.ok_or("no seq")?;
        by_seq.insert(seq, i);
        visitors.push(Visitor {
            seq,
            ..Visitor::default()
        });
        let next = at + pacing::poll_after_ms(snap.standing, &snap.line);
        events.push(Reverse((next, Event::Poll(i))));
    }
    events.push(Reverse((OPENING_MS, Event::Resume)));
    for t in (0..END_MS).step_by(TICK_MS as usize) {
        events.push(Reverse((t, Event::Tick)));
    }

    let mut left_to_admit = case.visitors;
    while let Some(Reverse((at, event))) = events.pop() {
        if left_to_admit == 0 || at >= END_MS {
            break;
        }
        clock.store(T0 + at, Ordering::SeqCst);
        match event {
            Event::Resume => store.set_state(&room, RoomState::Open).await.map_err(err)?,
            Event::Tick => {
                for seq in store.tick(&room).await.map_err(err)?.admitted {
                    let Some(&i) = by_seq.get(&seq) else { continue };
                    visitors[i].admitted_at = Some(at);
                    left_to_admit -= 1;
                    if let Some(within) = case.leaves_within_ms {
                        events.push(Reverse((at + rng.below(within), Event::Leave(i))));
                    }
                }
            }
            Event::Leave(i) => {
                store.leave(&room, visitors[i].seq).await.map_err(err)?;
            }
            Event::Poll(i) => {
                let v = &mut visitors[i];
                if v.admitted_at.is_some() {
                    continue; // it learns at this poll; nothing more to score
                }
                let snap = store.status(&room, v.seq).await.map_err(err)?;
                let line = &snap.line;
                let eta = pacing::eta_seconds(snap.standing, line);
                let old = match snap.standing {
                    Standing::Waiting { position: Some(p) }
                        if line.state == RoomState::Open && line.admit_rate > 1e-6 =>
                    {
                        Some((p as f64 / line.admit_rate).ceil() as u64)
                    }
                    _ => None,
                };
                let later = at >= OPENING_MS + LATER_MS;
                for (shown, first, second) in [
                    (eta, &mut v.first, &mut v.later),
                    (old, &mut v.first_old, &mut v.later_old),
                ] {
                    if let Some(s) = shown {
                        first.get_or_insert((at, s));
                        if later {
                            second.get_or_insert((at, s));
                        }
                    }
                }
                let next = at + pacing::poll_after_ms(snap.standing, line);
                events.push(Reverse((next, Event::Poll(i))));
            }
        }
    }
    Ok(visitors)
}

fn pct(x: f64) -> String {
    if x.is_nan() {
        "-".into()
    } else {
        format!("{:.0}%", x * 100.0)
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args = Args::parse();
    let clock = Arc::new(AtomicU64::new(T0));
    let prefix = format!("wr-eta-bench-{}:", std::process::id());
    let store: Arc<dyn QueueStore> = match args.store {
        StoreKind::Memory => Arc::new(MemoryStore::with_fixed_clock(clock.clone())),
        StoreKind::Redis => match RedisStore::connect(&RedisConfig {
            url: args.redis_url.clone(),
            prefix: prefix.clone(),
            timeout: Duration::from_secs(5),
            cluster: false,
        }) {
            Ok(s) => Arc::new(s.with_fixed_clock(clock.clone())),
            Err(e) => {
                eprintln!("cannot use Redis at {}: {e}", args.redis_url);
                return ExitCode::FAILURE;
            }
        },
    };
    println!(
        "ETA error |eta - wait| / wait, waits over {} s; store: {:?}",
        MIN_WAIT_MS / 1000,
        args.store
    );
    println!(
        "| room | first ETA shown: p50 / p90 (n) | ETA seen {} s after opening | achieved-rate formula, same polls: first / +{} s |",
        LATER_MS / 1000,
        LATER_MS / 1000
    );
    println!("|---|---|---|---|");
    let started = Instant::now();
    let mut failed = false;
    for case in &CASES {
        match play(store.as_ref(), &clock, case, args.seed).await {
            Ok(v) => {
                let (a50, a90, an) = score(&v, |v| v.first);
                let (b50, b90, bn) = score(&v, |v| v.later);
                let (c50, c90, _) = score(&v, |v| v.first_old);
                let (d50, d90, _) = score(&v, |v| v.later_old);
                let unadmitted = v.iter().filter(|v| v.admitted_at.is_none()).count();
                println!(
                    "| {} | {} / {} ({an}) | {} / {} ({bn}) | {} / {} ; {} / {} |{}",
                    case.name,
                    pct(a50),
                    pct(a90),
                    pct(b50),
                    pct(b90),
                    pct(c50),
                    pct(c90),
                    pct(d50),
                    pct(d90),
                    if unadmitted > 0 {
                        format!(" ({unadmitted} never let in)")
                    } else {
                        String::new()
                    }
                );
            }
            Err(e) => {
                eprintln!("{}: {e}", case.name);
                failed = true;
            }
        }
    }
    println!("(ran in {:.1} s)", started.elapsed().as_secs_f64());
    if args.store == StoreKind::Redis
        && let Err(e) = delete_keys(&args.redis_url, &prefix).await
    {
        eprintln!("could not delete the run's keys ({prefix}*): {e}");
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// Deletes every key under the run's prefix.
async fn delete_keys(url: &str, prefix: &str) -> redis::RedisResult<()> {
    let client = redis::Client::open(url)?;
    let mut conn = client.get_multiplexed_async_connection().await?;
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{prefix}*"))
        .query_async(&mut conn)
        .await?;
    if !keys.is_empty() {
        redis::cmd("DEL")
            .arg(keys)
            .query_async::<()>(&mut conn)
            .await?;
    }
    Ok(())
}
