//! How honest the ETA is (`scripts/eta-bench.sh` builds it in release mode
//! and runs it; BENCHMARKS.md, "ETA honesty", has its figures).
//!
//! Five rooms:
//!
//! - rate-bound: capacity 100,000, 10/s, sessions 1 h, 400 visitors;
//! - capacity-bound: capacity 20, 20/s, sessions 5 s, 300 visitors;
//! - early leavers: capacity 20, 20/s, sessions 10 s, 300 visitors, each of
//!   whom leaves after a uniform 0-10 s inside;
//! - quick bookers: capacity 20, 20/s, sessions 60 s, 300 visitors, each of
//!   whom is done after a uniform 2-6 s inside (sessions that run their
//!   length and people who book in seconds look alike at first);
//! - a small room: capacity 5, 5/s, sessions 60 s, 150 visitors, each of
//!   whom is done after a uniform 5-15 s inside (few stays end in any
//!   window, so the measure of them stays rough).
//!
//! Each room opens twice: first as a new room (created paused, filled, then
//! resumed: nothing seen yet of how long anyone stays), then once the first
//! line is through, paused again, filled again and resumed (the room's
//! measure of the stays carried across the pause). Visitors join evenly over
//! the 20 s before an opening; at the opening every waiter hears of it within
//! its first second (a held poll answered by the resume), some before the
//! first tick after it, and polls as `poll_after_ms` says from then on. The
//! promoter ticks every 100 ms.
//!
//! For each visitor, the first ETA shown from the opening on (a status may
//! show none while the stays are too little known; the first number shown
//! is the promise) and the first shown 20 s or more after it are compared
//! with the wait that followed (to the tick that let it in); promises with
//! waits of 10 s or less are left out. The error is |ETA - wait| / wait.
//! Beside it: how many first answers at the opening showed no ETA, and how
//! long after the opening the first number came (p90). The ETA from the
//! achieved rate (`position / admit_rate`, the simple formula) is scored on
//! the same polls for comparison.
//!
//! The store runs on a pinned clock that this program steps from event to
//! event (store calls as the HTTP handlers make them, without HTTP), so the
//! minutes of on-sale play out in about a second on the embedded store and
//! in seconds on Redis (`--store redis`, a Redis the caller names, default
//! 127.0.0.1:6379; the run's keys are deleted at the end).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bench::pinned::{StoreKind, delete_keys, pinned_store};
use clap::Parser;
use origin::queue::{QueueStore, Standing, pacing};
use origin::room::{RoomId, RoomSettings, RoomState};

/// A fixed start instant (2027-01-15), so runs do not depend on the date.
const T0: u64 = 1_800_000_000_000;
/// How long the line fills before an opening.
const FILL_MS: u64 = 20_000;
/// Within how long of an opening every waiter hears of it.
const HEARD_WITHIN_MS: u64 = 1_000;
/// The promoter's interval.
const TICK_MS: u64 = 100;
/// When the second promise is taken, after the opening.
const LATER_MS: u64 = 20_000;
/// Promises with a shorter wait are not scored.
const MIN_WAIT_MS: u64 = 10_000;
/// The run stops here whatever happens.
const END_MS: u64 = 1_800_000;

#[derive(Parser, Debug)]
#[command(about = "Scores the ETA shown to waiters against their real waits")]
struct Args {
    /// Which store to run on.
    #[arg(long, value_enum, default_value_t = StoreKind::Memory)]
    store: StoreKind,
    /// The Redis to use with --store redis.
    #[arg(long, default_value = "redis://127.0.0.1:6379")]
    redis_url: String,
    /// Seed of the early leavers' times inside and of the polls at the opening.
    #[arg(long, default_value_t = 16)]
    seed: u64,
}

struct Case {
    id: &'static str,
    name: &'static str,
    capacity: u32,
    rate: f64,
    session_seconds: u32,
    visitors: usize,
    /// Each visitor is done after a uniform time in this range (ms) inside.
    leaves_within_ms: Option<(u64, u64)>,
}

const CASES: [Case; 5] = [
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
        leaves_within_ms: Some((0, 10_000)),
    },
    Case {
        id: "eta-bookers",
        name: "quick bookers: capacity 20, 20/s, sessions 60 s, done after 2-6 s",
        capacity: 20,
        rate: 20.0,
        session_seconds: 60,
        visitors: 300,
        leaves_within_ms: Some((2_000, 6_000)),
    },
    Case {
        id: "eta-small",
        name: "small room: capacity 5, 5/s, sessions 60 s, done after 5-15 s",
        capacity: 5,
        rate: 5.0,
        session_seconds: 60,
        visitors: 150,
        leaves_within_ms: Some((5_000, 15_000)),
    },
];

/// The two openings of each room.
const OPENINGS: [&str; 2] = ["first opening", "reopened after a pause"];

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    Tick,
    Pause,
    Resume(usize),
    Join(usize),
    /// A visitor's poll; superseded when its `u32` is not the visitor's
    /// latest.
    Poll(usize, u32),
    Leave(usize),
}

/// A promise: when it was shown (ms after T0) and the ETA (s).
type Promise = (u64, u64);

#[derive(Default)]
struct Visitor {
    /// Which opening it waits for.
    wave: usize,
    seq: u64,
    /// Its latest poll event.
    poll: u32,
    admitted_at: Option<u64>,
    /// Whether the first answer after the opening showed an ETA.
    first_answer: Option<bool>,
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

/// The p-th quantile (nearest rank) of sorted values; NaN when empty.
fn quantile(sorted: &[f64], p: f64) -> f64 {
    sorted
        .get(((sorted.len() as f64 * p).ceil() as usize).saturating_sub(1))
        .copied()
        .unwrap_or(f64::NAN)
}

/// p50 and p90 of the errors of the promises that were followed by a wait
/// over [`MIN_WAIT_MS`], and how many there were.
fn score(visitors: &[&Visitor], pick: impl Fn(&Visitor) -> Option<Promise>) -> (f64, f64, usize) {
    let mut errors: Vec<f64> = visitors
        .iter()
        .filter_map(|v| {
            let (shown, eta) = pick(v)?;
            let wait = v.admitted_at?.checked_sub(shown)?;
            (wait > MIN_WAIT_MS).then(|| (eta as f64 * 1000.0 - wait as f64).abs() / wait as f64)
        })
        .collect();
    errors.sort_by(f64::total_cmp);
    (quantile(&errors, 0.5), quantile(&errors, 0.9), errors.len())
}

/// One room's run: both openings, every visitor of both.
struct Run {
    visitors: Vec<Visitor>,
    /// When each opening was (ms after T0).
    openings: [u64; 2],
}

async fn play(
    store: &dyn QueueStore,
    clock: &AtomicU64,
    case: &Case,
    seed: u64,
) -> Result<Run, String> {
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
    let n = case.visitors;
    let mut visitors: Vec<Visitor> = (0..2 * n)
        .map(|i| Visitor {
            wave: i / n,
            ..Visitor::default()
        })
        .collect();
    let mut by_seq = HashMap::new();
    let mut openings = [FILL_MS, u64::MAX];
    // The first line joins the paused new room, evenly before the opening.
    for i in 0..n {
        events.push(Reverse((FILL_MS * i as u64 / n as u64, Event::Join(i))));
    }
    events.push(Reverse((FILL_MS, Event::Resume(0))));
    events.push(Reverse((0, Event::Tick)));

    let mut left_to_admit = [n, n];
    while let Some(Reverse((at, event))) = events.pop() {
        if left_to_admit == [0, 0] || at >= END_MS {
            break;
        }
        clock.store(T0 + at, Ordering::SeqCst);
        match event {
            Event::Pause => store
                .set_state(&room, RoomState::Paused)
                .await
                .map_err(err)?,
            Event::Resume(wave) => {
                store.set_state(&room, RoomState::Open).await.map_err(err)?;
                // Every waiter hears of the opening within its first second.
                for (i, v) in visitors.iter_mut().enumerate() {
                    if v.wave == wave && v.admitted_at.is_none() {
                        v.poll += 1;
                        let heard = at + rng.below(HEARD_WITHIN_MS);
                        events.push(Reverse((heard, Event::Poll(i, v.poll))));
                    }
                }
            }
            Event::Join(i) => {
                let snap = store
                    .join(&room, None, None)
                    .await
                    .map_err(err)?
                    .answer()
                    .ok_or("no place")?;
                let v = &mut visitors[i];
                v.seq = snap.seq.ok_or("no seq")?;
                by_seq.insert(v.seq, i);
                v.poll += 1;
                let next = at + pacing::poll_after_ms(snap.standing, &snap.line);
                events.push(Reverse((next, Event::Poll(i, v.poll))));
            }
            Event::Tick => {
                events.push(Reverse((at + TICK_MS, Event::Tick)));
                for seq in store.tick(&room).await.map_err(err)?.admitted {
                    let Some(&i) = by_seq.get(&seq) else { continue };
                    let v = &mut visitors[i];
                    v.admitted_at = Some(at);
                    left_to_admit[v.wave] -= 1;
                    if let Some((from, to)) = case.leaves_within_ms {
                        let stay = from + rng.below(to - from);
                        events.push(Reverse((at + stay, Event::Leave(i))));
                    }
                    // The first line is through: pause, let the second
                    // line fill, open again.
                    if v.wave == 0 && left_to_admit[0] == 0 {
                        let paused = at + 1;
                        for j in n..2 * n {
                            let join = paused + FILL_MS * (j - n) as u64 / n as u64;
                            events.push(Reverse((join, Event::Join(j))));
                        }
                        events.push(Reverse((paused, Event::Pause)));
                        // On the promoter's beat, as the first opening.
                        let open = (paused + FILL_MS).div_ceil(TICK_MS) * TICK_MS;
                        openings[1] = open;
                        events.push(Reverse((open, Event::Resume(1))));
                    }
                }
            }
            Event::Leave(i) => {
                store.leave(&room, visitors[i].seq).await.map_err(err)?;
            }
            Event::Poll(i, poll) => {
                let v = &mut visitors[i];
                if v.admitted_at.is_some() || poll != v.poll {
                    continue; // it learns at this poll, or polled again since
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
                let opening = openings[v.wave];
                if at >= opening {
                    v.first_answer.get_or_insert(eta.is_some());
                    let later = at >= opening + LATER_MS;
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
                }
                v.poll += 1;
                let next = at + pacing::poll_after_ms(snap.standing, line);
                events.push(Reverse((next, Event::Poll(i, v.poll))));
            }
        }
    }
    Ok(Run { visitors, openings })
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
    let timeout = Duration::from_secs(5);
    let store = match pinned_store(args.store, &args.redis_url, &prefix, clock.clone(), timeout) {
        Ok(store) => store,
        Err(e) => {
            eprintln!("cannot use Redis at {}: {e}", args.redis_url);
            return ExitCode::FAILURE;
        }
    };
    println!(
        "ETA error |eta - wait| / wait, waits over {} s; store: {:?}",
        MIN_WAIT_MS / 1000,
        args.store
    );
    println!(
        "| room | opening | first ETA shown: p50 / p90 (n) | ETA seen {} s after opening | no ETA at the first answer; first number by (p90) | achieved-rate formula, same polls: first / +{} s |",
        LATER_MS / 1000,
        LATER_MS / 1000
    );
    println!("|---|---|---|---|---|---|");
    let started = Instant::now();
    let mut failed = false;
    for case in &CASES {
        let run = match play(store.as_ref(), &clock, case, args.seed).await {
            Ok(run) => run,
            Err(e) => {
                eprintln!("{}: {e}", case.name);
                failed = true;
                continue;
            }
        };
        for (wave, opening) in OPENINGS.iter().enumerate() {
            let v: Vec<&Visitor> = run.visitors.iter().filter(|v| v.wave == wave).collect();
            let (a50, a90, an) = score(&v, |v| v.first);
            let (b50, b90, bn) = score(&v, |v| v.later);
            let (c50, c90, _) = score(&v, |v| v.first_old);
            let (d50, d90, _) = score(&v, |v| v.later_old);
            let blank = v.iter().filter(|v| v.first_answer == Some(false)).count();
            let mut first_by: Vec<f64> = v
                .iter()
                .filter_map(|v| Some(v.first?.0.saturating_sub(run.openings[wave]) as f64 / 1000.0))
                .collect();
            first_by.sort_by(f64::total_cmp);
            let unadmitted = v.iter().filter(|v| v.admitted_at.is_none()).count();
            println!(
                "| {} | {opening} | {} / {} ({an}) | {} / {} ({bn}) | {blank} of {}; {:.1} s | {} / {} ; {} / {} |{}",
                case.name,
                pct(a50),
                pct(a90),
                pct(b50),
                pct(b90),
                v.len(),
                quantile(&first_by, 0.9),
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
