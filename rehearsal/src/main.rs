//! `rehearsal`: plays an on-sale against a running waiting room, through
//! the edge or straight at the origin, and reports what happened.
//!
//! N virtual visitors (one tokio task each, one shared connection pool)
//! arrive on a curve, join and poll as the waiting page does, some abandon,
//! and the admitted ones hold seats, pay and confirm, or let the hold run
//! out. Meanwhile the operator's view (the admin API's live figures and the
//! seat counts) is sampled four times a second. At the end: a JSON report
//! and an SVG chart (`report.rs`, `chart.rs`), and a summary on stdout.
//!
//! Bounded: at most `--visitors` visitors and `--max-seconds` of run, and
//! only loopback targets unless `--allow-remote`.
//!
//! With `--accounts`, the visitors are browsers of the operator's site's
//! accounts, several each, joining with identity tokens the tool mints.
//! With `--challenge pow` the room asks every join for a proof of work,
//! which the visitors solve; `--bots` adds clients that do not pay as
//! people do (never solve, share one solution, or solve on threads of
//! their own), and the report counts the places they got.
//!
//! Layout: `curve` (arrivals), `visitor` (one visitor's play), `client`
//! (HTTP with a visitor's cookies), `challenge` (solving proofs of work),
//! `bots` (one bot's play), `admin` (the operator's calls),
//! `accounts` (whose browser each visitor is), `identity` (the tokens),
//! `stats` (percentiles, Kendall's tau), `report` (the JSON), `chart` (the
//! SVG), `progress` (the live counts while it plays), `rng` (seeded, so a
//! `--seed` replays a run), `error` (what stops a run).

mod accounts;
mod admin;
mod bots;
mod challenge;
mod chart;
mod client;
mod curve;
mod draw;
mod error;
mod identity;
mod progress;
mod report;
mod rng;
mod stats;
mod visitor;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The tool answers 18,000 visitors at the sell-out in one second; glibc's
/// malloc spent a quarter of its CPU there (Cargo.toml says where).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use clap::Parser;
use serde_json::{Value, json};

use crate::admin::Admin;
use crate::curve::{Curve, CurveKind};
use crate::error::Error;
use crate::identity::IdentityKey;
use crate::rng::Rng;
use crate::visitor::{Ctx, Plan};

/// The command line (each flag also reads a `WR_REHEARSAL_*` variable).
#[derive(Parser, Debug, Clone)]
#[command(
    name = "rehearsal",
    version,
    about = "Plays an on-sale against a running waiting room and reports on it"
)]
struct Args {
    /// Where visitors go: the origin, or the edge in front of it.
    #[arg(
        long,
        env = "WR_REHEARSAL_URL",
        default_value = "http://127.0.0.1:8080"
    )]
    url: String,
    /// The origin's admin API (default: --url).
    #[arg(long, env = "WR_REHEARSAL_ADMIN_URL")]
    admin_url: Option<String>,
    /// The admin key (not needed by --check-draw).
    #[arg(
        long,
        env = "WR_ADMIN_KEY",
        hide_env_values = true,
        required_unless_present = "check_draw"
    )]
    admin_key: Option<String>,
    /// The key `/metrics` asks for, if any.
    #[arg(long, env = "WR_METRICS_KEY", hide_env_values = true)]
    metrics_key: Option<String>,
    /// The origin's signing keys (`kid:secret,...`), to read each ticket's
    /// seq (join order). Without them join order is the order joins were answered.
    #[arg(long, env = "WR_SIGNING_KEYS", hide_env_values = true)]
    signing_keys: Option<String>,
    /// Allow a target that is not loopback.
    #[arg(long)]
    allow_remote: bool,

    /// The room (default: a new `rehearsal-<time>`).
    #[arg(long)]
    room: Option<String>,
    /// The performance on sale.
    #[arg(long, default_value = "rehearsal")]
    performance: String,
    /// Use the room and performance as they are; create nothing.
    #[arg(long)]
    existing: bool,

    /// Visitors (at most 200,000).
    #[arg(long, default_value_t = 1_000)]
    visitors: usize,
    /// The arrival curve.
    #[arg(long, value_enum, default_value_t = CurveKind::Burst)]
    curve: CurveKind,
    /// How long arrivals last, in seconds.
    #[arg(long, default_value_t = 10.0)]
    arrive_within: f64,
    /// Spike: the share of visitors in the one-second spike.
    #[arg(long, default_value_t = 0.5)]
    spike_share: f64,
    /// Spike: when it comes, seconds after the first arrival.
    #[arg(long, default_value_t = 5.0)]
    spike_at: f64,
    /// A pre-queue: the room opens this many seconds after the start (0: open now).
    /// The report then checks the pre-queue was let in in the order its
    /// draw gives, recomputed from the seed the room tells at the opening.
    #[arg(long, default_value_t = 0.0)]
    opens_in: f64,
    /// Plays nothing: checks the seqs in FILE (one a line, in the order
    /// they were let in) against the pre-queue draw of --draw-seed, or of
    /// the seed --room tells (`GET /queue/{room}/draw`), and prints the
    /// comparison as JSON (exit 1 when the orders differ).
    #[arg(long, value_name = "FILE")]
    check_draw: Option<PathBuf>,
    /// The draw's seed (hex) for --check-draw.
    #[arg(long, value_name = "HEX", requires = "check_draw")]
    draw_seed: Option<String>,

    /// Room: most visitors inside at once.
    #[arg(long, default_value_t = 200)]
    capacity: u32,
    /// Room: admissions per second.
    #[arg(long, default_value_t = 25.0)]
    admit_per_second: f64,
    /// Room: session length, seconds.
    #[arg(long, default_value_t = 120)]
    session_seconds: u32,
    /// Room: how long a waiter who stopped polling keeps its place (polls
    /// come at most every third of it).
    #[arg(long, default_value_t = 6)]
    abandon_seconds: u32,
    /// Room: adaptive admission's target booking p99, ms (unset: off).
    #[arg(long)]
    target_booking_p99_ms: Option<u32>,
    /// Seats on sale (a multiple of 20).
    #[arg(long, default_value_t = 2_000)]
    seats: u64,
    /// How long a hold lasts, seconds.
    #[arg(long, default_value_t = 30)]
    hold_seconds: u32,
    /// Most seats one visitor wants (each wants 1 to this many).
    #[arg(long, default_value_t = 4)]
    max_seats: usize,

    /// Accounts of the operator's site the visitors are browsers of: each
    /// account has 1 to 8 (`--visitors` in all), arriving at random places
    /// of the curve, and joins with an identity token for the room.
    #[arg(long, requires = "identity_key")]
    accounts: Option<usize>,
    /// The HS256 key (`kid:secret`) identity tokens are minted with: one
    /// of the origin's `--identity-keys`.
    #[arg(long, env = "WR_REHEARSAL_IDENTITY_KEY", hide_env_values = true)]
    identity_key: Option<String>,
    /// Room: the `identity` setting (default: `required` with --accounts,
    /// else left out).
    #[arg(long, value_enum)]
    identity: Option<IdentityMode>,
    /// Performance: most seats one account holds and books
    /// (`max_seats_per_account`; unset: no limit).
    #[arg(long)]
    max_seats_per_account: Option<u32>,

    /// Room: the join challenge (`challenge`; unset: left out).
    #[arg(long, value_enum)]
    challenge: Option<ChallengeMode>,
    /// Room: the proof of work's difficulty (`challenge_bits`, 8 to 32;
    /// unset: the origin's default).
    #[arg(long)]
    challenge_bits: Option<u8>,
    /// Bots besides the visitors, on the same arrival curve.
    #[arg(long, default_value_t = 0)]
    bots: usize,
    /// What the bots do with the challenge.
    #[arg(long, value_enum, default_value_t = bots::BotKind::Never)]
    bot_kind: bots::BotKind,
    /// Threads each solving bot solves on.
    #[arg(long, default_value_t = 2)]
    bot_threads: usize,

    /// Share of visitors who close the tab while waiting (after 2-60 s).
    #[arg(long, default_value_t = 0.05)]
    abandon_share: f64,
    /// Share of buyers whose first card is declined.
    #[arg(long, default_value_t = 0.1)]
    decline_share: f64,
    /// Share of buyers who hold seats and walk away.
    #[arg(long, default_value_t = 0.05)]
    expire_share: f64,

    /// Slows the simulated payment to this latency mid-sale (ms; the origin
    /// needs `--payment-knob`), to watch adaptive admission answer.
    #[arg(long)]
    slow_payment_ms: Option<u64>,
    /// When the slow payment starts, seconds after the start.
    #[arg(long, default_value_t = 20.0)]
    slow_payment_at: f64,
    /// How long the payment stays slow, seconds.
    #[arg(long, default_value_t = 20.0)]
    slow_payment_for: f64,

    /// Pauses the room this many seconds after the start (the operator's
    /// pause), to measure how soon waiters hear the resume.
    #[arg(long)]
    pause_at: Option<f64>,
    /// How long the room stays paused, seconds.
    #[arg(long, default_value_t = 10.0)]
    pause_for: f64,

    /// The run stops after this many seconds, whatever happens.
    #[arg(long, default_value_t = 300)]
    max_seconds: u64,
    /// Seed of every random choice.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Where the report goes (`report.json`, `chart.svg`).
    #[arg(long, default_value = "target/rehearsal")]
    out: PathBuf,
    /// Most requests in flight at once (a connection each); past it a
    /// visitor's request waits, and the report counts how many did. By
    /// default this process's open-file limit less 1,256 for everything
    /// else (the origin's connection cap, set by `scripts/rehearsal.sh`
    /// from the same limit, stays above it).
    #[arg(long)]
    max_in_flight: Option<usize>,
    /// No progress bars (logs and CI).
    #[arg(long)]
    no_progress: bool,
    /// Exit 1 unless every invariant holds: FIFO, capacity, no seat sold
    /// twice, no unexpected error (timing targets are reported, not judged).
    #[arg(long)]
    check: bool,
}

/// A room's `identity` setting.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
enum IdentityMode {
    /// Identities are not read.
    Off,
    /// A join may carry one.
    Optional,
    /// Every join carries one.
    Required,
}

/// A room's `challenge` setting, as far as the tool can play it.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
enum ChallengeMode {
    /// No challenge.
    Off,
    /// A proof of work.
    Pow,
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "rehearsal=info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("rehearsal: runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match rt.block_on(run(args)) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("rehearsal: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Refuses a URL whose host is not loopback, unless allowed.
fn check_target(url: &str, allow_remote: bool) -> Result<(), Error> {
    let parsed = reqwest::Url::parse(url).map_err(|e| Error::Config(format!("{url}: {e}")))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(Error::Config(format!("{url}: http or https only")));
    }
    let loopback = match parsed.host() {
        Some(url::Host::Ipv4(a)) => a.is_loopback(),
        Some(url::Host::Ipv6(a)) => a.is_loopback(),
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        None => false,
    };
    if loopback || allow_remote {
        Ok(())
    } else {
        Err(Error::Remote(url.to_owned()))
    }
}

fn validate(a: &Args) -> Result<(), Error> {
    let share = |name: &str, v: f64| {
        if (0.0..=1.0).contains(&v) {
            Ok(())
        } else {
            Err(Error::Config(format!("--{name} {v}: a share, 0 to 1")))
        }
    };
    share("abandon-share", a.abandon_share)?;
    share("decline-share", a.decline_share)?;
    share("expire-share", a.expire_share)?;
    share("spike-share", a.spike_share)?;
    if a.visitors == 0 || a.visitors > 200_000 {
        return Err(Error::Config(format!(
            "--visitors {}: 1 to 200,000",
            a.visitors
        )));
    }
    if !(0.0..=3600.0).contains(&a.arrive_within)
        || !(0.0..=3600.0).contains(&a.opens_in)
        || !(0.0..=3600.0).contains(&a.spike_at)
    {
        return Err(Error::Config(
            "--arrive-within, --opens-in, --spike-at: 0 to 3600 seconds".into(),
        ));
    }
    if a.max_seconds == 0 || a.max_seconds > 3600 {
        return Err(Error::Config(format!(
            "--max-seconds {}: 1 to 3600",
            a.max_seconds
        )));
    }
    if a.max_seats == 0 {
        return Err(Error::Config("--max-seats: at least 1".into()));
    }
    if a.room.as_deref().is_some_and(|r| !token::is_valid_room(r)) {
        return Err(Error::Config("--room: ^[a-z0-9][a-z0-9-]{0,63}$".into()));
    }
    if let Some(n) = a.accounts {
        if n == 0 || a.visitors < n || a.visitors > n * accounts::MAX_BROWSERS {
            return Err(Error::Config(format!(
                "--accounts {n}: 1 to --visitors ({}), each with 1 to {} browsers",
                a.visitors,
                accounts::MAX_BROWSERS
            )));
        }
        // The places per account are read off the tickets.
        if a.signing_keys.is_none() {
            return Err(Error::Config(
                "--accounts needs --signing-keys, to read each ticket's place".into(),
            ));
        }
    } else if a.identity_key.is_some() {
        return Err(Error::Config("--identity-key is for --accounts".into()));
    }
    if a.challenge_bits.is_some_and(|b| !(8..=32).contains(&b)) {
        return Err(Error::Config("--challenge-bits: 8 to 32".into()));
    }
    if a.bots > 200_000 {
        return Err(Error::Config(format!("--bots {}: at most 200,000", a.bots)));
    }
    if !(1..=64).contains(&a.bot_threads) {
        return Err(Error::Config("--bot-threads: 1 to 64".into()));
    }
    // The bots' places are read off their tickets.
    if a.bots > 0 && a.signing_keys.is_none() {
        return Err(Error::Config(
            "--bots needs --signing-keys, to read each ticket's place".into(),
        ));
    }
    if a.max_seats_per_account == Some(0) {
        return Err(Error::Config("--max-seats-per-account: at least 1".into()));
    }
    Ok(())
}

fn rfc3339(at: std::time::SystemTime) -> String {
    let t: time::OffsetDateTime = at.into();
    t.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

/// A room answer's `settings`, `Null` when it has none (its fields then
/// read as the arguments' values).
fn settings_of(room: &Value) -> Value {
    room.get("settings").cloned().unwrap_or(Value::Null)
}

async fn run(args: Args) -> Result<bool, Error> {
    if let Some(path) = &args.check_draw {
        let out = draw::check_file(
            path,
            args.draw_seed.as_deref(),
            &args.url,
            args.room.as_deref(),
        )
        .await?;
        println!("{out:#}");
        return Ok(out.get("same_order") == Some(&Value::Bool(true)));
    }
    validate(&args)?;
    let admin_url = args.admin_url.clone().unwrap_or_else(|| args.url.clone());
    check_target(&args.url, args.allow_remote)?;
    check_target(&admin_url, args.allow_remote)?;
    let keys = match &args.signing_keys {
        Some(spec) => Some(
            token::Keyring::parse(spec)
                .map_err(|e| Error::Config(format!("--signing-keys: {e}")))?,
        ),
        None => None,
    };
    let identity_key = args
        .identity_key
        .as_deref()
        .map(IdentityKey::parse)
        .transpose()?;
    let admin_key = args.admin_key.clone().unwrap_or_default();
    let admin = Admin::new(&admin_url, &admin_key, args.metrics_key.clone())?;
    let now = std::time::SystemTime::now();
    let room = args.room.clone().unwrap_or_else(|| {
        format!(
            "rehearsal-{}",
            now.duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0)
        )
    });
    let perf = args.performance.clone();

    // The run's zero is now; visitors start arriving one second later, so
    // setup is done before the first arrives.
    let lead = Duration::from_secs(1);
    let opens_ms = if args.opens_in > 0.0 {
        lead.as_millis() as u64 + (args.opens_in * 1000.0) as u64
    } else {
        0
    };
    let mut room_settings = json!({
        "capacity": args.capacity,
        "admit_per_second": args.admit_per_second,
        "session_seconds": args.session_seconds,
        "abandon_seconds": args.abandon_seconds,
        "opens_at": (opens_ms > 0).then(|| rfc3339(now + Duration::from_millis(opens_ms))),
        "target_booking_p99_ms": args.target_booking_p99_ms,
    });
    // Only when asked for: an origin without accounts refuses the field.
    let identity_mode = args
        .identity
        .or(args.accounts.map(|_| IdentityMode::Required));
    if let (Some(mode), Some(obj)) = (identity_mode, room_settings.as_object_mut()) {
        obj.insert("identity".into(), json!(mode));
    }
    if let Some(obj) = room_settings.as_object_mut() {
        if let Some(mode) = args.challenge {
            obj.insert("challenge".into(), json!(mode));
        }
        if let Some(bits) = args.challenge_bits {
            obj.insert("challenge_bits".into(), json!(bits));
        }
    }
    let start = Instant::now();
    let (settings, seats_total, hold_max) = if args.existing {
        let (room_v, _) = admin.room(&room).await?;
        let seats = admin.seats(&room, &perf).await?;
        let total = seats.available + seats.held + seats.booked;
        (settings_of(&room_v), total, args.max_seats)
    } else {
        let map = admin::seat_map(args.seats)?;
        let room_v = admin.put_room(&room, &room_settings).await?;
        let starts_at = rfc3339(now + Duration::from_secs(30 * 86_400));
        let mut spec = json!({
            "title": "Rehearsal", "starts_at": starts_at, "hold_seconds": args.hold_seconds,
            "max_seats_per_hold": args.max_seats, "sections": map,
        });
        if let (Some(k), Some(obj)) = (args.max_seats_per_account, spec.as_object_mut()) {
            obj.insert("max_seats_per_account".into(), json!(k));
        }
        admin.put_performance(&room, &perf, &spec).await?;
        (settings_of(&room_v), args.seats, args.max_seats)
    };
    let capacity = settings
        .get("capacity")
        .and_then(Value::as_u64)
        .unwrap_or(args.capacity as u64);
    let admit_per_second = settings
        .get("admit_per_second")
        .and_then(Value::as_f64)
        .unwrap_or(args.admit_per_second);
    tracing::info!(%room, %perf, seats_total, capacity, admit_per_second, "room ready");
    // The draw's commitment, read before the first visitor arrives.
    let committed = if opens_ms > 0 {
        match draw::fetch(&args.url, &room).await {
            Ok(p) => Some(p),
            Err(e) => {
                tracing::warn!("the draw's commitment: {e}");
                None
            }
        }
    } else {
        None
    };

    let curve = Curve {
        kind: args.curve,
        within_ms: (args.arrive_within * 1000.0) as u64,
        spike_share: args.spike_share,
        spike_at_ms: (args.spike_at * 1000.0) as u64,
    };
    let mut rng = Rng::new(args.seed);
    // Whose browser each visitor is, and each account's identity token.
    let (browsers, account_of, tokens) = match (args.accounts, &identity_key) {
        (Some(n), Some(key)) => {
            let mut draw = Rng::new(args.seed ^ 0xacc0_u64);
            let browsers = accounts::browsers(args.visitors, n, &mut draw)?;
            let account_of = accounts::assign(&browsers, &mut draw);
            let iat = now
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0);
            let tokens = (0..n)
                .map(|i| {
                    Ok(Arc::<str>::from(key.mint(
                        &accounts::account_id(i),
                        &room,
                        iat,
                    )?))
                })
                .collect::<Result<Vec<_>, Error>>()?;
            (browsers, account_of, tokens)
        }
        _ => Default::default(),
    };
    let plans: Vec<Plan> = (0..args.visitors)
        .map(|i| Plan {
            index: i,
            arrive_ms: lead.as_millis() as u64 + curve.arrival_ms(i, args.visitors),
            abandon_after_ms: rng
                .chance(args.abandon_share)
                .then(|| 2_000 + rng.below(58_000)),
            seats: 1 + rng.below(hold_max as u64) as usize,
            declined_first: rng.chance(args.decline_share),
            lets_hold_expire: rng.chance(args.expire_share),
            seed: rng.next_u64(),
            account: account_of
                .get(i)
                .and_then(|&a| Some((a, tokens.get(a)?.clone()))),
        })
        .collect();

    // Bots arrive on the same curve, in their own draw.
    let mut bot_rng = Rng::new(args.seed ^ 0xb075_u64);
    let bot_plans: Vec<bots::BotPlan> = (0..args.bots)
        .map(|i| bots::BotPlan {
            arrive_ms: lead.as_millis() as u64 + curve.arrival_ms(i, args.bots),
            seed: bot_rng.next_u64(),
        })
        .collect();

    let max_in_flight = args.max_in_flight.unwrap_or_else(open_file_budget);
    let http = client::Http::new(&args.url, &room, max_in_flight).map_err(|e| Error::Http {
        what: "client".into(),
        detail: e.to_string(),
    })?;
    let deadline = start + Duration::from_secs(args.max_seconds);
    let ctx = Arc::new(Ctx {
        http,
        room: room.clone(),
        performance: perf.clone(),
        start,
        deadline,
        counters: Default::default(),
        keys,
    });

    // The operator's view, four times a second until the visitors are done.
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let sampler = {
        let (admin, room, perf, stop) = (admin.clone(), room.clone(), perf.clone(), stopped);
        tokio::spawn(async move {
            let mut samples = Vec::new();
            let mut tick = tokio::time::interval(Duration::from_millis(250));
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let t = start.elapsed().as_secs_f64();
                if let (Ok((_, live)), Ok(seats)) =
                    (admin.room(&room).await, admin.seats(&room, &perf).await)
                {
                    samples.push(report::Sample { t, live, seats });
                }
                if *stop.borrow() {
                    break;
                }
            }
            samples
        })
    };
    if let Some(ms) = args.slow_payment_ms {
        let admin = admin.clone();
        let (at, len) = (
            Duration::from_secs_f64(args.slow_payment_at.clamp(0.0, 3600.0)),
            Duration::from_secs_f64(args.slow_payment_for.clamp(0.0, 3600.0)),
        );
        tokio::spawn(async move {
            tokio::time::sleep_until((start + at).into()).await;
            match admin.set_payment_latency(ms).await {
                Ok(_) => tracing::info!(latency_ms = ms, "payment slowed"),
                Err(e) => tracing::error!("cannot slow the payment: {e}"),
            }
            tokio::time::sleep(len).await;
            match admin.set_payment_latency(0).await {
                Ok(_) => tracing::info!("payment fast again"),
                Err(e) => tracing::error!("cannot speed the payment up again: {e}"),
            }
        });
    }
    // The operator's pause and resume: when the resume was sent and answered.
    let pause = args.pause_at.map(|at| {
        let (admin, room) = (admin.clone(), room.clone());
        let (at, len) = (
            Duration::from_secs_f64(at.clamp(0.0, 3600.0)),
            Duration::from_secs_f64(args.pause_for.clamp(0.0, 3600.0)),
        );
        tokio::spawn(async move {
            tokio::time::sleep_until((start + at).into()).await;
            if let Err(e) = admin.room_action(&room, "pause").await {
                tracing::error!("cannot pause the room: {e}");
                return None;
            }
            tracing::info!("room paused");
            tokio::time::sleep(len).await;
            let sent = start.elapsed().as_millis() as u64;
            match admin.room_action(&room, "resume").await {
                Ok(_) => {
                    tracing::info!("room resumed");
                    Some((sent, start.elapsed().as_millis() as u64))
                }
                Err(e) => {
                    tracing::error!("cannot resume the room: {e}");
                    None
                }
            }
        })
    });
    let progress = progress::Progress::start(ctx.clone(), args.visitors as u64, !args.no_progress);

    let shared_bots = Arc::new(bots::Bots::new(args.bot_kind, args.bot_threads));
    let bot_tasks: Vec<_> = bot_plans
        .into_iter()
        .map(|p| tokio::spawn(bots::play(ctx.clone(), shared_bots.clone(), p)))
        .collect();
    let tasks: Vec<_> = plans
        .into_iter()
        .map(|p| tokio::spawn(visitor::play(ctx.clone(), p)))
        .collect();
    let mut logs = Vec::with_capacity(tasks.len());
    for t in tasks {
        match t.await {
            Ok(log) => logs.push(log),
            Err(e) => tracing::error!("a visitor task failed: {e}"),
        }
    }
    let mut bot_logs = Vec::with_capacity(bot_tasks.len());
    for t in bot_tasks {
        match t.await {
            Ok(log) => bot_logs.push(log),
            Err(e) => tracing::error!("a bot task failed: {e}"),
        }
    }
    // A last sample after everyone is done.
    tokio::time::sleep(Duration::from_millis(600)).await;
    let _ = stop.send(true);
    progress.finish();
    let samples = sampler.await.unwrap_or_default();
    let resumed_ms = match pause {
        Some(task) => task.await.ok().flatten(),
        None => None,
    };
    // The seed, told since the opening.
    let revealed = match &committed {
        Some(_) => match draw::fetch(&args.url, &room).await {
            Ok(p) => Some(p),
            Err(e) => {
                tracing::warn!("the draw's seed: {e}");
                None
            }
        },
        None => None,
    };
    let duration_ms = start.elapsed().as_millis() as u64;
    let metrics = admin
        .metrics()
        .await
        .map(|text| {
            text.lines()
                .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
                .filter(|l| !l.contains("room=") || l.contains(&format!("room=\"{room}\"")))
                .take(400)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_else(|e| vec![format!("unavailable: {e}")]);

    let scenario = json!({
        "target": args.url, "room": room, "performance": perf, "existing": args.existing,
        "room_settings": settings, "seats": seats_total, "hold_seconds": args.hold_seconds,
        "visitors": args.visitors, "curve": curve, "opens_in_s": args.opens_in,
        "arrivals_per_second": curve.per_second(args.visitors),
        "abandon_share": args.abandon_share, "decline_share": args.decline_share,
        "expire_share": args.expire_share, "max_seats": args.max_seats, "seed": args.seed,
        "max_seconds": args.max_seconds, "started_at": rfc3339(now),
        "resets_retried": ctx.http.resets_retried(),
        "max_in_flight": max_in_flight,
        "waited_for_a_connection": ctx.http.waited_for_a_connection(),
        "out_of_files_retried": ctx.http.out_of_files(),
        "dev_restarts_retried": ctx.http.dev_restarts_retried(),
        "pause": args.pause_at.map(|at| json!({"at_s": at, "for_s": args.pause_for})),
        "slow_payment": args.slow_payment_ms.map(|ms| json!({
            "latency_ms": ms, "from_s": args.slow_payment_at,
            "to_s": args.slow_payment_at + args.slow_payment_for,
        })),
        "accounts": args.accounts.map(|n| json!({
            "accounts": n, "browsers_per_account_max": accounts::MAX_BROWSERS,
            "browsers_drawn": browsers.iter().copied().max(),
            "identity": identity_mode, "identity_kid": identity_key.as_ref().map(IdentityKey::kid),
            "max_seats_per_account": args.max_seats_per_account,
        })),
        "challenge": args.challenge, "challenge_bits": args.challenge_bits,
        "bots": (args.bots > 0).then(|| json!({
            "bots": args.bots, "kind": args.bot_kind, "threads": args.bot_threads,
            "never_tries": bots::NEVER_TRIES,
            "cpu_clock": "CLOCK_THREAD_CPUTIME_ID per solving thread, summed",
            "solving": "one bot at a time (seed, solve on its threads, join)",
            "after_admission": "leaves at once; never books",
        })),
    });
    // The challenge as the room has it (the origin's default bits when
    // the tool set none).
    let challenge_kind = settings
        .get("challenge")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .or_else(|| args.challenge.map(|m| format!("{m:?}").to_lowercase()));
    let challenge_plan = (challenge_kind.as_deref().is_some_and(|k| k != "off") || args.bots > 0)
        .then(|| report::challenge::Plan {
            kind: challenge_kind.clone().unwrap_or_else(|| "off".into()),
            bits: settings
                .get("challenge_bits")
                .and_then(Value::as_u64)
                .or(args.challenge_bits.map(u64::from)),
            bots: (args.bots > 0).then_some((args.bot_kind, args.bots, args.bot_threads)),
        });
    let inputs = report::Inputs {
        logs: &logs,
        samples: &samples,
        opens_ms,
        admit_per_second,
        capacity,
        seats_total,
        duration_ms,
        planned: args.visitors,
        prequeue: opens_ms > 0,
        draw: committed.zip(revealed),
        hold_seconds: u64::from(args.hold_seconds),
        target_booking_p99_ms: settings
            .get("target_booking_p99_ms")
            .and_then(Value::as_u64),
        slow_payment_s: args.slow_payment_ms.map(|_| {
            (
                args.slow_payment_at,
                args.slow_payment_at + args.slow_payment_for,
            )
        }),
        accounts: args.accounts.map(|n| report::accounts::Plan {
            accounts: n,
            max_seats_per_account: args.max_seats_per_account.map(u64::from),
        }),
        challenge: challenge_plan,
        bot_logs: &bot_logs,
        resumed_ms,
    };
    let report = report::build(&inputs, scenario, metrics);
    write(
        &args.out,
        &report,
        &format!("On-sale rehearsal: {} visitors, room {room}", args.visitors),
    )?;
    print_summary(&report, &args.out);
    println!(
        "  requests sent again after a connection reset: {} ({} of them after wrangler's 503 \"worker restarted\")",
        ctx.http.resets_retried(),
        ctx.http.dev_restarts_retried()
    );
    println!(
        "  requests that waited for one of the tool's {max_in_flight} connections: {}; \
         connections tried again for lack of files in the tool: {}",
        ctx.http.waited_for_a_connection(),
        ctx.http.out_of_files()
    );
    Ok(!args.check || report.checks.iter().all(|c| c.ok || !c.invariant))
}

/// Requests this process may have in flight by default: its open-file
/// limit (raised to the hard limit first) less the idle connections kept
/// and 1,000 for connections being opened and closed, the admin client and
/// the rest.
fn open_file_budget() -> usize {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    if let (Some(_), Some(max)) = (limit.current, limit.maximum) {
        // Failing leaves the soft limit as it was, which is then the budget.
        let _ = setrlimit(
            Resource::Nofile,
            Rlimit {
                current: Some(max),
                maximum: Some(max),
            },
        );
    }
    let files = getrlimit(Resource::Nofile).current.unwrap_or(1 << 20);
    usize::try_from(files.saturating_sub(1_000 + client::IDLE_KEPT as u64))
        .unwrap_or(usize::MAX)
        .max(64)
}

fn write(dir: &std::path::Path, report: &report::Report, title: &str) -> Result<(), Error> {
    let err = |path: &std::path::Path| {
        let path = path.display().to_string();
        move |source| Error::Write { path, source }
    };
    std::fs::create_dir_all(dir).map_err(err(dir))?;
    let json_path = dir.join("report.json");
    let text = serde_json::to_string_pretty(report).unwrap_or_default();
    std::fs::write(&json_path, text + "\n").map_err(err(&json_path))?;
    let svg_path = dir.join("chart.svg");
    std::fs::write(&svg_path, chart::svg(report, title)?).map_err(err(&svg_path))?;
    Ok(())
}

fn print_summary(r: &report::Report, out: &std::path::Path) {
    println!(
        "rehearsal: {} visitors, {} admitted, {:.1} s",
        r.visitors.planned, r.visitors.admitted, r.duration_s
    );
    println!("  outcomes: {:?}", r.visitors.outcomes);
    println!(
        "  waits (s): p50 {:.1}, p95 {:.1}, p99 {:.1}, max {:.1}; {:.3} requests/s per waiter",
        r.wait_s.p50,
        r.wait_s.p95,
        r.wait_s.p99,
        r.wait_s.max,
        r.polling.requests_per_second_per_waiter
    );
    println!(
        "  admissions/s: peak {:.0}, configured {}",
        r.admissions.peak_per_second, r.admissions.configured_per_second
    );
    println!(
        "  seats: {} of {} booked, {} oversold, sold out after {}",
        r.seats.booked,
        r.seats.total,
        r.seats.oversold,
        r.seats
            .time_to_sell_out_s
            .map_or("—".into(), |s| format!("{s:.1} s"))
    );
    let h = &r.holds;
    println!(
        "  holds: {} taken, {} booked, {} let run out on purpose, {} ran out while buying, {} unfinished; hold to booking p99 {:.1} s, max {:.1} s (holds last {} s)",
        h.taken,
        h.booked,
        h.let_run_out,
        h.ran_out_while_buying,
        h.unfinished,
        h.hold_to_booking_s.p99,
        h.hold_to_booking_s.max,
        h.hold_seconds
    );
    if let Some(a) = &r.adaptive {
        let s = |v: Option<f64>| v.map_or("—".into(), |v| format!("{v:.1} s"));
        println!(
            "  adaptive admission: factor fell at {}, lowest ×{:.2} at {}, back to ×1 at {}; admissions/s {:.1} before, {:.1} slowed, peak {:.0} after",
            s(a.fell_at_s),
            a.lowest_factor,
            s(a.lowest_at_s),
            s(a.recovered_at_s),
            a.admitted_per_second.before,
            a.admitted_per_second.slowed,
            a.admitted_per_second.peak_after_recovery
        );
    }
    if let Some(a) = &r.accounts {
        println!(
            "  accounts: {} ({} joined, {} admitted); browsers per account {:?}; places per account over the run {:?}, at most {} at once",
            a.accounts,
            a.joined,
            a.admitted,
            a.browsers_per_account,
            a.places_per_account,
            a.max_places_at_once
        );
        println!(
            "  seats booked per account {:?} (max {}, limit {}, {} over it); 409 account_limit: {}; answers of a shared place {:?}; answers that the account's other browser ended the place: {}, browsers whose session it ended: {}",
            a.seats_booked_per_account,
            a.max_seats_booked,
            a.seats_limit.map_or("none".into(), |k| k.to_string()),
            a.over_limit,
            a.account_limit_answers,
            a.shared_place_answers,
            a.ended_by_account,
            a.browsers_ended_by_account
        );
    }
    if let Some(c) = &r.challenge {
        let solving = if c.people_solves == 0 {
            "none".to_owned()
        } else {
            format!(
                "{} (p50 {:.2} s, p99 {:.2} s, max {:.2} s; {:.1} CPU s in all)",
                c.people_solves,
                c.people_solve_s.p50,
                c.people_solve_s.p99,
                c.people_solve_s.max,
                c.people_cpu_s
            )
        };
        println!(
            "  challenge {} at {} bits: people solved {solving}; people's joins answered 428: {}, 403: {}",
            c.kind,
            c.bits.map_or("?".into(), |b| b.to_string()),
            c.people_answered_428,
            c.people_answered_403
        );
        if let Some(b) = &c.bots {
            println!(
                "  bots ({:?}): {}; joins {} (answered 428: {}, 403: {}, 200: {}); places {} (at most {} at once, {} bots with one); admitted bots {} ({} places); errors {:?}",
                b.kind,
                b.bots,
                b.joins,
                b.answered_428,
                b.answered_403,
                b.answered_200,
                b.places,
                b.max_places_at_once,
                b.bots_with_a_place,
                b.admitted_bots,
                b.admitted_places,
                b.errors
            );
            if b.solves > 0 {
                println!(
                    "  bots solved {} on {} threads each: {:.1} CPU s ({:.2} M hashes per CPU s), {} places per CPU s, solve p50 {:.2} s, max {:.2} s",
                    b.solves,
                    b.threads,
                    b.cpu_s,
                    b.hashes_per_cpu_s / 1e6,
                    b.places_per_cpu_s.map_or("—".into(), |p| format!("{p:.3}")),
                    b.solve_wall_s.p50,
                    b.solve_wall_s.max
                );
            }
        }
    }
    println!("  errors: {:?}", r.errors);
    for c in &r.checks {
        println!(
            "  [{}] {}: {} (target {})",
            if c.ok { "ok" } else { "MISS" },
            c.name,
            c.value,
            c.target
        );
    }
    println!(
        "  report: {}, chart: {}",
        out.join("report.json").display(),
        out.join("chart.svg").display()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_unless_allowed() {
        for ok in [
            "http://127.0.0.1:8080",
            "http://localhost:1",
            "http://[::1]:80/",
            "http://127.0.0.9",
        ] {
            assert!(check_target(ok, false).is_ok(), "{ok}");
        }
        for bad in [
            "http://example.com",
            "http://10.0.0.1:8080",
            "http://0.0.0.0:1",
        ] {
            assert!(
                matches!(check_target(bad, false), Err(Error::Remote(_))),
                "{bad}"
            );
            assert!(check_target(bad, true).is_ok(), "{bad}");
        }
        assert!(matches!(
            check_target("ftp://127.0.0.1", true),
            Err(Error::Config(_))
        ));
        assert!(matches!(
            check_target("not a url", true),
            Err(Error::Config(_))
        ));
    }
}
