//! What one request costs the origin's own code, without the network: the
//! real router (every layer, extractor and handler) driven in this process
//! through `tower::ServiceExt::oneshot` on a one-thread runtime, `--requests`
//! times in a row. It exists for A/B comparisons under `valgrind
//! --tool=callgrind`, whose instruction counts repeat on a noisy shared
//! machine where timings do not (BENCHMARKS.md, "The queue", tools for a
//! closer look):
//!
//! ```sh
//! valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.out \
//!   target/release/request_cost --phase status-back --requests 20000
//! ```
//!
//! Run it twice with different `--requests` and divide the difference in
//! instructions by the difference in requests: that is the cost of one
//! request, set-up excluded. The loopback TCP, hyper's parsing and the
//! kernel, which `/healthz` pays as much as any route, are not in it; on
//! Redis the client's encoding and decoding is, the server's work is not.
//!
//! With `--redis-url`, it also prints the Redis time its scripts took (per
//! call and per request, from `INFO commandstats`): a script's own cost;
//! give it a Redis of its own.
//!
//! The phases match `bench.rs`'s HTTP phases: `/healthz`, a join to a
//! paused room (every join takes a place), the same join to a room that
//! requires identity (an HS256 token of an account of its own each) or asks
//! a proof of work (a solution of its own each, at 8 bits: the check costs
//! the same at any difficulty), and status at the front and at
//! the back of a line of `--line` waiters (the back answered from the
//! status snapshot, refreshed here every `REFRESH_EVERY` requests as the
//! promoter would every tick). Nothing leaves this process but the Redis
//! connection (`--redis-url`, a key prefix of its own).
//!
//! The tokens and solutions are made before the first request,
//! `--prepared` of them whatever `--requests` says, so two runs that differ
//! only in `--requests` differ only in requests.
//!
//! `--in-flight` sends that many requests at a time (each its own task), as
//! the bench's connections do: on Redis, joins then reach the store in
//! batches as they do under load, which one at a time they never do. The
//! origin's allocator is the binary's (mimalloc), as in the bench.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::ConnectInfo;
use axum::http::{Method, Request, StatusCode, header};
use bench::accounts::{self, unix_now};
use bench::commandstats;
use clap::{Parser, ValueEnum};
use http_body_util::BodyExt;
use origin::queue::QueueStore;
use origin::queue::memory::MemoryStore;
use origin::queue::redis::{RedisConfig, RedisStore};
use origin::room::{ChallengeKind, IdentityMode};
use origin::room::{RoomId, RoomSettings, RoomState};
use origin::state::AppState;
use token::{Claims, Keyring, Kind};
use tower::ServiceExt;

const KEYS: &str = "bench:bench-secret-0123456789abcdef";
/// The promoter's interval; the snapshot answers for two of them.
const TICK: Duration = Duration::from_millis(100);
/// Requests between two snapshot refreshes: under valgrind a few hundred
/// requests take longer than the snapshot's life.
const REFRESH_EVERY: u64 = 50;
/// The pow phase's difficulty: the least a room takes.
const POW_BITS: u8 = 8;

/// The allocator the `origin` binary ships with (its `main.rs`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser, Debug)]
#[command(about = "Runs one request kind through the origin's router in-process, for callgrind")]
struct Args {
    /// The request to repeat.
    #[arg(long, value_enum)]
    phase: PhaseKind,
    /// How many times.
    #[arg(long, default_value_t = 10_000)]
    requests: u64,
    /// Waiters in the status phases' line.
    #[arg(long, default_value_t = 10_000)]
    line: u64,
    /// Identity tokens or pow solutions made before the first request (at
    /// least `--requests`).
    #[arg(long, default_value_t = 20_000)]
    prepared: u64,
    /// Requests sent at a time (each a task of its own); 1 sends them one
    /// after another, with no task per request.
    #[arg(long, default_value_t = 1)]
    in_flight: u64,
    /// Run on this Redis (a key prefix of this process's own) rather than
    /// the embedded store.
    #[arg(long)]
    redis_url: Option<String>,
    /// Log as the `origin` binary does (its `tracing` subscriber and
    /// filter), to a sink: what logging costs a request in production.
    #[arg(long)]
    log: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum PhaseKind {
    Healthz,
    Join,
    JoinIdentity,
    JoinPow,
    StatusFront,
    StatusBack,
}

type Error = Box<dyn std::error::Error + Send + Sync>;

fn main() -> ExitCode {
    let args = Args::parse();
    if args.log {
        tracing_subscriber::fmt()
            .with_env_filter(origin::telemetry::log_filter())
            .with_writer(std::io::sink)
            .init();
    }
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("request_cost: {e}");
            return ExitCode::FAILURE;
        }
    };
    match rt.block_on(run(&args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("request_cost: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: &Args) -> Result<(), Error> {
    let store: Arc<dyn QueueStore> = match &args.redis_url {
        Some(url) => Arc::new(RedisStore::connect(&RedisConfig {
            url: url.clone(),
            prefix: format!("wr-cost-{}:", std::process::id()),
            timeout: Duration::from_secs(10),
            cluster: false,
        })?),
        None => Arc::new(MemoryStore::new()),
    };
    let keys = Keyring::parse(KEYS).map_err(|e| format!("keys: {e}"))?;
    let state = AppState::new(store.clone(), keys.clone())
        .with_status_snapshots(TICK)
        .with_identities(accounts::identities()?);
    let app = origin::http::app(state.clone());

    let room = RoomId::parse(match args.phase {
        PhaseKind::Join => "cost-join",
        PhaseKind::JoinIdentity => "cost-identity",
        PhaseKind::JoinPow => "cost-pow",
        _ => "cost-line",
    })
    .ok_or("room id")?;
    store
        .put_room(
            &room,
            &RoomSettings {
                capacity: 1_000,
                admit_per_second: 1_000.0,
                session_seconds: 3_600,
                abandon_seconds: 86_400,
                identity: if args.phase == PhaseKind::JoinIdentity {
                    IdentityMode::Required
                } else {
                    IdentityMode::Off
                },
                challenge: if args.phase == PhaseKind::JoinPow {
                    ChallengeKind::Pow
                } else {
                    ChallengeKind::Off
                },
                challenge_bits: POW_BITS,
                ..RoomSettings::default()
            },
        )
        .await?;
    store.set_state(&room, RoomState::Paused).await?;

    let (method, path, bearer) = match args.phase {
        PhaseKind::Healthz => (Method::GET, "/healthz".to_owned(), None),
        PhaseKind::Join | PhaseKind::JoinIdentity | PhaseKind::JoinPow => {
            (Method::POST, format!("/queue/{room}/join"), None)
        }
        PhaseKind::StatusFront | PhaseKind::StatusBack => {
            let (mut first, mut last) = (u64::MAX, 0);
            for _ in 0..args.line {
                let snap = store
                    .join(&room, None, None)
                    .await?
                    .answer()
                    .ok_or("no place")?;
                let seq = snap.seq.ok_or("a join got no place")?;
                first = first.min(seq);
                last = last.max(seq);
            }
            let seq = if args.phase == PhaseKind::StatusFront {
                first
            } else {
                last
            };
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)?
                .as_secs();
            let ticket = keys.sign(&Claims {
                kind: Kind::Ticket,
                room: room.to_string(),
                visitor: 7,
                seq,
                issued_at: now,
                expires_at: now + 3_600,
                account: None,
            });
            (
                Method::GET,
                format!("/queue/{room}/status"),
                Some(format!("Bearer {ticket}")),
            )
        }
    };
    if args.requests > args.prepared {
        return Err("--requests is more than --prepared".into());
    }
    let each = match args.phase {
        PhaseKind::JoinIdentity => Some((
            "waiting-room-identity",
            accounts::tokens(&room, args.prepared, unix_now()),
        )),
        PhaseKind::JoinPow => Some((
            "waiting-room-challenge",
            pow_solutions(&keys, &room, args.prepared)?,
        )),
        _ => None,
    };
    let mut sent = 0usize;
    let mut request = || {
        let mut req = Request::builder()
            .method(method.clone())
            .uri(&path)
            .header(header::HOST, "127.0.0.1:8080");
        if let Some(b) = &bearer {
            req = req.header(header::AUTHORIZATION, b);
        }
        if let Some((name, values)) = &each {
            req = req.header(*name, &values[sent]);
        }
        sent += 1;
        let mut req = req.body(Body::empty())?;
        req.extensions_mut()
            .insert(ConnectInfo(std::net::SocketAddr::from((
                [127, 0, 0, 1],
                40_000,
            ))));
        Ok::<_, Error>(req)
    };

    // The first status marks the waiter; the refresh after it finds the
    // waiter in line, so later polls from the back are the snapshot's.
    let mut last_body = Vec::new();
    let scripts_before = args.redis_url.as_deref().map(script_stats).transpose()?;
    let in_flight = args.in_flight.max(1);
    let (mut i, mut next_refresh) = (0, 0);
    let started = std::time::Instant::now();
    while i < args.requests {
        // Only status reads the snapshot: a join phase refreshing it every
        // few batches would count observe.lua's time as the joins' (the
        // promoter refreshes it ten times a second, nothing per join).
        if i >= next_refresh && matches!(args.phase, PhaseKind::StatusFront | PhaseKind::StatusBack)
        {
            state.snapshots.refresh(store.as_ref(), &room).await?;
            next_refresh = i + REFRESH_EVERY;
        }
        let n = in_flight.min(args.requests - i);
        let body = if n == 1 {
            answer(app.clone(), request()?).await?
        } else {
            let mut tasks = tokio::task::JoinSet::new();
            for _ in 0..n {
                tasks.spawn(answer(app.clone(), request()?));
            }
            let mut body = Bytes::new();
            while let Some(done) = tasks.join_next().await {
                body = done??;
            }
            body
        };
        i += n;
        if i == args.requests {
            last_body = body.to_vec();
        }
    }
    let took = started.elapsed();
    let stats = state.joins.stats();
    eprintln!(
        "{:?}: {} requests; last answer: {}; join batches {} carrying {}",
        args.phase,
        args.requests,
        String::from_utf8_lossy(&last_body),
        stats.batches,
        stats.joins
    );
    // Natively, on one thread: what callgrind's counts miss (cache misses,
    // page faults); a shared machine moves it by 10 to 20 %.
    eprintln!(
        "{:.2} µs a request, wall time of the requests alone",
        took.as_secs_f64() * 1e6 / args.requests as f64
    );
    if let (Some(url), Some((calls0, usec0))) = (&args.redis_url, scripts_before) {
        let (calls, usec) = script_stats(url)?;
        let (calls, usec) = (calls - calls0, usec - usec0);
        eprintln!(
            "Redis: {calls} script calls, {:.1} µs each, {:.2} µs of scripts per request \
             (INFO commandstats: give it a Redis of its own)",
            usec as f64 / calls.max(1) as f64,
            usec as f64 / args.requests as f64
        );
    }
    Ok(())
}

/// One solved proof-of-work seed for `room` per request (`seed.nonce`),
/// signed with the origin's key as its 428s are, good for five minutes.
fn pow_solutions(keys: &Keyring, room: &RoomId, count: u64) -> Result<Vec<String>, Error> {
    let expires = unix_now() + 300;
    (0..count)
        .map(|_| {
            let seed = keys.sign_seed(room.as_str(), expires, rand::random());
            let (nonce, _) = token::solve(&seed, POW_BITS, 0).ok_or("no nonce for a seed")?;
            Ok(format!("{seed}.{nonce}"))
        })
        .collect()
}

/// Script calls and the Redis time they took (µs) so far, from `INFO
/// commandstats`: the server's own measure of what the scripts cost it.
fn script_stats(url: &str) -> Result<(u64, u64), Error> {
    let client = redis::Client::open(url)?;
    let mut conn = client.get_connection_with_timeout(Duration::from_secs(2))?;
    let info: String = redis::cmd("INFO").arg("commandstats").query(&mut conn)?;
    Ok(commandstats::script_totals(&info))
}

/// One request through the router: its body, if the answer was 200.
async fn answer(app: axum::Router, request: Request<Body>) -> Result<Bytes, Error> {
    let response = app.oneshot(request).await?;
    if response.status() != StatusCode::OK {
        return Err(format!("status {}", response.status()).into());
    }
    Ok(response.into_body().collect().await?.to_bytes())
}
