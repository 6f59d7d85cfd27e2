//! The booking store's benchmark, in one run per database (MariaDB, then
//! SQLite), through the store API (no HTTP), payment latency 0:
//!
//! - `SELECT 1` through the same pool: the floor;
//! - holds with seats spread out (each hold 2 seats no one else wants);
//! - confirms of those holds;
//! - holds in one hot section (everyone wants the same 200 seats): attempts
//!   per second, p99 of a win and of a loss;
//! - confirms of the hot section's winners;
//! - a hot seat: the p99 of a loser's `SeatUnavailable`.
//!
//! Each phase runs `--concurrency` tasks at once on a multi-thread runtime
//! and prints operations per second and the p50/p99 of one call. MariaDB
//! gets a fresh `wr_bench_*` database (dropped at the end) on
//! `--mysql-server`; SQLite a temporary file. Run in release:
//! `cargo run --release -p bench --bin booking_bench`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bench::scratch_db::ScratchDb;
use clap::Parser;
use origin::booking::{
    BookingConfig, BookingError, BookingStore, PerformanceSpec, SectionSpec, SimulatedPayment,
};

#[derive(Parser)]
struct Args {
    /// The MariaDB server (no database part).
    #[arg(long, default_value = "mysql://root@127.0.0.1:3306")]
    mysql_server: String,
    /// Calls in flight at once.
    #[arg(long, default_value_t = 64)]
    concurrency: usize,
    /// Holds (and confirms) in the spread-out phases.
    #[arg(long, default_value_t = 4000)]
    holds: usize,
    /// Pool size (MariaDB); SQLite uses 8. 16 is the service's default
    /// (`BookingConfig::new`); on 2 shared cores it beat 32 (less
    /// contention inside MariaDB).
    #[arg(long, default_value_t = 16)]
    pool: u32,
    /// Skip MariaDB.
    #[arg(long)]
    no_mysql: bool,
}

const T0: u64 = 1_900_000_000_000;
const HOUR: u64 = 3_600_000;

/// One phase's figures.
struct Row {
    what: String,
    ops: usize,
    per_second: f64,
    p50: Duration,
    p99: Duration,
}

fn pct(samples: &mut [Duration], p: f64) -> Duration {
    if samples.is_empty() {
        return Duration::ZERO;
    }
    samples.sort();
    samples[(((samples.len() - 1) as f64) * p / 100.0).round() as usize]
}

/// Runs `n` calls of `f(i)` with `concurrency` in flight; returns the
/// wall time and each call's latency split by success.
async fn run<F, Fut, T>(
    n: usize,
    concurrency: usize,
    f: F,
) -> (Duration, Vec<Duration>, Vec<Duration>, Vec<T>)
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<T, BookingError>> + Send,
    T: Send + 'static,
{
    let f = Arc::new(f);
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let started = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..concurrency {
        let (f, next) = (f.clone(), next.clone());
        workers.push(tokio::spawn(async move {
            let mut ok = Vec::new();
            let mut err = Vec::new();
            let mut out = Vec::new();
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if i >= n {
                    break;
                }
                let t = Instant::now();
                match f(i).await {
                    Ok(v) => {
                        ok.push(t.elapsed());
                        out.push(v);
                    }
                    Err(BookingError::SeatUnavailable { .. }) => err.push(t.elapsed()),
                    Err(e) => panic!("unexpected error in the benchmark: {e:?}"),
                }
            }
            (ok, err, out)
        }));
    }
    let (mut ok, mut err, mut out) = (Vec::new(), Vec::new(), Vec::new());
    for w in workers {
        let (o, e, v) = w.await.expect("worker");
        ok.extend(o);
        err.extend(e);
        out.extend(v);
    }
    (started.elapsed(), ok, err, out)
}

fn row(what: &str, wall: Duration, mut samples: Vec<Duration>, count: usize) -> Row {
    Row {
        what: what.to_owned(),
        ops: count,
        per_second: count as f64 / wall.as_secs_f64(),
        p50: pct(&mut samples, 50.0),
        p99: pct(&mut samples, 99.0),
    }
}

fn spec(sections: Vec<(String, u32, u32)>) -> PerformanceSpec {
    PerformanceSpec {
        title: "Benchmark".into(),
        starts_at: time::OffsetDateTime::from_unix_timestamp(1_900_100_000).expect("time"),
        hold_seconds: 420,
        max_seats_per_hold: 4,
        max_seats_per_account: None,
        sections: sections
            .into_iter()
            .map(|(name, rows, seats_per_row)| SectionSpec {
                name,
                rows,
                seats_per_row,
                price: 5000,
            })
            .collect(),
    }
}

async fn bench(store: Arc<BookingStore>, args: &Args) -> Vec<Row> {
    let c = args.concurrency;
    let mut rows = Vec::new();

    let (wall, ok, _, _) = run(args.holds * 2, c, {
        let store = store.clone();
        move |_| {
            let store = store.clone();
            async move { store.select_one().await }
        }
    })
    .await;
    rows.push(row("SELECT 1 (same pool)", wall, ok, args.holds * 2));

    // Spread out: 20 sections of 10 x 100 seats; hold i takes two seats of
    // its own.
    let sections: Vec<_> = (0..20).map(|s| (format!("S{s}"), 10, 100)).collect();
    store
        .put_performance("bench", "spread", &spec(sections), T0)
        .await
        .expect("perf");
    let (wall, ok, _, holds) = run(args.holds, c, {
        let store = store.clone();
        move |i| {
            let store = store.clone();
            async move {
                let seat =
                    |k: usize| format!("S{}-{}-{}", k / 1000, k % 1000 / 100 + 1, k % 100 + 1);
                let want = vec![seat(2 * i % 20_000), seat((2 * i + 1) % 20_000)];
                let h = store
                    .hold("bench", "spread", i as u128, None, &want, T0 + HOUR, T0)
                    .await?;
                Ok((i, h.hold_id))
            }
        }
    })
    .await;
    let n = ok.len();
    rows.push(row("hold, spread out", wall, ok, n));
    let holds = Arc::new(holds);
    let (wall, ok, _, _) = run(holds.len(), c, {
        let (store, holds) = (store.clone(), holds.clone());
        move |k| {
            let (store, holds) = (store.clone(), holds.clone());
            async move {
                let (i, id) = &holds[k];
                store
                    .confirm("bench", *i as u128, id, "key", "tok_ok", T0 + 1000)
                    .await
            }
        }
    })
    .await;
    let n = ok.len();
    rows.push(row("confirm, spread out", wall, ok, n));

    // One hot section of 200 seats: 2,000 visitors want two seats each.
    store
        .put_performance("bench", "hot", &spec(vec![("H".into(), 2, 100)]), T0)
        .await
        .expect("perf");
    let attempts = 2000;
    let (wall, ok, lost, holds) = run(attempts, c, {
        let store = store.clone();
        move |i| {
            let store = store.clone();
            async move {
                let k = (i * 37) % 199;
                let seat = |k: usize| format!("H-{}-{}", k / 100 + 1, k % 100 + 1);
                let want = vec![seat(k), seat(k + 1)];
                let h = store
                    .hold(
                        "bench",
                        "hot",
                        100_000 + i as u128,
                        None,
                        &want,
                        T0 + HOUR,
                        T0,
                    )
                    .await?;
                Ok((100_000 + i, h.hold_id))
            }
        }
    })
    .await;
    rows.push(row(
        "hold attempt, hot section",
        wall,
        [ok.clone(), lost.clone()].concat(),
        attempts,
    ));
    rows.push(row("  of which won", wall, ok, holds.len()));
    let lost_n = lost.len();
    rows.push(row("  of which lost (409)", wall, lost, lost_n));
    let holds = Arc::new(holds);
    let (wall, ok, _, _) = run(holds.len(), c.min(holds.len().max(1)), {
        let (store, holds) = (store.clone(), holds.clone());
        move |k| {
            let (store, holds) = (store.clone(), holds.clone());
            async move {
                let (i, id) = &holds[k];
                store
                    .confirm("bench", *i as u128, id, "key", "tok_ok", T0 + 1000)
                    .await
            }
        }
    })
    .await;
    let n = ok.len();
    rows.push(row("confirm, hot section", wall, ok, n));

    // One hot seat: everyone loses but one.
    store
        .put_performance("bench", "seat", &spec(vec![("A".into(), 1, 10)]), T0)
        .await
        .expect("perf");
    let (wall, _, lost, _) = run(1000, c, {
        let store = store.clone();
        move |i| {
            let store = store.clone();
            async move {
                let want = vec!["A-1-5".to_owned()];
                store
                    .hold(
                        "bench",
                        "seat",
                        200_000 + i as u128,
                        None,
                        &want,
                        T0 + HOUR,
                        T0,
                    )
                    .await
            }
        }
    })
    .await;
    let n = lost.len();
    rows.push(row("hot seat, loser's 409", wall, lost, n));
    rows
}

fn print(name: &str, rows: &[Row]) {
    println!("\n{name}");
    println!(
        "| {:<28} | {:>6} | {:>9} | {:>9} | {:>9} |",
        "phase", "ops", "ops/s", "p50 ms", "p99 ms"
    );
    println!(
        "|{:-<30}|{:->8}|{:->11}|{:->11}|{:->11}|",
        "", "", "", "", ""
    );
    for r in rows {
        println!(
            "| {:<28} | {:>6} | {:>9.0} | {:>9.2} | {:>9.2} |",
            r.what,
            r.ops,
            r.per_second,
            r.p50.as_secs_f64() * 1000.0,
            r.p99.as_secs_f64() * 1000.0
        );
    }
}

#[tokio::main]
async fn main() {
    let args = Args::parse();
    sqlx::any::install_default_drivers();
    let payment = Arc::new(SimulatedPayment::new(Duration::ZERO, 0.0));
    println!(
        "booking benchmark: concurrency {}, {} spread holds, payment latency 0",
        args.concurrency, args.holds
    );

    if !args.no_mysql {
        let db = ScratchDb::create(&args.mysql_server).await;
        let mut config = BookingConfig::new(Some(db.url.clone()), "");
        config.max_connections = args.pool;
        config.payment = payment.clone();
        let store = Arc::new(BookingStore::connect(&config, T0).await.expect("connect"));
        let rows = bench(store.clone(), &args).await;
        store.close().await;
        db.drop_database().await;
        print(&format!("MariaDB (pool {})", args.pool), &rows);
    }

    let dir = std::env::temp_dir().join(format!("wr-booking-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let mut config = BookingConfig::new(None, dir.join("bench.sqlite"));
    config.max_connections = 8;
    config.payment = payment;
    let store = Arc::new(BookingStore::connect(&config, T0).await.expect("connect"));
    let rows = bench(store.clone(), &args).await;
    store.close().await;
    let _ = std::fs::remove_dir_all(&dir);
    print("SQLite (WAL, pool 8)", &rows);
}
