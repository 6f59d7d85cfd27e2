//! The operator's settings: every one a clap flag with a `WR_` environment
//! variable of the same name, with defaults that work. Nothing else in the
//! origin reads the environment.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;

use crate::http::ConnLimits;

/// The origin's configuration. Its `Debug` shows no secret: keys print as
/// `<redacted>` and URLs without their password.
#[derive(Parser, Clone)]
#[command(
    name = "origin",
    version,
    about = "The waiting room's origin: queue API, promoter and signed tokens"
)]
pub struct Config {
    /// Address to listen on.
    #[arg(long, env = "WR_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,

    /// Redis URL for the queue, e.g. redis://127.0.0.1:6379. With
    /// --redis-cluster: one or more seed nodes of the cluster, comma-separated.
    #[arg(long, env = "WR_REDIS_URL", hide_env_values = true)]
    pub redis_url: Option<String>,

    /// --redis-url is a Redis Cluster (its seed nodes), not one server.
    #[arg(long, env = "WR_REDIS_CLUSTER", value_parser = clap::builder::BoolishValueParser::new())]
    pub redis_cluster: bool,

    /// Put before every Redis key, so several deployments (or tests) can share one Redis
    /// (`:` is added when it ends in no separator: `shop` gives `shop:wr:rooms`).
    #[arg(long, env = "WR_REDIS_PREFIX", default_value = "", value_parser = parse_prefix)]
    pub redis_prefix: String,

    /// How long one Redis command may take before the request answers 503, in milliseconds.
    #[arg(long, env = "WR_REDIS_TIMEOUT_MS", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(10..=60_000))]
    pub redis_timeout_ms: u64,

    /// Booking's database, a MySQL URL (`mysql://user:pass@host:3306/db`).
    /// Unset: the SQLite file `--sqlite-path`.
    #[arg(long, env = "WR_DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,

    /// How long a booking request may wait for the database before it
    /// answers 503 `store_unavailable`, in milliseconds: the wait for a
    /// connection, and half the whole request's deadline (the confirm's
    /// payment comes on top).
    #[arg(long, env = "WR_DATABASE_TIMEOUT_MS", default_value_t = 5000, value_parser = clap::value_parser!(u64).range(100..=60_000))]
    pub database_timeout_ms: u64,

    /// Where booking keeps its SQLite file when `--database-url` is unset
    /// (created if missing; a first start also creates the demo performance).
    #[arg(long, env = "WR_SQLITE_PATH", default_value = "waiting-room.sqlite")]
    pub sqlite_path: PathBuf,

    /// The simulated payment's latency, in milliseconds (rehearse a slow provider).
    #[arg(long, env = "WR_PAYMENT_LATENCY_MS", default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=60_000))]
    pub payment_latency_ms: u64,

    /// Lets the admin API change the simulated payment's latency while the
    /// origin runs (`PUT /admin/payment`), to rehearse a provider that slows
    /// down mid-sale. Off: those routes are 404.
    #[arg(long, env = "WR_PAYMENT_KNOB", value_parser = clap::builder::BoolishValueParser::new())]
    pub payment_knob: bool,

    /// The share of simulated payments that fail (0.0 to 1.0), besides the
    /// token `tok_decline`, which is always declined.
    #[arg(long, env = "WR_PAYMENT_FAILURE_RATE", default_value_t = 0.0, value_parser = parse_share)]
    pub payment_failure_rate: f64,

    /// Origins besides the site's own whose pages may change state (join,
    /// leave, hold, book), comma-separated `scheme://host[:port]`. Others are
    /// refused with 403 `cross_site`; apps (no `Origin`) are unaffected.
    #[arg(long, env = "WR_ALLOWED_ORIGINS", value_delimiter = ',')]
    pub allowed_origins: Vec<String>,

    /// Signing keys, `kid:secret,kid:secret`: the first signs, all verify.
    /// Unset: a random key for this process only (tokens die with it).
    #[arg(long, env = "WR_SIGNING_KEYS", hide_env_values = true)]
    pub signing_keys: Option<String>,

    /// Keys identity tokens signed with HS256 are checked with,
    /// `kid:secret,kid:secret` (the `--signing-keys` format), chosen by the
    /// token's `kid`. A room with `identity` on needs this or
    /// `--identity-public-keys`.
    #[arg(long, env = "WR_IDENTITY_KEYS", hide_env_values = true)]
    pub identity_keys: Option<String>,

    /// Ed25519 public keys identity tokens signed with EdDSA are checked
    /// with, `kid:base64url-key,...` (32-byte raw keys), chosen by `kid`.
    #[arg(long, env = "WR_IDENTITY_PUBLIC_KEYS")]
    pub identity_public_keys: Option<String>,

    /// The key accounts are hashed with before anything keeps them (at
    /// least 16 bytes; the same on every instance). Unset: derived from the
    /// first signing key, so set it before rotating signing keys during a
    /// sale (a new hash would let an account take a second place).
    #[arg(long, env = "WR_ACCOUNT_HASH_KEY", hide_env_values = true, value_parser = parse_long_secret)]
    pub account_hash_key: Option<String>,

    /// Cloudflare Turnstile's secret key, which tokens are checked with at
    /// --turnstile-verify-url. A room with `challenge: "turnstile"` needs it
    /// and --turnstile-site-key.
    #[arg(long, env = "WR_TURNSTILE_SECRET", hide_env_values = true, value_parser = parse_secret)]
    pub turnstile_secret: Option<String>,

    /// Cloudflare Turnstile's site key, which the waiting page renders the
    /// widget with (public).
    #[arg(long, env = "WR_TURNSTILE_SITE_KEY", value_parser = parse_secret)]
    pub turnstile_site_key: Option<String>,

    /// Where Turnstile tokens are checked (Cloudflare's siteverify API).
    #[arg(long, env = "WR_TURNSTILE_VERIFY_URL", default_value = crate::turnstile::DEFAULT_VERIFY_URL)]
    pub turnstile_verify_url: String,

    /// A TOML file of rooms created or updated at start (`[[room]] id = "..." capacity = ...`).
    #[arg(long, env = "WR_ROOMS")]
    pub rooms: Option<PathBuf>,

    /// How often the promoter admits, in milliseconds (10 to 1000).
    #[arg(long, env = "WR_TICK_MS", default_value_t = 100, value_parser = clap::value_parser!(u64).range(10..=MAX_TICK_MS))]
    pub tick_ms: u64,

    /// The admin API's key (`Authorization: Bearer <key>`), at least 16
    /// bytes (use random ones); shorter keys are refused. An address whose
    /// calls keep failing is throttled (429) for a while.
    /// Unset: the admin API refuses every call (401).
    #[arg(long, env = "WR_ADMIN_KEY", hide_env_values = true, value_parser = parse_long_secret)]
    pub admin_key: Option<String>,

    /// The secret the edge sends in `Waiting-Room-Edge` (16 random bytes or
    /// more; shorter ones work, with a warning at start). Only
    /// requests carrying it may name the client address (`CF-Connecting-IP`);
    /// all others are keyed by the TCP peer. Unset: `CF-Connecting-IP` is never trusted.
    #[arg(long, env = "WR_EDGE_SECRET", hide_env_values = true, value_parser = parse_secret)]
    pub edge_secret: Option<String>,

    /// The bearer key `/metrics` asks for (`Authorization: Bearer <key>`).
    /// Unset: `/metrics` is open to anyone who can reach the origin.
    #[arg(long, env = "WR_METRICS_KEY", hide_env_values = true, value_parser = parse_secret)]
    pub metrics_key: Option<String>,

    /// Whether cookies carry `Secure`. `auto`: yes unless `--listen` is a
    /// loopback address (the plain-http demo on 127.0.0.1 or localhost);
    /// `always` for an origin on loopback behind a TLS proxy on the same
    /// machine; `never` only for plain http elsewhere (tests, a lab). Decided
    /// here, never from the request's `Host` or `X-Forwarded-Proto`.
    #[arg(long, env = "WR_COOKIE_SECURE", value_enum, default_value_t = CookieSecure::Auto)]
    pub cookie_secure: CookieSecure,

    /// Joins per second one client address may make (0 = no limit).
    #[arg(long, env = "WR_IP_JOIN_RATE", default_value_t = 0)]
    pub ip_join_rate: u32,

    /// Places one client address may hold in a room at once (0 = no limit).
    #[arg(long, env = "WR_IP_MAX_PLACES", default_value_t = 0)]
    pub ip_max_places: u32,

    /// How long a request's head (request line and headers) may take to
    /// arrive, in milliseconds: from the connection's accept, or between
    /// requests from the head's first byte. Slower clients are disconnected.
    #[arg(long, env = "WR_HEADER_TIMEOUT_MS", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(100..=600_000))]
    pub header_timeout_ms: u64,

    /// How long a keep-alive connection may sit between requests, in milliseconds.
    #[arg(long, env = "WR_IDLE_TIMEOUT_MS", default_value_t = 60_000, value_parser = clap::value_parser!(u64).range(100..=3_600_000))]
    pub idle_timeout_ms: u64,

    /// How long a request body may take to arrive after its head, and how
    /// long a response may stall on a client that does not read it, in milliseconds.
    #[arg(long, env = "WR_BODY_TIMEOUT_MS", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(100..=600_000))]
    pub body_timeout_ms: u64,

    /// Most client connections open at once; past it new connections wait in
    /// the kernel's backlog. The open-file limit is raised to its hard limit
    /// at start; keep this under it.
    #[arg(long, env = "WR_MAX_CONNECTIONS", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub max_connections: u64,

    /// IPv6 clients count as one address per network of this many bits, for
    /// --ip-join-rate and --ip-max-places (64: one subscriber's usual block;
    /// 56 or 48 where providers hand out those).
    #[arg(long, env = "WR_IPV6_PREFIX", default_value_t = crate::limits::clients::DEFAULT_IPV6_PREFIX,
        value_parser = clap::value_parser!(u8).range(32..=128))]
    pub ipv6_prefix: u8,

    /// Joins to one room arriving at this instance while another batch of
    /// the room is at the store go together in one store call; none waits
    /// longer than this, in microseconds (0: every join goes alone, as it
    /// always does on the embedded store, which has no round trip to share).
    #[arg(long, env = "WR_JOIN_WINDOW_US", default_value_t = 1000,
        value_parser = clap::value_parser!(u64).range(0..=100_000))]
    pub join_window_us: u64,
    /// Answer status polls from far back in a fifo line from a per-room
    /// snapshot refreshed every tick, with no store round trip, and write
    /// "still polling" marks once a tick per room in one call. `off`: every
    /// status asks the store (to measure the snapshots against).
    #[arg(long, env = "WR_STATUS_SNAPSHOT", value_enum, default_value_t = OnOff::On)]
    pub status_snapshot: OnOff,

    /// Most status polls held at once while a sale is on (`Prefer: wait`);
    /// past it polls are answered at once. Each keeps its connection open:
    /// keep this under --max-connections. 0: never hold (also the case
    /// with --status-snapshot off, whose views wake held polls).
    #[arg(long, env = "WR_MAX_HELD_POLLS", default_value_t = crate::holds::DEFAULT_MAX_HELD as u64,
        value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
    pub max_held_polls: u64,

    /// List the rooms at `/`, each linked to its waiting page (off: `/` is
    /// 404, and nobody learns the rooms from it).
    #[arg(long, env = "WR_LOBBY")]
    pub lobby: bool,

    /// On a first start, put a demo performance (160 seats) on sale in the
    /// room `concert` when it has none, whatever the database (always so on
    /// the SQLite file, when `--database-url` is unset).
    #[arg(long, env = "WR_DEMO")]
    pub demo: bool,

    /// Addresses of proxies in front of the origin (comma-separated IPs, e.g.
    /// a TLS proxy on the same host: `127.0.0.1`). A request from one is keyed
    /// by the last address in its `X-Forwarded-For`, for the abuse limits
    /// and the admin throttle; every other request by its TCP peer (or the
    /// edge's `CF-Connecting-IP`, with --edge-secret).
    #[arg(long, env = "WR_TRUSTED_PROXIES", value_delimiter = ',')]
    pub trusted_proxies: Vec<std::net::IpAddr>,
    /// Seat map loads one session may make a minute, in bursts of 20;
    /// conditional loads (304) count too (0 = no limit). The seat page
    /// polls every 3 s.
    #[arg(long, env = "WR_SEAT_MAP_PER_MINUTE", default_value_t = crate::limits::map_loads::DEFAULT_SEAT_MAP_PER_MINUTE)]
    pub seat_map_per_minute: u32,
}

/// A switch.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnOff {
    /// Turned on.
    On,
    /// Turned off.
    Off,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Destructured, so a new field cannot be left out (or leak) unnoticed.
        let Config {
            listen,
            redis_url,
            redis_cluster,
            redis_prefix,
            redis_timeout_ms,
            database_url,
            database_timeout_ms,
            sqlite_path,
            payment_latency_ms,
            payment_knob,
            payment_failure_rate,
            allowed_origins,
            signing_keys,
            identity_keys,
            identity_public_keys,
            account_hash_key,
            turnstile_secret,
            turnstile_site_key,
            turnstile_verify_url,
            rooms,
            tick_ms,
            admin_key,
            edge_secret,
            metrics_key,
            cookie_secure,
            ip_join_rate,
            ip_max_places,
            header_timeout_ms,
            idle_timeout_ms,
            body_timeout_ms,
            max_connections,
            ipv6_prefix,
            join_window_us,
            status_snapshot,
            max_held_polls,
            lobby,
            demo,
            trusted_proxies,
            seat_map_per_minute,
        } = self;
        f.debug_struct("Config")
            .field("listen", listen)
            .field("redis_url", &redis_url.as_deref().map(redact_url))
            .field("redis_cluster", redis_cluster)
            .field("redis_prefix", redis_prefix)
            .field("redis_timeout_ms", redis_timeout_ms)
            .field("database_url", &database_url.as_deref().map(redact_url))
            .field("database_timeout_ms", database_timeout_ms)
            .field("sqlite_path", sqlite_path)
            .field("payment_latency_ms", payment_latency_ms)
            .field("payment_knob", payment_knob)
            .field("payment_failure_rate", payment_failure_rate)
            .field("allowed_origins", allowed_origins)
            .field("signing_keys", &signing_keys.as_ref().map(|_| "<redacted>"))
            .field(
                "identity_keys",
                &identity_keys.as_ref().map(|_| "<redacted>"),
            )
            .field("identity_public_keys", identity_public_keys)
            .field(
                "account_hash_key",
                &account_hash_key.as_ref().map(|_| "<redacted>"),
            )
            .field(
                "turnstile_secret",
                &turnstile_secret.as_ref().map(|_| "<redacted>"),
            )
            .field("turnstile_site_key", turnstile_site_key)
            .field("turnstile_verify_url", &redact_url(turnstile_verify_url))
            .field("rooms", rooms)
            .field("tick_ms", tick_ms)
            .field("admin_key", &admin_key.as_ref().map(|_| "<redacted>"))
            .field("edge_secret", &edge_secret.as_ref().map(|_| "<redacted>"))
            .field("metrics_key", &metrics_key.as_ref().map(|_| "<redacted>"))
            .field("cookie_secure", cookie_secure)
            .field("ip_join_rate", ip_join_rate)
            .field("ip_max_places", ip_max_places)
            .field("header_timeout_ms", header_timeout_ms)
            .field("idle_timeout_ms", idle_timeout_ms)
            .field("body_timeout_ms", body_timeout_ms)
            .field("max_connections", max_connections)
            .field("ipv6_prefix", ipv6_prefix)
            .field("join_window_us", join_window_us)
            .field("status_snapshot", status_snapshot)
            .field("max_held_polls", max_held_polls)
            .field("lobby", lobby)
            .field("demo", demo)
            .field("trusted_proxies", trusted_proxies)
            .field("seat_map_per_minute", seat_map_per_minute)
            .finish()
    }
}

/// A URL without the password in its user part (`redis://:***@host`), so
/// it can be logged.
fn redact_url(url: &str) -> String {
    url.split(',')
        .map(|one| {
            let Some((scheme, rest)) = one.split_once("://") else {
                return one.to_owned();
            };
            let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            match authority.rsplit_once('@') {
                Some((user, host)) => {
                    let name = user.split_once(':').map_or(user, |(name, _)| name);
                    format!("{scheme}://{name}:***@{host}{path}")
                }
                None => one.to_owned(),
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// When cookies carry `Secure` (`--cookie-secure`).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum CookieSecure {
    /// Secure unless the origin listens on a loopback address.
    Auto,
    /// Always Secure.
    Always,
    /// Never Secure.
    Never,
}

/// The longest promoter tick. A gap between a room's ticks of more than
/// half its abandon time reads as a store outage, after which everyone in
/// line counts as polling (`tick.lua`): a tick that long would switch
/// abandonment off. So ticks stay under half the shortest abandon time
/// (1.5 s), with half a second to spare for a tick that runs late.
pub const MAX_TICK_MS: u64 = 1_000;

const _: () =
    assert!(MAX_TICK_MS + 500 <= room::RoomSettings::MIN_ABANDON_SECONDS as u64 * 1000 / 2);

impl Config {
    /// Whether cookies carry `Secure`, from `--cookie-secure` and `--listen`.
    pub fn secure_cookies(&self) -> bool {
        match self.cookie_secure {
            CookieSecure::Auto => !self.listen.ip().is_loopback(),
            CookieSecure::Always => true,
            CookieSecure::Never => false,
        }
    }

    /// The promoter's tick.
    pub fn tick(&self) -> Duration {
        Duration::from_millis(self.tick_ms)
    }

    /// The Redis command timeout.
    pub fn redis_timeout(&self) -> Duration {
        Duration::from_millis(self.redis_timeout_ms)
    }

    /// The booking database's timeout.
    pub fn database_timeout(&self) -> Duration {
        Duration::from_millis(self.database_timeout_ms)
    }

    /// The limits every client connection gets.
    pub fn conn_limits(&self) -> ConnLimits {
        ConnLimits {
            header_timeout: Duration::from_millis(self.header_timeout_ms),
            idle_timeout: Duration::from_millis(self.idle_timeout_ms),
            body_timeout: Duration::from_millis(self.body_timeout_ms),
            max_connections: usize::try_from(self.max_connections).unwrap_or(usize::MAX),
        }
    }
}

fn parse_share(raw: &str) -> Result<f64, String> {
    match raw.trim().parse::<f64>() {
        Ok(v) if (0.0..=1.0).contains(&v) => Ok(v),
        _ => Err("must be a number from 0.0 to 1.0".into()),
    }
}

fn parse_secret(raw: &str) -> Result<String, String> {
    if raw.trim().is_empty() {
        Err("must not be empty".into())
    } else {
        Ok(raw.to_owned())
    }
}

fn parse_long_secret(raw: &str) -> Result<String, String> {
    if raw.len() < token::MIN_SECRET_LEN {
        Err(format!(
            "must be at least {} bytes (use random ones)",
            token::MIN_SECRET_LEN
        ))
    } else {
        Ok(raw.to_owned())
    }
}

fn parse_prefix(raw: &str) -> Result<String, String> {
    if raw.contains(['{', '}']) || raw.chars().any(char::is_whitespace) {
        Err("must not contain braces or whitespace (braces are Redis hash tags)".into())
    } else if raw.is_empty() || raw.ends_with([':', '-', '_', '.', '/']) {
        Ok(raw.to_owned())
    } else {
        Ok(format!("{raw}:"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_redis_prefix_ends_in_a_separator() {
        for (given, used) in [
            ("", ""),
            ("shop", "shop:"),
            ("shop:", "shop:"),
            ("t-1_", "t-1_"),
        ] {
            let cfg = Config::try_parse_from(["origin", "--redis-prefix", given]).unwrap();
            assert_eq!(cfg.redis_prefix, used, "{given}");
        }
        assert!(Config::try_parse_from(["origin", "--redis-prefix", "a{b}"]).is_err());
    }

    #[test]
    fn defaults_work() {
        let cfg = Config::try_parse_from(["origin"]).unwrap();
        assert_eq!(cfg.listen.to_string(), "127.0.0.1:8080");
        assert_eq!(cfg.tick_ms, 100);
        let longest = Config::try_parse_from(["origin", "--tick-ms", "1000"]).unwrap();
        assert_eq!(longest.tick_ms, MAX_TICK_MS);
        assert!(cfg.redis_url.is_none());
        assert!(cfg.admin_key.is_none() && cfg.edge_secret.is_none());
        assert_eq!((cfg.ip_join_rate, cfg.ip_max_places), (0, 0));
        assert_eq!(cfg.ipv6_prefix, 64);
        assert!(!cfg.redis_cluster);
        assert_eq!(cfg.conn_limits(), ConnLimits::default());
    }

    #[test]
    fn cluster_mode_is_a_flag_or_its_variable() {
        let cfg = Config::try_parse_from([
            "origin",
            "--redis-cluster",
            "--redis-url",
            "redis://10.0.0.1:7000,redis://10.0.0.2:7000",
        ])
        .unwrap();
        assert!(cfg.redis_cluster);
        // The variable is checked by name, not set: tests share the process
        // environment and run in parallel.
        let command = <Config as clap::CommandFactory>::command();
        let arg = command
            .get_arguments()
            .find(|a| a.get_id() == "redis_cluster")
            .unwrap();
        assert_eq!(arg.get_env().unwrap(), "WR_REDIS_CLUSTER");
    }

    #[test]
    fn the_ipv6_prefix_is_a_flag_or_its_variable() {
        for bits in ["32", "48", "128"] {
            let cfg = Config::try_parse_from(["origin", "--ipv6-prefix", bits]).unwrap();
            assert_eq!(cfg.ipv6_prefix.to_string(), bits);
        }
        let command = <Config as clap::CommandFactory>::command();
        let arg = command
            .get_arguments()
            .find(|a| a.get_id() == "ipv6_prefix")
            .unwrap();
        assert_eq!(arg.get_env().unwrap(), "WR_IPV6_PREFIX");
    }

    #[test]
    fn bad_values_are_refused() {
        for args in [
            &["origin", "--listen", "nowhere"][..],
            &["origin", "--tick-ms", "0"],
            // Half the shortest abandon time or more: every tick would read
            // as the end of an outage, and nobody would ever be dropped.
            &["origin", "--tick-ms", "1001"],
            &["origin", "--tick-ms", "10000"],
            &["origin", "--redis-prefix", "{x}"],
            &["origin", "--unknown"],
            &["origin", "--admin-key", ""],
            &["origin", "--edge-secret", "  "],
            &["origin", "--ip-join-rate", "-1"],
            &["origin", "--admin-key", "fifteen-bytes!!"],
            &["origin", "--cookie-secure", "sometimes"],
        ] {
            assert!(Config::try_parse_from(args).is_err(), "{args:?}");
        }
    }

    #[test]
    fn short_admin_keys_are_refused_at_start() {
        assert!(Config::try_parse_from(["origin", "--admin-key", "short"]).is_err());
        let cfg = Config::try_parse_from(["origin", "--admin-key", "sixteen-bytes!!!"]).unwrap();
        assert_eq!(cfg.admin_key.as_deref(), Some("sixteen-bytes!!!"));
    }

    #[test]
    fn secrets_stay_out_of_help_and_debug() {
        let command = <Config as clap::CommandFactory>::command();
        for id in [
            "redis_url",
            "database_url",
            "signing_keys",
            "identity_keys",
            "account_hash_key",
            "turnstile_secret",
            "admin_key",
            "edge_secret",
            "metrics_key",
        ] {
            let arg = command.get_arguments().find(|a| a.get_id() == id).unwrap();
            assert!(
                arg.is_hide_env_values_set(),
                "--help would print {id}'s value"
            );
        }
        let cfg = Config::try_parse_from([
            "origin",
            "--redis-url",
            "redis://:hunter2-redis@10.0.0.1:6379/0,redis://u:hunter2-second@10.0.0.2",
            "--database-url",
            "mysql://app:hunter2-mysql@db:3306/wr",
            "--signing-keys",
            "k1:hunter2-signing-0123456789",
            "--admin-key",
            "hunter2-admin-0123456789",
            "--edge-secret",
            "hunter2-edge-0123456789",
            "--metrics-key",
            "hunter2-metrics",
            "--turnstile-secret",
            "0x4AAA-hunter2-turnstile",
        ])
        .unwrap();
        let shown = format!("{cfg:?}");
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(shown.contains("redis://:***@10.0.0.1:6379/0"), "{shown}");
        assert!(shown.contains("mysql://app:***@db:3306/wr"), "{shown}");
        assert!(shown.contains("listen: 127.0.0.1:8080"), "{shown}");
    }

    #[test]
    fn turnstile_flags_and_their_variables() {
        let cfg = Config::try_parse_from(["origin"]).unwrap();
        assert!(cfg.turnstile_secret.is_none() && cfg.turnstile_site_key.is_none());
        assert_eq!(
            cfg.turnstile_verify_url,
            "https://challenges.cloudflare.com/turnstile/v0/siteverify"
        );
        let cfg = Config::try_parse_from([
            "origin",
            "--turnstile-secret",
            "0x4AAAsecret",
            "--turnstile-site-key",
            "0x4AAAsite",
            "--turnstile-verify-url",
            "http://127.0.0.1:9/siteverify",
        ])
        .unwrap();
        assert_eq!(cfg.turnstile_secret.as_deref(), Some("0x4AAAsecret"));
        assert_eq!(cfg.turnstile_site_key.as_deref(), Some("0x4AAAsite"));
        assert_eq!(cfg.turnstile_verify_url, "http://127.0.0.1:9/siteverify");
        let command = <Config as clap::CommandFactory>::command();
        for (id, env) in [
            ("turnstile_secret", "WR_TURNSTILE_SECRET"),
            ("turnstile_site_key", "WR_TURNSTILE_SITE_KEY"),
            ("turnstile_verify_url", "WR_TURNSTILE_VERIFY_URL"),
        ] {
            let arg = command.get_arguments().find(|a| a.get_id() == id).unwrap();
            assert_eq!(arg.get_env().unwrap(), env);
        }
        assert!(Config::try_parse_from(["origin", "--turnstile-secret", " "]).is_err());
    }

    #[test]
    fn cookies_are_secure_unless_listening_on_loopback() {
        let secure = |args: &[&str]| {
            let mut all = vec!["origin"];
            all.extend_from_slice(args);
            Config::try_parse_from(all).unwrap().secure_cookies()
        };
        assert!(!secure(&[]), "the demo on 127.0.0.1 runs on plain http");
        assert!(!secure(&["--listen", "[::1]:8080"]));
        assert!(secure(&["--listen", "0.0.0.0:8080"]));
        assert!(secure(&["--listen", "10.0.0.5:8080"]));
        assert!(secure(&["--cookie-secure", "always"]));
        assert!(!secure(&[
            "--listen",
            "0.0.0.0:8080",
            "--cookie-secure",
            "never"
        ]));
    }
}
