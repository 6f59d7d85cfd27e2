//! What the pre-queue draw costs at the opening (BENCHMARKS.md, "The
//! pre-queue draw"): a room's pre-queue of `--waiters` joins (in batches,
//! as an instance sends them), the opening, then ticks until the first
//! admissions: the first tick starts the draw (draw values computed in
//! Rust, scores written in chunks; a large one goes on in the background)
//! and lets nobody in. Prints the time from the opening to the first
//! admissions (per 100,000 waiters) and the longest tick, and checks the
//! first admitted are the draw's first (recomputed from the seed the store
//! tells).
//!
//! The store's clock is pinned (the opening is a step of it). `--store
//! redis` uses a Redis the caller names (default 127.0.0.1:6379); the run's
//! keys are deleted at the end.

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bench::pinned::{StoreKind, delete_keys, pinned_store};
use clap::Parser;
use origin::queue::{JoinRequest, QueueStore, draw};
use origin::room::{RoomId, RoomSettings};

/// A fixed start instant (2027-01-15), so runs do not depend on the date.
const T0: u64 = 1_800_000_000_000;
/// Joins per store call, about what one instance's batch holds in a rush.
const BATCH: usize = 1_000;

#[derive(Parser, Debug)]
#[command(about = "Times the pre-queue draw at a room's opening")]
struct Args {
    /// Which store to run on.
    #[arg(long, value_enum, default_value_t = StoreKind::Memory)]
    store: StoreKind,
    /// The Redis to use with --store redis.
    #[arg(long, default_value = "redis://127.0.0.1:6379")]
    redis_url: String,
    /// The pre-queue's size.
    #[arg(long, default_value_t = 100_000)]
    waiters: usize,
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> ExitCode {
    let args = Args::parse();
    let clock = Arc::new(AtomicU64::new(T0));
    let prefix = format!("wr-draw-bench-{}:", std::process::id());
    let timeout = Duration::from_secs(30);
    let store = match pinned_store(args.store, &args.redis_url, &prefix, clock.clone(), timeout) {
        Ok(store) => store,
        Err(e) => {
            eprintln!("cannot use Redis at {}: {e}", args.redis_url);
            return ExitCode::FAILURE;
        }
    };
    let outcome = play(store.as_ref(), &clock, args.waiters).await;
    if args.store == StoreKind::Redis
        && let Err(e) = delete_keys(&args.redis_url, &prefix).await
    {
        eprintln!("could not delete the run's keys ({prefix}*): {e}");
    }
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("draw bench: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn play(store: &dyn QueueStore, clock: &AtomicU64, waiters: usize) -> Result<(), String> {
    let room = RoomId::parse("draw-bench").ok_or("bad room id")?;
    let opens = T0 + 60_000;
    let settings = RoomSettings {
        capacity: 1_000_000,
        admit_per_second: 1_000.0,
        abandon_seconds: 86_400,
        opens_at: time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(opens) * 1_000_000)
            .ok(),
        ..RoomSettings::default()
    };
    store
        .put_room(&room, &settings)
        .await
        .map_err(|e| e.to_string())?;
    let started = Instant::now();
    let mut seqs = Vec::with_capacity(waiters);
    let batch = vec![JoinRequest::default(); BATCH];
    while seqs.len() < waiters {
        let n = BATCH.min(waiters - seqs.len());
        let answers = store
            .join_many(&room, batch.get(..n).ok_or("batch")?)
            .await
            .map_err(|e| e.to_string())?;
        seqs.extend(
            answers
                .iter()
                .filter_map(|a| a.answer().and_then(|s| s.seq)),
        );
    }
    let joined = started.elapsed();
    clock.store(opens, Ordering::SeqCst);
    let view = store
        .draw(&room)
        .await
        .map_err(|e| e.to_string())?
        .ok_or("no draw")?;
    let seed = view.seed.ok_or("the seed is not told at the opening")?;

    // Ticks every 100 ms of the store's clock (as fast as they return),
    // until the first admissions: the first applies the draw (a large one
    // goes on in the background) and lets nobody in.
    let opened = Instant::now();
    let mut longest = Duration::ZERO;
    let mut ticks = 0;
    let admitted = loop {
        let t = Instant::now();
        let report = store.tick(&room).await.map_err(|e| e.to_string())?;
        longest = longest.max(t.elapsed());
        ticks += 1;
        if !report.admitted.is_empty() {
            break report.admitted;
        }
        if ticks == 1_000 {
            return Err("nobody let in after 1,000 ticks".into());
        }
        clock.fetch_add(100, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    let to_first = opened.elapsed();
    let drawn = draw::draw_order(&seed, seqs.iter().copied());
    let front = drawn.get(..admitted.len()).ok_or("short draw")?;
    if admitted != front {
        return Err("the admitted are not the draw's first".into());
    }
    let per_100k = |d: Duration| d.as_secs_f64() * 1000.0 * 100_000.0 / waiters as f64;
    println!(
        "pre-queue of {waiters}: joined in {:.2} s; opening to the first admissions {:.0} ms ({:.0} ms per 100,000 waiters, {ticks} ticks, the longest {:.0} ms); {} let in, the draw's first",
        joined.as_secs_f64(),
        to_first.as_secs_f64() * 1000.0,
        per_100k(to_first),
        longest.as_secs_f64() * 1000.0,
        admitted.len(),
    );
    Ok(())
}
