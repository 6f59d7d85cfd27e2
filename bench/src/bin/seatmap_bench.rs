//! The seat map under holds and releases: `--viewers` tasks load a
//! `--seats` performance's map as new viewers (no `If-None-Match`), each
//! load with an entry token of its own session, for `--seconds`, first with
//! no writes, then while one writer holds two seats and releases them in a
//! loop (every pair changes the map twice). Through the real router (every
//! layer, extractor and handler) in this process, as `request_cost` does, on
//! MariaDB (a fresh `wr_bench_*` database, dropped at the end) and on an
//! SQLite file.
//!
//! A load is either the contract's `GET .../seats` (`seats`, and `seats+gzip`
//! with `Accept-Encoding: gzip`) or, where the origin serves them, the split
//! pair a new viewer fetches: `GET .../layout` then `GET .../state`
//! (`split`, and `split+gzip`). Printed per phase: loads per second, the
//! process's CPU time (user + system, from `/proc/self/stat`) per load, and
//! bytes per load. SQLite runs in this process, so its work is in the CPU
//! figure; MariaDB's server is not. The writer's own CPU is in both.
//!
//! Sessions come from a pool of `--sessions` admitted visitors used in
//! turn, so no session loads the map often (a new viewer each time, and the
//! per-session map rate limit never stands in the way). Run in release:
//! `cargo run --release -p bench --bin seatmap_bench`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{Request, StatusCode, header};
use bench::scratch_db::ScratchDb;
use clap::Parser;
use http_body_util::BodyExt;
use origin::booking::{BookingConfig, BookingStore, PerformanceSpec, SectionSpec};
use origin::queue::memory::MemoryStore;
use origin::queue::{QueueStore, Standing};
use origin::room::{RoomId, RoomSettings};
use origin::state::AppState;
use token::{Claims, Keyring, Kind};
use tower::ServiceExt;

/// The allocator the `origin` binary ships with (its `main.rs`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const KEYS: &str = "bench:bench-secret-0123456789abcdef";
const ROOM: &str = "seatmap";
const PERF: &str = "night";

#[derive(Parser)]
struct Args {
    /// The MariaDB server (no database part).
    #[arg(long, default_value = "mysql://root@127.0.0.1:3306")]
    mysql_server: String,
    /// Skip MariaDB.
    #[arg(long)]
    no_mysql: bool,
    /// Seats of the performance (sections of 100 rows of 100; at most 100,000).
    #[arg(long, default_value_t = 100_000)]
    seats: u32,
    /// Viewers loading at once.
    #[arg(long, default_value_t = 8)]
    viewers: usize,
    /// How long each phase runs, in seconds.
    #[arg(long, default_value_t = 5.0)]
    seconds: f64,
    /// Admitted sessions the loads take turns with.
    #[arg(long, default_value_t = 4_000)]
    sessions: u32,
}

/// What one load fetches.
#[derive(Clone, Copy, PartialEq)]
enum Route {
    /// The contract's full map.
    Seats,
    /// The layout, then the state.
    Split,
}

/// One phase's figures.
struct Row {
    phase: String,
    loads: u64,
    per_second: f64,
    cpu_ms_per_load: f64,
    kb_per_load: f64,
    pairs_per_second: f64,
    refused: u64,
}

/// This process's CPU time so far (user + system), from `/proc/self/stat`.
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command (which may hold spaces), counted from 3.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i - 3).and_then(|f| f.parse::<u64>().ok());
    let (user, system) = (ticks(14).unwrap_or(0), ticks(15).unwrap_or(0));
    // USER_HZ is 100 on Linux.
    Duration::from_millis((user + system) * 10)
}

fn spec(seats: u32) -> PerformanceSpec {
    let sections = seats.div_ceil(10_000).max(1);
    PerformanceSpec {
        title: "Seat map benchmark".into(),
        starts_at: time::OffsetDateTime::from_unix_timestamp(2_000_000_000).expect("time"),
        hold_seconds: 420,
        max_seats_per_hold: 4,
        max_seats_per_account: None,
        sections: (0..sections)
            .map(|s| SectionSpec {
                name: format!("S{s}"),
                rows: (seats / sections / 100).max(1),
                seats_per_row: 100,
                price: 5000 + u64::from(s) * 1000,
            })
            .collect(),
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The app on an embedded queue with `sessions` admitted visitors of the
/// room, and their entry tokens.
async fn app(booking: Arc<BookingStore>, sessions: u32) -> (axum::Router, Vec<String>) {
    let queue = Arc::new(MemoryStore::new());
    let keys = Keyring::parse(KEYS).expect("keys");
    let state = AppState::new(queue.clone(), keys.clone()).with_booking(booking);
    let room = RoomId::parse(ROOM).expect("room id");
    queue
        .put_room(
            &room,
            &RoomSettings {
                capacity: sessions + 10,
                // Everyone at once: a visitor joining past the admission
                // budget would wait, and its loads be refused.
                admit_per_second: 1_000_000.0,
                session_seconds: 3_600,
                abandon_seconds: 86_400,
                ..RoomSettings::default()
            },
        )
        .await
        .expect("room");
    let now = now_ms() / 1000;
    let mut tokens = Vec::new();
    for visitor in 0..sessions {
        let snap = queue
            .join(&room, None, None)
            .await
            .expect("join")
            .answer()
            .expect("a place");
        assert!(
            matches!(snap.standing, Standing::Admitted { .. }),
            "visitor {visitor} not admitted at once: {:?}",
            snap.standing
        );
        let seq = snap.seq.expect("a place");
        tokens.push(keys.sign(&Claims {
            kind: Kind::Entry,
            room: ROOM.into(),
            visitor: u128::from(visitor) + 1,
            seq,
            issued_at: now,
            expires_at: now + 3_000,
            account: None,
        }));
    }
    (origin::http::app(state), tokens)
}

/// One GET through the router: its status and body length.
async fn get(app: &axum::Router, path: &str, entry: &str, gzip: bool) -> (StatusCode, usize) {
    let mut req = Request::builder()
        .uri(path)
        .header(header::HOST, "127.0.0.1:8080")
        .header("entry-token", entry);
    if gzip {
        req = req.header(header::ACCEPT_ENCODING, "gzip");
    }
    let mut req = req.body(Body::empty()).expect("request");
    req.extensions_mut()
        .insert(ConnectInfo(std::net::SocketAddr::from((
            [127, 0, 0, 1],
            40_000,
        ))));
    let response = app.clone().oneshot(req).await.expect("infallible");
    let status = response.status();
    let body = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    (status, body.len())
}

/// One map load as a new viewer: `Some(bytes)`, or `None` when refused.
async fn load(app: &axum::Router, route: Route, entry: &str, gzip: bool) -> Option<usize> {
    let base = format!("/api/{ROOM}/performances/{PERF}");
    let paths: &[&str] = match route {
        Route::Seats => &["/seats"],
        Route::Split => &["/layout", "/state"],
    };
    let mut bytes = 0;
    for p in paths {
        let (status, n) = get(app, &format!("{base}{p}"), entry, gzip).await;
        if status != StatusCode::OK {
            return None;
        }
        bytes += n;
    }
    Some(bytes)
}

/// Holds two seats and releases them, in a loop until `stop`: pairs made.
async fn writer(store: Arc<BookingStore>, seats: u32, stop: Arc<AtomicBool>) -> u64 {
    let spec = spec(seats);
    let ids: Vec<String> = spec
        .sections
        .iter()
        .flat_map(|s| (1..=s.rows).flat_map(move |r| (1..=s.seats_per_row).map(move |n| (s, r, n))))
        .map(|(s, r, n)| format!("{}-{r}-{n}", s.name))
        .collect();
    let mut pairs = 0u64;
    let mut i = 0usize;
    while !stop.load(Ordering::Relaxed) {
        i += 1;
        let k = (i * 7919) % (ids.len() - 1);
        let visitor = 10_000_000 + i as u128;
        let now = now_ms();
        let want = vec![ids[k].clone(), ids[k + 1].clone()];
        let hold = store
            .hold(ROOM, PERF, visitor, None, &want, now + 3_600_000, now)
            .await
            .expect("hold");
        store
            .release_hold(ROOM, visitor, &hold.hold_id, now_ms())
            .await
            .expect("release");
        pairs += 1;
    }
    pairs
}

/// One phase: `viewers` loading for `seconds`, with or without the writer.
async fn phase(
    app: &axum::Router,
    tokens: &Arc<Vec<String>>,
    store: &Arc<BookingStore>,
    args: &Args,
    (route, gzip, writes): (Route, bool, bool),
) -> Option<Row> {
    let name = format!(
        "{}{}, {}",
        if route == Route::Seats {
            "seats"
        } else {
            "split"
        },
        if gzip { "+gzip" } else { "" },
        if writes {
            "holds+releases"
        } else {
            "no writes"
        }
    );
    // Served at all (the split routes are new), and warm.
    load(app, route, &tokens[0], gzip).await?;
    let stop = Arc::new(AtomicBool::new(false));
    let next = Arc::new(AtomicUsize::new(1));
    let (loads, bytes, refused) = (
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicU64::new(0)),
    );
    let cpu0 = cpu_time();
    let started = Instant::now();
    let writing = writes.then(|| tokio::spawn(writer(store.clone(), args.seats, stop.clone())));
    let mut tasks = Vec::new();
    for _ in 0..args.viewers {
        let (app, tokens, stop, next) = (app.clone(), tokens.clone(), stop.clone(), next.clone());
        let (loads, bytes, refused) = (loads.clone(), bytes.clone(), refused.clone());
        tasks.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let i = next.fetch_add(1, Ordering::Relaxed) % tokens.len();
                match load(&app, route, &tokens[i], gzip).await {
                    Some(n) => {
                        loads.fetch_add(1, Ordering::Relaxed);
                        bytes.fetch_add(n as u64, Ordering::Relaxed);
                    }
                    None => {
                        refused.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }));
    }
    tokio::time::sleep(Duration::from_secs_f64(args.seconds)).await;
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        t.await.expect("viewer");
    }
    let pairs = match writing {
        Some(w) => w.await.expect("writer"),
        None => 0,
    };
    let wall = started.elapsed().as_secs_f64();
    let cpu = (cpu_time() - cpu0).as_secs_f64();
    let n = loads.load(Ordering::Relaxed);
    Some(Row {
        phase: name,
        loads: n,
        per_second: n as f64 / wall,
        cpu_ms_per_load: cpu * 1000.0 / n.max(1) as f64,
        kb_per_load: bytes.load(Ordering::Relaxed) as f64 / 1024.0 / n.max(1) as f64,
        pairs_per_second: pairs as f64 / wall,
        refused: refused.load(Ordering::Relaxed),
    })
}

async fn bench(store: Arc<BookingStore>, args: &Args) -> Vec<Row> {
    let started = Instant::now();
    store
        .put_performance(ROOM, PERF, &spec(args.seats), now_ms())
        .await
        .expect("performance");
    eprintln!(
        "  performance of {} seats made in {:.1} s",
        args.seats,
        started.elapsed().as_secs_f64()
    );
    let (app, tokens) = app(store.clone(), args.sessions).await;
    let tokens = Arc::new(tokens);
    let mut rows = Vec::new();
    for route in [Route::Seats, Route::Split] {
        for gzip in [false, true] {
            for writes in [false, true] {
                if let Some(row) = phase(&app, &tokens, &store, args, (route, gzip, writes)).await {
                    rows.push(row);
                }
            }
        }
    }
    rows
}

fn print(name: &str, rows: &[Row]) {
    println!("\n{name}");
    println!(
        "| {:<28} | {:>7} | {:>8} | {:>11} | {:>9} | {:>8} | {:>7} |",
        "load, while", "loads", "loads/s", "CPU ms/load", "KB/load", "pairs/s", "refused"
    );
    println!(
        "|{:-<30}|{:->9}|{:->10}|{:->13}|{:->11}|{:->10}|{:->9}|",
        "", "", "", "", "", "", ""
    );
    for r in rows {
        println!(
            "| {:<28} | {:>7} | {:>8.1} | {:>11.2} | {:>9.1} | {:>8.1} | {:>7} |",
            r.phase,
            r.loads,
            r.per_second,
            r.cpu_ms_per_load,
            r.kb_per_load,
            r.pairs_per_second,
            r.refused
        );
    }
}

#[tokio::main]
async fn main() {
    let args = Args::parse();
    sqlx::any::install_default_drivers();
    println!(
        "seat map benchmark: {} seats, {} viewers, {} s a phase, {} sessions",
        args.seats, args.viewers, args.seconds, args.sessions
    );
    if !args.no_mysql {
        let db = ScratchDb::create(&args.mysql_server).await;
        let config = BookingConfig::new(Some(db.url.clone()), "");
        let store = Arc::new(
            BookingStore::connect(&config, now_ms())
                .await
                .expect("connect"),
        );
        let rows = bench(store.clone(), &args).await;
        store.close().await;
        db.drop_database().await;
        print("MariaDB (pool 16)", &rows);
    }
    let dir = std::env::temp_dir().join(format!("wr-seatmap-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let config = BookingConfig::new(None, dir.join("bench.sqlite"));
    let store = Arc::new(
        BookingStore::connect(&config, now_ms())
            .await
            .expect("connect"),
    );
    let rows = bench(store.clone(), &args).await;
    store.close().await;
    let _ = std::fs::remove_dir_all(&dir);
    print("SQLite (WAL, pool 16)", &rows);
}
