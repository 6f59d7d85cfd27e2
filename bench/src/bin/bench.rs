//! The queue's benchmark, in one run (`scripts/bench.sh` builds it in
//! release mode and runs it; BENCHMARKS.md, "The queue", has its figures):
//!
//! 1. HTTP throughput and latency at `--connections` keep-alive connections
//!    against the origin's own `/healthz` (the ceiling of the HTTP stack on
//!    this machine), then `join`, then `status` at the front and at the back
//!    of a line of `--line` visitors, and at the back again as the waiting
//!    page polls (`Prefer: wait=20`, which a view's answer must not make
//!    dearer); each phase is `--requests` requests, cut short after
//!    `--seconds`. `join (identity)` joins a room whose `identity` is
//!    `required`, each join with an HS256 identity token of an account of its
//!    own (minted before the timed phases), against `join` in a room without.
//!    `join (pow)` joins a room with a proof-of-work challenge, each join
//!    with a solution of its own (seeds fetched from the origin's 428s and
//!    solved before each timed phase, at [`POW_BITS`]: the origin's check
//!    costs the same at any difficulty), against `join`.
//! 2. Store memory per waiting visitor with `--line` waiting in one room
//!    (Redis `INFO memory`, or this process's resident memory on the
//!    embedded store, before and after filling the line); with
//!    `--accounts`, each waiter joined with an account of its own, so the
//!    figure includes the account index.
//! 3. The time of one promoter tick that admits 1,000 visitors from the
//!    front of that line (`--ticks` of them, through the store API, as the
//!    promoter calls it).
//! 4. On a Redis this program started: Redis commands per second (`INFO
//!    commandstats`) while `--pollers` waiters (10,000 and 100,000 by
//!    default) each poll status as often as `poll_after_ms` tells them, on
//!    an origin with status snapshots off (every status a store call, for
//!    comparison) and then on. Each run has a key prefix of its own, so
//!    the store holds no room that anyone ticks but the run's one: the runs
//!    differ in waiters only. The counters are reported per command.
//!
//! `--phases` runs only some of these: `http` (1 to 3, which share the big
//! line; `--http-phases` picks among them) and `polling` (4); the default
//! is both.
//!
//! The origin runs in this process on its own two-thread runtime (as the
//! binary does on a two-core machine), serving the real router and
//! promoter on a loopback port; the load comes from a separate runtime over
//! plain HTTP/1.1. The line is filled through the store API (the same
//! atomic join as HTTP, without a million HTTP round trips). On Redis, it is
//! a `redis-server` this program starts on a free loopback port and stops at
//! the end, unless `--redis-url` names one. Nothing leaves 127.0.0.1.

use std::net::SocketAddr;
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bench::accounts::{self, unix_now};
use bench::commandstats;
use clap::{Parser, ValueEnum};
use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use origin::queue::joins::{JoinStats, Joins};
use origin::queue::memory::MemoryStore;
use origin::queue::redis::{RedisConfig, RedisStore};
use origin::queue::{JoinRequest, QueueStore};
use origin::room::{AccountHash, ChallengeKind, IdentityMode, RoomId, RoomSettings, RoomState};
use origin::state::AppState;
use token::{Claims, Keyring, Kind};

/// The signing key of this run (tickets for the status phases are signed
/// here with the origin's key, for visitors placed through the store).
const KEYS: &str = "bench:bench-secret-0123456789abcdef";
/// The room of the big line.
const LINE_ROOM: &str = "bench-line";
/// The proof-of-work room's difficulty: the least a room takes, so solving
/// 100,000 seeds before a phase takes a second or two of both cores (at 12
/// bits it took 20, and the timed phase ran right after that burn); the
/// origin's check (two MACs and one hash) is the same work at any
/// difficulty.
const POW_BITS: u8 = 8;

/// The allocator the `origin` binary ships with (its `main.rs`), so the
/// origin is measured as it is deployed. One process has one allocator:
/// the load generator's runtime uses it too.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser, Debug)]
#[command(about = "Benchmarks the queue: HTTP throughput and p99, store memory, promoter tick")]
struct Args {
    /// Which store the origin runs on.
    #[arg(long, value_enum, default_value_t = StoreKind::Redis)]
    store: StoreKind,
    /// Use this Redis instead of starting one (memory figures then include
    /// whatever else it holds). With --redis-cluster, comma-separated seeds.
    #[arg(long)]
    redis_url: Option<String>,
    /// --redis-url is a Redis Cluster.
    #[arg(long)]
    redis_cluster: bool,
    /// Concurrent keep-alive HTTP connections.
    #[arg(long, default_value_t = 64)]
    connections: usize,
    /// Requests per HTTP phase and round.
    #[arg(long, default_value_t = 50_000)]
    requests: u64,
    /// Rounds of all HTTP phases, interleaved, so a burst of load from
    /// elsewhere on a shared machine hits every phase alike; each phase's
    /// figures are over all its rounds.
    #[arg(long, default_value_t = 3)]
    rounds: u32,
    /// Longest an HTTP phase may run, in seconds.
    #[arg(long, default_value_t = 30)]
    seconds: u64,
    /// Visitors waiting in the big line.
    #[arg(long, default_value_t = 1_000_000)]
    line: u64,
    /// Promoter ticks of 1,000 admissions to time.
    #[arg(long, default_value_t = 20)]
    ticks: u32,
    /// Tiny counts, for CI: proves the benchmark runs, measures nothing.
    #[arg(long)]
    smoke: bool,
    /// Fill the big line with joins that each carry an account of their
    /// own (one place per account: the store indexes every one), so the
    /// memory figure is that of an identity room.
    #[arg(long)]
    accounts: bool,
    /// Status snapshots on the origin of the HTTP phases (`--status-snapshot`).
    #[arg(long, value_enum, default_value_t = origin::config::OnOff::On)]
    status_snapshot: origin::config::OnOff,
    /// The origin's join window in µs (`--join-window-us`; 0 turns
    /// batching off). Default: the origin's.
    #[arg(long)]
    join_window_us: Option<u64>,
    /// Which HTTP phases `http` runs (comma-separated; all by default). One
    /// phase alone is for profiling it (`perf record -p`); ratios need
    /// `healthz`.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = PhaseName::ALL)]
    http_phases: Vec<PhaseName>,
    /// Waiters polling as told in the commands-per-second phase, one run
    /// per count (comma-separated; empty: skip the phase).
    #[arg(long, value_delimiter = ',', default_values_t = [10_000u64, 100_000])]
    pollers: Vec<u64>,
    /// How long each polling run is measured, after one poll interval of
    /// warm-up (every waiter has polled once), in seconds.
    #[arg(long, default_value_t = 20)]
    poll_seconds: u64,
    /// Which phases to run (comma-separated): `http` (HTTP throughput,
    /// memory and the promoter tick, which share the big line) and
    /// `polling` (Redis commands while waiters poll).
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [PhaseKind::Http, PhaseKind::Polling])]
    phases: Vec<PhaseKind>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum PhaseKind {
    /// HTTP throughput and p99, store memory per waiter, promoter tick.
    Http,
    /// Redis commands per second while waiters poll as told (Redis only).
    Polling,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum StoreKind {
    /// Redis (a server this program starts, or --redis-url).
    Redis,
    /// The embedded in-process store, shared by the origin and the bench.
    Memory,
}

/// One HTTP phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum PhaseName {
    /// `GET /healthz`: the ceiling of the HTTP stack.
    Healthz,
    /// `POST /queue/{room}/join` to a paused room.
    Join,
    /// The same join, to a room that requires identity, each with a token
    /// of its own account.
    JoinIdentity,
    /// The same join, to a room with a proof-of-work challenge, each with
    /// a solution of its own.
    JoinPow,
    /// Status of the first in a line of `--line`.
    StatusFront,
    /// Status of the last in a line of `--line`.
    StatusBack,
    /// The same poll as the waiting page sends it, with `Prefer: wait=20`
    /// (answered at once: the line's room is not selling).
    StatusBackPage,
}

impl PhaseName {
    const ALL: [PhaseName; 7] = [
        PhaseName::Healthz,
        PhaseName::Join,
        PhaseName::JoinIdentity,
        PhaseName::JoinPow,
        PhaseName::StatusFront,
        PhaseName::StatusBack,
        PhaseName::StatusBackPage,
    ];
}

type Error = Box<dyn std::error::Error + Send + Sync>;

fn main() -> ExitCode {
    // Logs as the binary does (its subscriber and filter; to stderr), so the
    // origin here pays for logging what a deployed one pays: without it,
    // spans at `info` once cost a status 3,400 instructions unseen here.
    tracing_subscriber::fmt()
        .with_env_filter(origin::telemetry::log_filter())
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let mut args = Args::parse();
    if args.smoke {
        args.requests = args.requests.min(2_000);
        args.line = args.line.min(20_000);
        args.ticks = args.ticks.min(3);
        args.seconds = args.seconds.min(10);
        args.rounds = 1;
        args.pollers = args.pollers.iter().map(|&n| n.min(500)).collect();
        args.poll_seconds = args.poll_seconds.min(3);
    }
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &Args) -> Result<(), Error> {
    let own_redis = match (&args.redis_url, args.store) {
        (_, StoreKind::Memory) | (Some(_), _) => None,
        (None, StoreKind::Redis) => Some(RedisProcess::start()?),
    };
    let url = match (&own_redis, &args.redis_url) {
        (Some(p), _) => p.url(),
        (None, Some(url)) => url.clone(),
        (None, None) => String::new(), // the embedded store
    };
    let redis_config = RedisConfig {
        url,
        prefix: String::new(),
        timeout: Duration::from_secs(10),
        cluster: args.redis_cluster,
    };

    // The origin's runtime: two workers, like the binary on this machine.
    let server_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("origin")
        .enable_all()
        .build()?;
    // The load generator's (and the bench's own store calls').
    let load_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("load")
        .enable_all()
        .build()?;

    // Each runtime gets its own store (its own connection, driven by its
    // own threads).
    // own threads). The embedded store is one, shared: it is the origin's.
    let (origin_store, store): (Arc<dyn QueueStore>, Arc<dyn QueueStore>) = match args.store {
        StoreKind::Memory => {
            let shared: Arc<dyn QueueStore> = Arc::new(MemoryStore::new());
            (shared.clone(), shared)
        }
        StoreKind::Redis => (
            {
                let _guard = server_rt.enter();
                Arc::new(RedisStore::connect(&redis_config)?)
            },
            {
                let _guard = load_rt.enter();
                Arc::new(RedisStore::connect(&redis_config)?)
            },
        ),
    };

    let keys = Keyring::parse(KEYS).map_err(|e| format!("keys: {e}"))?;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let (addr, joins): (SocketAddr, Joins) = server_rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let mut state = AppState::new(origin_store.clone(), keys.clone())
            .with_identities(accounts::identities()?);
        if args.status_snapshot == origin::config::OnOff::On {
            state = state.with_status_snapshots(TICK);
        }
        if let Some(us) = args.join_window_us {
            state = state.with_join_window(Duration::from_micros(us));
        }
        // A handle on the origin's batches of joins, for their figures.
        let joins = state.joins.clone();
        tokio::spawn(origin::run(state, listener, TICK, async move {
            let _ = stopped.await;
        }));
        Ok::<_, Error>((addr, joins))
    })?;

    let http = args.phases.contains(&PhaseKind::Http);
    let report = if http {
        load_rt.block_on(measure(
            args,
            store.clone(),
            &keys,
            (addr, &joins),
            own_redis.as_ref(),
        ))
    } else {
        Ok(Report::default())
    };
    // Stop the origin, promoter included, before timing ticks by hand: its
    // own ticks would admit the batches first.
    let _ = stop.send(());
    let mut report = report?;
    if let (Some(redis), true) = (&own_redis, args.phases.contains(&PhaseKind::Polling)) {
        std::thread::sleep(Duration::from_millis(500)); // the origin stops
        for &n in &args.pollers {
            for snapshot in [false, true] {
                let run = polling(
                    &server_rt,
                    &load_rt,
                    &redis_config,
                    &keys,
                    redis,
                    (n, snapshot),
                    args,
                )?;
                eprintln!(
                    "{n} waiters polling, snapshots {}: {:.0} polls/s, {:.0} Redis commands/s \
                     ({:.0} sent by the origin), {:.0} µs/s of scripts",
                    if snapshot { "on" } else { "off" },
                    run.polls_per_second,
                    run.commands_per_second,
                    run.client_commands_per_second,
                    run.script_us_per_second
                );
                report.polling.push(run);
            }
        }
    }
    server_rt.shutdown_timeout(Duration::from_secs(5));
    if http {
        let line = RoomId::parse(LINE_ROOM).ok_or("room id")?;
        report.tick_ms = load_rt.block_on(time_ticks(store.as_ref(), &line, args.ticks))?;
    }
    print_report(args, &report);
    Ok(())
}

/// The status phases' names in the report.
const STATUS_FRONT: &str = "status, front of the line";
const STATUS_BACK: &str = "status, back of the line";
const STATUS_BACK_PAGE: &str = "status, back, as the page polls";
/// What the waiting page sends with every poll (`pages/src/waiting/page.js`,
/// `HOLD_S`).
const PAGE_PREFER: &str = "wait=20";

/// The origin's promoter interval in every phase (the binary's default).
const TICK: Duration = Duration::from_millis(100);

/// Everything one run measured.
#[derive(Default)]
struct Report {
    phases: Vec<Phase>,
    fill_seconds: f64,
    memory_per_waiter: Option<f64>,
    tick_ms: Vec<f64>,
    polling: Vec<Polling>,
}

/// One run of waiters polling as told.
struct Polling {
    waiters: u64,
    snapshot: bool,
    polls_per_second: f64,
    errors: u64,
    /// Every command Redis ran, those inside scripts included.
    commands_per_second: f64,
    /// Commands the origin sent (scripts and the rest): its round trips.
    client_commands_per_second: f64,
    /// Redis time spent in scripts, per second.
    script_us_per_second: f64,
    p99_ms: f64,
    /// Per command name (lower case, as `INFO commandstats` spells it):
    /// calls and Redis µs per second. A script's time includes the
    /// commands it ran, which are counted under their own names too.
    by_command: Vec<(String, f64, f64)>,
}

/// Commands a client sends itself (the rest run inside scripts).
const CLIENT_COMMANDS: [&str; 6] = ["evalsha", "eval", "script", "smembers", "sadd", "ping"];

/// `waiters` visitors join a fresh fifo room, then each polls status on a
/// fresh origin (snapshots on or off) as `poll_after_ms` says; after one
/// poll interval of warm-up, Redis's command counters are read over
/// `--poll-seconds`.
fn polling(
    server_rt: &tokio::runtime::Runtime,
    load_rt: &tokio::runtime::Runtime,
    redis_config: &RedisConfig,
    keys: &Keyring,
    redis: &RedisProcess,
    (waiters, snapshot): (u64, bool),
    args: &Args,
) -> Result<Polling, Error> {
    let room = RoomId::parse("bench-poll").ok_or("room id")?;
    // A key prefix of the run's own: its origin's promoter lists (and
    // ticks) only this run's room, not the rooms earlier phases and runs
    // left in the store, so runs compare in waiters alone.
    let config = RedisConfig {
        prefix: format!("poll-{waiters}-{}:", if snapshot { "on" } else { "off" }),
        ..redis_config.clone()
    };
    let origin_store: Arc<dyn QueueStore> = {
        let _guard = server_rt.enter();
        Arc::new(RedisStore::connect(&config)?)
    };
    let store: Arc<dyn QueueStore> = {
        let _guard = load_rt.enter();
        Arc::new(RedisStore::connect(&config)?)
    };
    // Open, a small room already full (one slot, an hour's session): the
    // line does not move, so every waiter polls at the abandon time's
    // ceiling (a third of it), as far-back waiters do.
    let settings = RoomSettings {
        capacity: 1,
        admit_per_second: 1.0,
        session_seconds: 3_600,
        abandon_seconds: if args.smoke { 6 } else { 60 },
        ..RoomSettings::default()
    };
    let (first, last) = load_rt.block_on(async {
        store.put_room(&room, &settings).await?;
        fill(store.clone(), &room, waiters + 1).await
    })?;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let addr: SocketAddr = server_rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let mut state = AppState::new(origin_store, keys.clone());
        if snapshot {
            state = state.with_status_snapshots(TICK);
        }
        tokio::spawn(origin::run(state, listener, TICK, async move {
            let _ = stopped.await;
        }));
        Ok::<_, Error>(addr)
    })?;
    let now = unix_now();
    let tickets: Vec<String> = (first + 1..=last)
        .map(|seq| {
            keys.sign(&Claims {
                kind: Kind::Ticket,
                room: room.to_string(),
                visitor: u128::from(seq),
                seq,
                issued_at: now,
                expires_at: now + 3_600,
                account: None,
            })
        })
        .collect();
    let interval = Duration::from_millis(u64::from(settings.abandon_seconds) * 1000 / 3);
    let measured = Duration::from_secs(args.poll_seconds);
    let result = load_rt.block_on(poll_as_told(
        addr,
        &room,
        tickets,
        interval,
        measured,
        redis,
        args.connections,
    ));
    // Its room stays in the store, under a prefix nobody ticks any more.
    let _ = stop.send(());
    std::thread::sleep(Duration::from_millis(300));
    let mut run = result?;
    run.waiters = waiters;
    run.snapshot = snapshot;
    Ok(run)
}

/// Every ticket polls `room`'s status, first at a random instant within
/// `interval`, then as each answer's `poll_after_ms` says, over
/// `connections` keep-alive connections; Redis is measured over `measured`
/// once `interval` (plus a second) has passed.
async fn poll_as_told(
    addr: SocketAddr,
    room: &RoomId,
    tickets: Vec<String>,
    interval: Duration,
    measured: Duration,
    redis: &RedisProcess,
    connections: usize,
) -> Result<Polling, Error> {
    let mut pool = Vec::with_capacity(connections);
    for _ in 0..connections {
        pool.push(connect(addr).await?);
    }
    let pool = Arc::new(std::sync::Mutex::new(pool));
    let permits = Arc::new(tokio::sync::Semaphore::new(connections));
    let start = Instant::now();
    let warm = interval + Duration::from_secs(1);
    let end = start + warm + measured;
    let polls = Arc::new(AtomicU64::new(0));
    let errors = Arc::new(AtomicU64::new(0));
    let latencies = Arc::new(std::sync::Mutex::new(Vec::<u32>::new()));
    let path = format!("/queue/{room}/status");
    let mut tasks = tokio::task::JoinSet::new();
    for ticket in tickets {
        let (pool, permits, polls, errors, latencies) = (
            pool.clone(),
            permits.clone(),
            polls.clone(),
            errors.clone(),
            latencies.clone(),
        );
        let target = Target::get(addr, &path, Some(&ticket))?;
        let first = interval.mul_f64(rand::random::<f64>());
        tasks.spawn(async move {
            tokio::time::sleep(first).await;
            while Instant::now() < end {
                let permit = permits.acquire().await?;
                let mut sender = pool
                    .lock()
                    .map_err(|_| "poisoned")?
                    .pop()
                    .ok_or("no connection")?;
                // A connection the pool has not used since it was opened is
                // closed by the origin after its header timeout (10 s: no
                // request head since the accept), as a browser's would be;
                // like a browser, open another rather than count an error.
                if sender.is_closed() {
                    sender = connect(addr).await?;
                }
                let sent = Instant::now();
                let outcome = async {
                    let response = sender.send_request(target.request()).await?;
                    let ok = response.status().is_success();
                    let body = response.into_body().collect().await?.to_bytes();
                    let json: serde_json::Value = serde_json::from_slice(&body)?;
                    Ok::<_, Error>((
                        ok && json["state"] == "waiting",
                        json["poll_after_ms"].as_u64(),
                    ))
                }
                .await;
                pool.lock().map_err(|_| "poisoned")?.push(sender);
                drop(permit);
                let in_window = sent >= start + warm;
                let after = match outcome {
                    Ok((true, Some(ms))) => {
                        if in_window {
                            polls.fetch_add(1, Ordering::Relaxed);
                            let us = u32::try_from(sent.elapsed().as_micros()).unwrap_or(u32::MAX);
                            latencies.lock().map_err(|_| "poisoned")?.push(us);
                        }
                        ms
                    }
                    _ => {
                        errors.fetch_add(1, Ordering::Relaxed);
                        1_000
                    }
                };
                tokio::time::sleep(Duration::from_millis(after)).await;
            }
            Ok::<_, Error>(())
        });
    }
    tokio::time::sleep_until((start + warm).into()).await;
    let before = redis.command_stats()?;
    let measure_start = Instant::now();
    tokio::time::sleep_until(end.into()).await;
    let after = redis.command_stats()?;
    let seconds = measure_start.elapsed().as_secs_f64();
    tasks.abort_all();
    while tasks.join_next().await.is_some() {}
    let delta = |name: Option<&str>| -> (u64, u64) {
        let sum = |stats: &[(String, u64, u64)]| {
            stats
                .iter()
                .filter(|(n, _, _)| name.is_none_or(|want| n == want) && n != "info")
                .fold((0, 0), |(c, u), (_, calls, usec)| (c + calls, u + usec))
        };
        let (c0, u0) = sum(&before);
        let (c1, u1) = sum(&after);
        (c1.saturating_sub(c0), u1.saturating_sub(u0))
    };
    let (all, _) = delta(None);
    let client: u64 = CLIENT_COMMANDS.iter().map(|c| delta(Some(c)).0).sum();
    let (_, script_us) = delta(Some("evalsha"));
    let mut by_command: Vec<(String, f64, f64)> = after
        .iter()
        .filter(|(n, _, _)| n != "info")
        .map(|(n, _, _)| {
            let (calls, usec) = delta(Some(n));
            (n.clone(), calls as f64, usec as f64)
        })
        .filter(|(_, calls, _)| *calls > 0.0)
        .collect();
    by_command.sort_by(|a, b| b.1.total_cmp(&a.1));
    let mut latencies = std::mem::take(&mut *latencies.lock().map_err(|_| "poisoned")?);
    latencies.sort_unstable();
    let p99_ms = latencies
        .get(((latencies.len() as f64 - 1.0) * 0.99).round().max(0.0) as usize)
        .map_or(f64::NAN, |&us| f64::from(us) / 1000.0);
    Ok(Polling {
        waiters: 0,
        snapshot: false,
        polls_per_second: polls.load(Ordering::Relaxed) as f64 / seconds,
        errors: errors.load(Ordering::Relaxed),
        commands_per_second: all as f64 / seconds,
        client_commands_per_second: client as f64 / seconds,
        script_us_per_second: script_us as f64 / seconds,
        p99_ms,
        by_command: by_command
            .into_iter()
            .map(|(n, calls, usec)| (n, calls / seconds, usec / seconds))
            .collect(),
    })
}

/// One HTTP phase's outcome.
struct Phase {
    name: String,
    ok: u64,
    errors: u64,
    seconds: f64,
    latencies_us: Vec<u32>,
    /// Requests per second of each round, in order.
    rounds: Vec<f64>,
    /// Redis time per script call in this phase (µs), when measured.
    script_us: Option<f64>,
    /// CPU time per request (µs) of the origin's threads, the load
    /// generator's, and redis-server (when this program started it).
    cpu_us: [Option<f64>; 3],
    /// The origin's store calls for joins in this phase: calls, joins
    /// carried, calls that carried one.
    join_calls: JoinStats,
}

impl Phase {
    /// Adds another round of the same phase: requests, time and latencies
    /// add up; per-request figures become request-weighted averages.
    fn absorb(&mut self, other: Phase) {
        let (n, m) = (self.ok as f64, other.ok as f64);
        let mix = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) if n + m > 0.0 => Some((a * n + b * m) / (n + m)),
            (a, b) => a.or(b),
        };
        self.script_us = mix(self.script_us, other.script_us);
        self.join_calls = self.join_calls.plus(other.join_calls);
        for k in 0..3 {
            self.cpu_us[k] = mix(self.cpu_us[k], other.cpu_us[k]);
        }
        self.ok += other.ok;
        self.errors += other.errors;
        self.seconds += other.seconds;
        self.latencies_us.extend(other.latencies_us);
        self.rounds.extend(other.rounds);
    }

    fn per_second(&self) -> f64 {
        self.ok as f64 / self.seconds
    }

    fn percentile_ms(&self, p: f64) -> f64 {
        if self.latencies_us.is_empty() {
            return f64::NAN;
        }
        let i = ((self.latencies_us.len() as f64 - 1.0) * p).round() as usize;
        f64::from(self.latencies_us[i]) / 1000.0
    }
}

async fn measure(
    args: &Args,
    store: Arc<dyn QueueStore>,
    keys: &Keyring,
    (addr, batches): (SocketAddr, &Joins),
    redis: Option<&RedisProcess>,
) -> Result<Report, Error> {
    let joins = RoomId::parse("bench-join").ok_or("room id")?;
    let identified = RoomId::parse("bench-join-identity").ok_or("room id")?;
    let pow = RoomId::parse("bench-join-pow").ok_or("room id")?;
    let line = RoomId::parse(LINE_ROOM).ok_or("room id")?;
    // Paused: every join takes a place (nobody is let in at once), the
    // promoter admits nobody during the HTTP phases, and nobody is dropped
    // (a long abandon time).
    let paused = RoomSettings {
        capacity: 1_000,
        admit_per_second: 1_000.0,
        session_seconds: 3_600,
        abandon_seconds: 86_400,
        ..RoomSettings::default()
    };
    for room in [&joins, &line] {
        store.put_room(room, &paused).await?;
        store.set_state(room, RoomState::Paused).await?;
    }
    let paused_identified = RoomSettings {
        identity: IdentityMode::Required,
        ..paused.clone()
    };
    store.put_room(&identified, &paused_identified).await?;
    store.set_state(&identified, RoomState::Paused).await?;
    let paused_pow = RoomSettings {
        challenge: ChallengeKind::Pow,
        challenge_bits: POW_BITS,
        ..paused.clone()
    };
    store.put_room(&pow, &paused_pow).await?;
    store.set_state(&pow, RoomState::Paused).await?;

    // Fill the line through the store API, many joins in flight.
    // Redis's own accounting, or this process's resident memory for the
    // embedded store (the line dominates it at a million waiters).
    let embedded = args.store == StoreKind::Memory;
    let used_before = match redis {
        Some(r) => Some(r.used_memory()?),
        None if embedded => Some(resident_bytes()?),
        None => None,
    };
    let fill_start = Instant::now();
    let (first, last) = fill_as(store.clone(), &line, args.line, args.accounts).await?;
    let fill_seconds = fill_start.elapsed().as_secs_f64();
    let memory_per_waiter = match (redis, used_before) {
        (Some(r), Some(before)) => {
            let after = r.used_memory()?;
            Some((after as f64 - before as f64) / args.line as f64)
        }
        (None, Some(before)) => {
            let after = resident_bytes()?;
            Some((after as f64 - before as f64) / args.line as f64)
        }
        _ => None,
    };
    eprintln!(
        "filled a line of {} in {fill_seconds:.1} s (seq {first}..={last})",
        args.line
    );

    let now = unix_now();
    let ticket = |seq: u64| {
        keys.sign(&Claims {
            kind: Kind::Ticket,
            room: line.to_string(),
            visitor: rand::random(),
            seq,
            issued_at: now,
            expires_at: now + 3_600,
            account: None,
        })
    };
    let front = ticket(first);
    let back = ticket(last);
    let mut plan: Vec<(&str, Target)> = [
        (
            PhaseName::Healthz,
            ("/healthz", Target::get(addr, "/healthz", None)?),
        ),
        (
            PhaseName::Join,
            ("join", Target::post(addr, &format!("/queue/{joins}/join"))?),
        ),
        (
            PhaseName::JoinIdentity,
            (
                "join (identity)",
                Target::post(addr, &format!("/queue/{identified}/join"))?
                    .each(IDENTITY, identity_tokens(&identified, args)?),
            ),
        ),
        (
            PhaseName::JoinPow,
            (
                JOIN_POW,
                // Solutions are fetched and solved before each timed run.
                Target::post(addr, &format!("/queue/{pow}/join"))?,
            ),
        ),
        (
            PhaseName::StatusFront,
            (
                STATUS_FRONT,
                Target::get(addr, &format!("/queue/{line}/status"), Some(&front))?,
            ),
        ),
        (
            PhaseName::StatusBack,
            (
                STATUS_BACK,
                Target::get(addr, &format!("/queue/{line}/status"), Some(&back))?,
            ),
        ),
        (
            PhaseName::StatusBackPage,
            (
                STATUS_BACK_PAGE,
                Target::get(addr, &format!("/queue/{line}/status"), Some(&back))?
                    .prefer(PAGE_PREFER)?,
            ),
        ),
    ]
    .into_iter()
    .filter(|(name, _)| args.http_phases.contains(name))
    .map(|(_, phase)| phase)
    .collect();
    // Check both tickets really stand where they should before timing them.
    for (t, expected) in [(&front, 1), (&back, args.line)] {
        let body = one_request(
            addr,
            &Target::get(addr, &format!("/queue/{line}/status"), Some(t))?,
        )
        .await?;
        let json: serde_json::Value = serde_json::from_slice(&body)?;
        if json["position"] != expected {
            return Err(format!("expected position {expected}: {json}").into());
        }
    }
    let mut phases: Vec<Phase> = Vec::new();
    for round in 0..args.rounds {
        for (i, (name, target)) in plan.iter_mut().enumerate() {
            let warm = (args.requests / 20).clamp(200, 5_000);
            if *name == JOIN_POW {
                // Fresh seeds for every run, so none expires in the line
                // of phases: each join a solution of its own.
                let count = args.requests + if round == 0 { warm } else { 0 };
                let solutions = pow_solutions(addr, target, count).await?;
                *target = target.clone().each(CHALLENGE, solutions);
            }
            if round == 0 {
                // Warm up connections, caches and scripts; not recorded.
                load(
                    addr,
                    target,
                    args.connections,
                    warm,
                    Duration::from_secs(10),
                )
                .await?;
            }
            let scripts_before = redis.map(RedisProcess::script_stats).transpose()?;
            let cpu_before = cpu_ticks(redis);
            let joins_before = batches.stats();
            let mut phase = load(
                addr,
                target,
                args.connections,
                args.requests,
                Duration::from_secs(args.seconds),
            )
            .await?;
            let cpu_after = cpu_ticks(redis);
            phase.join_calls = batches.stats().since(joins_before);
            phase.name = (*name).to_owned();
            for (k, slot) in phase.cpu_us.iter_mut().enumerate() {
                if let (Some(a), Some(b)) = (cpu_before[k], cpu_after[k])
                    && phase.ok > 0
                {
                    *slot = Some((b - a) as f64 * TICK_US / phase.ok as f64);
                }
            }
            if let (Some(r), Some((calls0, usec0))) = (redis, scripts_before) {
                let (calls, usec) = r.script_stats()?;
                // The promoter's ticks (10 a second) are in here too; at
                // these request rates they are noise.
                if calls > calls0 {
                    phase.script_us = Some((usec - usec0) as f64 / (calls - calls0) as f64);
                }
            }
            eprintln!(
                "round {}: {name}: {:.0} req/s, p99 {:.2} ms",
                round + 1,
                phase.per_second(),
                phase.percentile_ms(0.99)
            );
            match phases.get_mut(i) {
                Some(all) => all.absorb(phase),
                None => phases.push(phase),
            }
        }
    }
    for p in &mut phases {
        p.latencies_us.sort_unstable();
    }

    Ok(Report {
        phases,
        fill_seconds,
        memory_per_waiter,
        tick_ms: Vec::new(),
        polling: Vec::new(),
    })
}

/// Joins `n` visitors to `room` through the store; returns the first and
/// last sequence numbers given.
async fn fill(store: Arc<dyn QueueStore>, room: &RoomId, n: u64) -> Result<(u64, u64), Error> {
    fill_as(store, room, n, false).await
}

/// [`fill`], each join with an account of its own when `accounts` (a
/// random keyed hash, as the origin would make of a verified identity).
async fn fill_as(
    store: Arc<dyn QueueStore>,
    room: &RoomId,
    n: u64,
    accounts: bool,
) -> Result<(u64, u64), Error> {
    const IN_FLIGHT: usize = 256;
    let next = Arc::new(AtomicU64::new(0));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..IN_FLIGHT {
        let (store, room, next) = (store.clone(), room.clone(), next.clone());
        tasks.spawn(async move {
            let (mut lo, mut hi) = (u64::MAX, 0);
            while next.fetch_add(1, Ordering::Relaxed) < n {
                let joined = if accounts {
                    let request = JoinRequest {
                        account: Some(AccountHash(rand::random())),
                        ..JoinRequest::default()
                    };
                    store
                        .join_many(&room, std::slice::from_ref(&request))
                        .await?
                        .pop()
                        .ok_or("a join gave no answer")?
                } else {
                    store.join(&room, None, None).await?
                };
                let snap = joined.answer().ok_or("no place cap was set")?;
                let seq = snap.seq.ok_or("a join got no place")?;
                lo = lo.min(seq);
                hi = hi.max(seq);
            }
            Ok::<_, Error>((lo, hi))
        });
    }
    let (mut lo, mut hi) = (u64::MAX, 0);
    while let Some(done) = tasks.join_next().await {
        let (a, b) = done??;
        lo = lo.min(a);
        hi = hi.max(b);
    }
    Ok((lo, hi))
}

/// Opens `room` and times `ticks` promoter ticks that each admit exactly
/// 1,000 visitors (capacity is raised by 1,000 before each; that call is
/// not timed). Returns each tick's time in ms.
async fn time_ticks(store: &dyn QueueStore, room: &RoomId, ticks: u32) -> Result<Vec<f64>, Error> {
    const BATCH: u32 = 1_000;
    let mut times = Vec::new();
    store.set_state(room, RoomState::Open).await?;
    for i in 1..=ticks {
        let settings = RoomSettings {
            capacity: BATCH * i,
            // A budget far above the batch, so capacity alone sets k.
            admit_per_second: 100_000.0,
            session_seconds: 3_600,
            abandon_seconds: 86_400,
            ..RoomSettings::default()
        };
        store.put_room(room, &settings).await?;
        let start = Instant::now();
        let report = store.tick(room).await?;
        times.push(start.elapsed().as_secs_f64() * 1000.0);
        if report.admitted.len() != BATCH as usize {
            return Err(format!("a tick admitted {}, not {BATCH}", report.admitted.len()).into());
        }
    }
    Ok(times)
}

/// What one HTTP phase requests, its parts built once: the load generator
/// shares the machine's two cores with the origin, and a path parsed and a
/// `Bearer` header formatted and checked again for every request cost it
/// more for a status than for `/healthz` (0.3 µs a request, `perf record`),
/// which the ratios then charged to the origin. Each request clones them
/// (reference counts, no copies).
#[derive(Clone)]
struct Target {
    method: hyper::Method,
    uri: hyper::Uri,
    host: hyper::header::HeaderValue,
    authorization: Option<hyper::header::HeaderValue>,
    prefer: Option<hyper::header::HeaderValue>,
    /// A header whose values are sent in turn, one a request (never one
    /// twice): identity tokens, challenge solutions.
    each: Option<Arc<HeaderPool>>,
}

/// Values of one header made before the timed phases, handed out in turn.
#[derive(Debug)]
struct HeaderPool {
    name: hyper::header::HeaderName,
    values: Vec<hyper::header::HeaderValue>,
    next: AtomicUsize,
}

/// One identity token for each identity join the run may send (warm-up and
/// every round), each naming an account of its own, valid for an hour.
fn identity_tokens(room: &RoomId, args: &Args) -> Result<Vec<hyper::header::HeaderValue>, Error> {
    let warm = (args.requests / 20).clamp(200, 5_000);
    let count = warm + args.requests * u64::from(args.rounds);
    accounts::tokens(room, count, unix_now())
        .into_iter()
        .map(|jwt| Ok(hyper::header::HeaderValue::try_from(jwt)?))
        .collect()
}

impl Target {
    fn get(addr: SocketAddr, path: &str, bearer: Option<&str>) -> Result<Target, Error> {
        Target::new(hyper::Method::GET, addr, path, bearer)
    }

    fn post(addr: SocketAddr, path: &str) -> Result<Target, Error> {
        Target::new(hyper::Method::POST, addr, path, None)
    }

    fn new(
        method: hyper::Method,
        addr: SocketAddr,
        path: &str,
        bearer: Option<&str>,
    ) -> Result<Target, Error> {
        Ok(Target {
            method,
            uri: path.parse()?,
            host: addr.to_string().try_into()?,
            authorization: bearer
                .map(|t| format!("Bearer {t}").try_into())
                .transpose()?,
            prefer: None,
            each: None,
        })
    }

    /// The same request, carrying each of `values` in turn as its header
    /// `name`.
    fn each(
        self,
        name: hyper::header::HeaderName,
        values: Vec<hyper::header::HeaderValue>,
    ) -> Target {
        Target {
            each: Some(Arc::new(HeaderPool {
                name,
                values,
                next: AtomicUsize::new(0),
            })),
            ..self
        }
    }

    /// The same request with a `Prefer` header.
    fn prefer(self, value: &str) -> Result<Target, Error> {
        Ok(Target {
            prefer: Some(value.try_into()?),
            ..self
        })
    }

    fn request(&self) -> hyper::Request<Empty<Bytes>> {
        let mut req = hyper::Request::new(Empty::new());
        *req.method_mut() = self.method.clone();
        *req.uri_mut() = self.uri.clone();
        let headers = req.headers_mut();
        headers.insert(hyper::header::HOST, self.host.clone());
        if let Some(value) = &self.authorization {
            headers.insert(hyper::header::AUTHORIZATION, value.clone());
        }
        if let Some(value) = &self.prefer {
            headers.insert(PREFER, value.clone());
        }
        if let Some(pool) = &self.each {
            let i = pool.next.fetch_add(1, Ordering::Relaxed);
            if let Some(value) = pool.values.get(i % pool.values.len().max(1)) {
                headers.insert(pool.name.clone(), value.clone());
            }
        }
        req
    }
}

const PREFER: hyper::header::HeaderName = hyper::header::HeaderName::from_static("prefer");
const IDENTITY: hyper::header::HeaderName =
    hyper::header::HeaderName::from_static("waiting-room-identity");
const CHALLENGE: hyper::header::HeaderName =
    hyper::header::HeaderName::from_static("waiting-room-challenge");
/// The proof-of-work join phase's name in the report.
const JOIN_POW: &str = "join (pow)";

/// `count` solutions for the pow room `target` joins: seeds from the
/// origin's 428s (a join without a solution takes no place), fetched over
/// a few keep-alive connections, then solved on every core.
async fn pow_solutions(
    addr: SocketAddr,
    target: &Target,
    count: u64,
) -> Result<Vec<hyper::header::HeaderValue>, Error> {
    let started = Instant::now();
    let bare = Target {
        each: None,
        ..target.clone()
    };
    let next = Arc::new(AtomicU64::new(0));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..8 {
        let (next, bare) = (next.clone(), bare.clone());
        tasks.spawn(async move {
            let mut sender = connect(addr).await?;
            let mut seeds = Vec::new();
            while next.fetch_add(1, Ordering::Relaxed) < count {
                let response = sender.send_request(bare.request()).await?;
                let status = response.status();
                let body = response.into_body().collect().await?.to_bytes();
                let json: serde_json::Value = serde_json::from_slice(&body)?;
                match (status.as_u16(), json.pointer("/challenge/seed")) {
                    (428, Some(serde_json::Value::String(seed))) => seeds.push(seed.clone()),
                    _ => return Err(format!("expected a 428 with a seed: {status} {json}").into()),
                }
            }
            Ok::<_, Error>(seeds)
        });
    }
    let mut seeds = Vec::new();
    while let Some(done) = tasks.join_next().await {
        seeds.extend(done??);
    }
    let fetched = started.elapsed().as_secs_f64();
    let solutions = tokio::task::spawn_blocking(move || solve_all(&seeds)).await??;
    eprintln!(
        "{} pow solutions at {POW_BITS} bits: seeds fetched in {fetched:.1} s, solved in {:.1} s",
        solutions.len(),
        started.elapsed().as_secs_f64() - fetched
    );
    Ok(solutions)
}

/// Solves every seed at [`POW_BITS`], on as many threads as cores.
fn solve_all(seeds: &[String]) -> Result<Vec<hyper::header::HeaderValue>, Error> {
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let chunk = seeds.len().div_ceil(threads).max(1);
    std::thread::scope(|s| {
        let handles: Vec<_> = seeds
            .chunks(chunk)
            .map(|part| {
                s.spawn(move || {
                    part.iter()
                        .map(|seed| {
                            let (nonce, _) =
                                token::solve(seed, POW_BITS, 0).ok_or("no nonce for a seed")?;
                            Ok(hyper::header::HeaderValue::try_from(format!(
                                "{seed}.{nonce}"
                            ))?)
                        })
                        .collect::<Result<Vec<_>, Error>>()
                })
            })
            .collect();
        let mut out = Vec::with_capacity(seeds.len());
        for h in handles {
            out.extend(h.join().map_err(|_| "a solving thread panicked")??);
        }
        Ok(out)
    })
}

type Sender = hyper::client::conn::http1::SendRequest<Empty<Bytes>>;

async fn connect(addr: SocketAddr) -> Result<Sender, Error> {
    let tcp = tokio::net::TcpStream::connect(addr).await?;
    tcp.set_nodelay(true)?;
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp)).await?;
    tokio::spawn(conn);
    Ok(sender)
}

/// One request on a fresh connection; its body.
async fn one_request(addr: SocketAddr, target: &Target) -> Result<Bytes, Error> {
    let mut sender = connect(addr).await?;
    let response = sender.send_request(target.request()).await?;
    Ok(response.into_body().collect().await?.to_bytes())
}

/// Sends `total` requests over `connections` keep-alive connections, each
/// connection one request at a time (closed loop), stopping early after
/// `limit`. A 200 (204 for leave) counts as ok, anything else as an error.
async fn load(
    addr: SocketAddr,
    target: &Target,
    connections: usize,
    total: u64,
    limit: Duration,
) -> Result<Phase, Error> {
    let next = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let deadline = start + limit;
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..connections {
        let (next, target) = (next.clone(), target.clone());
        tasks.spawn(async move {
            let mut sender = connect(addr).await?;
            let (mut ok, mut errors) = (0u64, 0u64);
            let mut latencies = Vec::new();
            while next.fetch_add(1, Ordering::Relaxed) < total && Instant::now() < deadline {
                let sent = Instant::now();
                let response = sender.send_request(target.request()).await?;
                let status = response.status();
                response.into_body().collect().await?;
                latencies.push(u32::try_from(sent.elapsed().as_micros()).unwrap_or(u32::MAX));
                if status.is_success() {
                    ok += 1;
                } else {
                    errors += 1;
                }
            }
            Ok::<_, Error>((ok, errors, latencies))
        });
    }
    let mut phase = Phase {
        name: String::new(),
        ok: 0,
        errors: 0,
        seconds: 0.0,
        latencies_us: Vec::new(),
        rounds: Vec::new(),
        script_us: None,
        cpu_us: [None; 3],
        join_calls: JoinStats::default(),
    };
    while let Some(done) = tasks.join_next().await {
        let (ok, errors, latencies) = done??;
        phase.ok += ok;
        phase.errors += errors;
        phase.latencies_us.extend(latencies);
    }
    phase.seconds = start.elapsed().as_secs_f64();
    phase.latencies_us.sort_unstable();
    phase.rounds.push(phase.per_second());
    Ok(phase)
}

fn print_report(args: &Args, r: &Report) {
    if args.phases.contains(&PhaseKind::Http) {
        print_http(args, r);
    }
    print_polling(args, r);
}

/// The HTTP phases, memory per waiter and the promoter tick.
fn print_http(args: &Args, r: &Report) {
    let phase = |name: &str| r.phases.iter().find(|p| p.name == name);
    let healthz = phase("/healthz").map_or(f64::NAN, Phase::per_second);
    println!(
        "\nstore: {:?}; {} connections; {} rounds of {} requests per phase (at most {} s each); line of {}",
        args.store, args.connections, args.rounds, args.requests, args.seconds, args.line
    );
    println!("\n| phase | ok | errors | req/s | vs /healthz | p50 ms | p99 ms | Redis µs/script |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for p in &r.phases {
        println!(
            "| {} | {} | {} | {:.0} | {:.2} | {:.2} | {:.2} | {} |",
            p.name,
            p.ok,
            p.errors,
            p.per_second(),
            p.per_second() / healthz,
            p.percentile_ms(0.50),
            p.percentile_ms(0.99),
            p.script_us.map_or("-".to_owned(), |us| format!("{us:.1}"))
        );
    }
    // The ratio above pools every round; each round's own, against the
    // `/healthz` of the same round, shows how much the machine moved.
    if let Some(h) = phase("/healthz").filter(|h| h.rounds.len() > 1) {
        println!("\nEach round against its own /healthz (the machine's noise):");
        println!("\n| phase | per round | median |");
        println!("|---|---|---:|");
        for p in r.phases.iter().filter(|p| p.name != "/healthz") {
            let mut ratios: Vec<f64> = p.rounds.iter().zip(&h.rounds).map(|(x, y)| x / y).collect();
            let listed: Vec<String> = ratios.iter().map(|x| format!("{x:.2}")).collect();
            ratios.sort_by(f64::total_cmp);
            println!(
                "| {} | {} | {:.2} |",
                p.name,
                listed.join(", "),
                ratios[ratios.len() / 2]
            );
        }
    }
    // The identity join (target: at least 0.8) and the pow join (0.9)
    // against the plain one, round by round.
    for name in ["join (identity)", JOIN_POW] {
        if let (Some(id), Some(plain)) = (phase(name), phase("join")) {
            let listed: Vec<String> = id
                .rounds
                .iter()
                .zip(&plain.rounds)
                .map(|(x, y)| format!("{:.2}", x / y))
                .collect();
            println!(
                "\n{name} against join: {:.2} (rounds: {})",
                id.per_second() / plain.per_second(),
                listed.join(", ")
            );
        }
    }
    let us = |x: Option<f64>| x.map_or("-".to_owned(), |v| format!("{v:.0}"));
    println!("\nCPU time per request, µs (100 Hz accounting, so rough):");
    println!("\n| phase | origin | load generator | redis-server | total |");
    println!("|---|---:|---:|---:|---:|");
    for p in &r.phases {
        let total: Option<f64> = p.cpu_us.iter().copied().sum();
        println!(
            "| {} | {} | {} | {} | {} |",
            p.name,
            us(p.cpu_us[0]),
            us(p.cpu_us[1]),
            us(p.cpu_us[2]),
            us(total)
        );
    }
    for p in r.phases.iter().filter(|p| p.join_calls.batches > 0) {
        let c = p.join_calls;
        println!(
            "\n{}: the origin's store calls for joins: {} carrying {} ({:.1} a call), \
             {:.0}% of them carrying one join",
            p.name,
            c.batches,
            c.joins,
            c.joins as f64 / c.batches as f64,
            100.0 * c.alone as f64 / c.batches as f64
        );
    }
    if let (Some(front), Some(back)) = (phase(STATUS_FRONT), phase(STATUS_BACK)) {
        println!(
            "\nstatus back/front of a line of {}: throughput {:.2}, p99 {:.2}",
            args.line,
            back.per_second() / front.per_second(),
            back.percentile_ms(0.99) / front.percentile_ms(0.99)
        );
    }
    println!(
        "filling the line through the store: {:.1} s ({:.0} joins/s)",
        r.fill_seconds,
        args.line as f64 / r.fill_seconds
    );
    match (r.memory_per_waiter, args.store) {
        (Some(b), StoreKind::Memory) => println!(
            "embedded store memory per waiting visitor{}: {b:.0} B (process RSS delta / line)",
            if args.accounts {
                ", each with an account"
            } else {
                ""
            }
        ),
        (Some(b), StoreKind::Redis) => println!(
            "Redis memory per waiting visitor{}: {b:.0} B (used_memory delta / line)",
            if args.accounts {
                ", each with an account"
            } else {
                ""
            }
        ),
        (None, _) => println!("Redis memory per waiting visitor: not measured (--redis-url given)"),
    }
    let mut ticks = r.tick_ms.clone();
    ticks.sort_by(f64::total_cmp);
    if let (Some(min), Some(max)) = (ticks.first(), ticks.last()) {
        println!(
            "promoter tick admitting 1,000 (of {} ticks): median {:.2} ms, min {min:.2}, max {max:.2}",
            ticks.len(),
            ticks[ticks.len() / 2]
        );
    }
}

/// The polling runs: Redis commands per second, in all and per command.
fn print_polling(args: &Args, r: &Report) {
    if !r.polling.is_empty() {
        println!(
            "\nRedis commands per second while waiters poll as `poll_after_ms` says \
             (INFO commandstats over {} s, after one poll interval):",
            args.poll_seconds
        );
        println!(
            "\n| waiters | status snapshots | polls/s | errors | poll p99 ms | Redis commands/s (all) | sent by the origin/s | script µs/s |"
        );
        println!("|---:|---|---:|---:|---:|---:|---:|---:|");
        for p in &r.polling {
            println!(
                "| {} | {} | {:.0} | {} | {:.2} | {:.0} | {:.0} | {:.0} |",
                p.waiters,
                if p.snapshot { "on" } else { "off (before)" },
                p.polls_per_second,
                p.errors,
                p.p99_ms,
                p.commands_per_second,
                p.client_commands_per_second,
                p.script_us_per_second
            );
        }
        print_by_command(&r.polling);
    }
}

/// The polling runs' Redis counters per command: calls per second and, in
/// brackets, Redis µs per second (a script's µs include those of the
/// commands it ran), one column per run; commands ordered by their most
/// calls in any run.
fn print_by_command(runs: &[Polling]) {
    let mut names: Vec<(&str, f64)> = Vec::new();
    for run in runs {
        for (name, calls, _) in &run.by_command {
            match names.iter_mut().find(|(n, _)| n == name) {
                Some((_, most)) => *most = most.max(*calls),
                None => names.push((name, *calls)),
            }
        }
    }
    names.sort_by(|a, b| b.1.total_cmp(&a.1));
    let head: Vec<String> = runs
        .iter()
        .map(|p| format!("{} {}", p.waiters, if p.snapshot { "on" } else { "off" }))
        .collect();
    println!("\nPer command, calls/s (Redis µs/s), same runs:");
    println!("\n| command | {} |", head.join(" | "));
    println!("|---|{}", "---:|".repeat(runs.len()));
    for (name, _) in names {
        let cells: Vec<String> = runs
            .iter()
            .map(|p| {
                p.by_command
                    .iter()
                    .find(|(n, _, _)| n == name)
                    .map_or("0".to_owned(), |(_, calls, usec)| {
                        format!("{calls:.0} ({usec:.0})")
                    })
            })
            .collect();
        println!("| {name} | {} |", cells.join(" | "));
    }
}

/// Microseconds per clock tick of /proc's CPU accounting (USER_HZ is 100
/// on Linux).
const TICK_US: f64 = 10_000.0;

/// CPU ticks (user + system) used so far by this process's threads named
/// `origin*`, those named `load*`, and redis-server; `None` where unknown
/// (not Linux, or a Redis this program did not start).
/// This process's resident set size, in bytes (Linux `/proc/self/statm`).
fn resident_bytes() -> Result<u64, Error> {
    let statm = std::fs::read_to_string("/proc/self/statm")?;
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .ok_or("no resident size in /proc/self/statm")?;
    Ok(pages * 4096)
}

fn cpu_ticks(redis: Option<&RedisProcess>) -> [Option<u64>; 3] {
    fn ticks(stat: &str) -> Option<(String, u64)> {
        let open = stat.find('(')?;
        let close = stat.rfind(')')?;
        let name = stat.get(open + 1..close)?.to_owned();
        let rest: Vec<&str> = stat.get(close + 2..)?.split(' ').collect();
        let user: u64 = rest.get(11)?.parse().ok()?;
        let system: u64 = rest.get(12)?.parse().ok()?;
        Some((name, user + system))
    }
    let mut threads = [None, None];
    if let Ok(tasks) = std::fs::read_dir("/proc/self/task") {
        for task in tasks.flatten() {
            let Ok(stat) = std::fs::read_to_string(task.path().join("stat")) else {
                continue;
            };
            if let Some((name, t)) = ticks(&stat) {
                let slot = if name.starts_with("origin") {
                    0
                } else if name.starts_with("load") {
                    1
                } else {
                    continue;
                };
                threads[slot] = Some(threads[slot].unwrap_or(0) + t);
            }
        }
    }
    let server = redis.and_then(|r| {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", r.child.id())).ok()?;
        ticks(&stat).map(|(_, t)| t)
    });
    [threads[0], threads[1], server]
}

/// A `redis-server` this program owns: no persistence, a free loopback
/// port, a temporary folder; killed (by its pid) and removed on drop.
struct RedisProcess {
    child: Child,
    port: u16,
    dir: std::path::PathBuf,
}

impl RedisProcess {
    fn start() -> Result<RedisProcess, Error> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let dir = std::env::temp_dir().join(format!("wr-bench-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
            .arg("--dir")
            .arg(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("start redis-server (scripts/lib.sh installs it): {e}"))?;
        let server = RedisProcess { child, port, dir };
        let deadline = Instant::now() + Duration::from_secs(10);
        while server.info("server").is_err() {
            if Instant::now() > deadline {
                return Err("redis-server did not start".into());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(server)
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    fn info(&self, section: &str) -> Result<String, Error> {
        let client = redis::Client::open(self.url())?;
        let mut conn = client.get_connection_with_timeout(Duration::from_secs(2))?;
        Ok(redis::cmd("INFO").arg(section).query(&mut conn)?)
    }

    /// Script calls and the Redis time they took (µs), from INFO commandstats.
    fn script_stats(&self) -> Result<(u64, u64), Error> {
        Ok(commandstats::script_totals(&self.info("commandstats")?))
    }

    /// Every command's name, calls and Redis time (µs), from INFO
    /// commandstats (inside scripts included).
    fn command_stats(&self) -> Result<Vec<(String, u64, u64)>, Error> {
        let info = self.info("commandstats")?;
        let mut stats = Vec::new();
        for line in info.lines() {
            let Some((name, rest)) = line
                .strip_prefix("cmdstat_")
                .and_then(|l| l.split_once(':'))
            else {
                continue;
            };
            let (mut calls, mut usec) = (0, 0);
            for field in rest.split(',') {
                match field.split_once('=') {
                    Some(("calls", v)) => calls = v.parse::<u64>().unwrap_or(0),
                    Some(("usec", v)) => usec = v.parse::<u64>().unwrap_or(0),
                    _ => {}
                }
            }
            stats.push((name.to_owned(), calls, usec));
        }
        Ok(stats)
    }

    /// `used_memory` from INFO memory, in bytes.
    fn used_memory(&self) -> Result<u64, Error> {
        let info = self.info("memory")?;
        info.lines()
            .find_map(|l| l.strip_prefix("used_memory:"))
            .and_then(|v| v.trim().parse().ok())
            .ok_or_else(|| "no used_memory in INFO".into())
    }
}

impl Drop for RedisProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
