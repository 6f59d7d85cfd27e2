//! The operator's settings: every one a clap flag with a `WR_` environment
//! variable of the same name, with defaults that work. Nothing else in the
//! origin reads the environment.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;

/// The origin's configuration.
#[derive(Parser, Debug, Clone)]
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
    #[arg(long, env = "WR_REDIS_URL")]
    pub redis_url: Option<String>,

    /// --redis-url is a Redis Cluster (its seed nodes), not one server.
    #[arg(long, env = "WR_REDIS_CLUSTER", value_parser = clap::builder::BoolishValueParser::new())]
    pub redis_cluster: bool,

    /// Put before every Redis key, so several deployments (or tests) can share one Redis.
    #[arg(long, env = "WR_REDIS_PREFIX", default_value = "", value_parser = parse_prefix)]
    pub redis_prefix: String,

    /// How long one Redis command may take before the request answers 503, in milliseconds.
    #[arg(long, env = "WR_REDIS_TIMEOUT_MS", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(10..=60_000))]
    pub redis_timeout_ms: u64,

    /// Booking's database, a MySQL URL (`mysql://user:pass@host:3306/db`).
    /// Unset: the SQLite file `--sqlite-path`.
    #[arg(long, env = "WR_DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,

    /// Where booking keeps its SQLite file when `--database-url` is unset
    /// (created if missing; a first start also creates the demo performance).
    #[arg(long, env = "WR_SQLITE_PATH", default_value = "waiting-room.sqlite")]
    pub sqlite_path: PathBuf,

    /// The simulated payment's latency, in milliseconds (rehearse a slow provider).
    #[arg(long, env = "WR_PAYMENT_LATENCY_MS", default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=60_000))]
    pub payment_latency_ms: u64,

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

    /// A TOML file of rooms created or updated at start (`[[room]] id = "..." capacity = ...`).
    #[arg(long, env = "WR_ROOMS")]
    pub rooms: Option<PathBuf>,

    /// How often the promoter admits, in milliseconds.
    #[arg(long, env = "WR_TICK_MS", default_value_t = 100, value_parser = clap::value_parser!(u64).range(10..=10_000))]
    pub tick_ms: u64,

    /// The admin API's key (`Authorization: Bearer <key>`); use at least 16
    /// random bytes (shorter keys work, with a warning at start).
    /// Unset: the admin API refuses every call (401).
    #[arg(long, env = "WR_ADMIN_KEY", hide_env_values = true, value_parser = parse_secret)]
    pub admin_key: Option<String>,

    /// The secret the edge sends in `Waiting-Room-Edge` (16 random bytes or
    /// more; shorter ones work, with a warning at start). Only
    /// requests carrying it may name the client address (`CF-Connecting-IP`);
    /// all others are keyed by the TCP peer. Unset: `CF-Connecting-IP` is never trusted.
    #[arg(long, env = "WR_EDGE_SECRET", hide_env_values = true, value_parser = parse_secret)]
    pub edge_secret: Option<String>,

    /// Joins per second one client address may make (0 = no limit).
    #[arg(long, env = "WR_IP_JOIN_RATE", default_value_t = 0)]
    pub ip_join_rate: u32,

    /// Places one client address may hold in a room at once (0 = no limit).
    #[arg(long, env = "WR_IP_MAX_PLACES", default_value_t = 0)]
    pub ip_max_places: u32,

    /// IPv6 clients count as one address per network of this many bits, for
    /// --ip-join-rate and --ip-max-places (64: one subscriber's usual block;
    /// 56 or 48 where providers hand out those).
    #[arg(long, env = "WR_IPV6_PREFIX", default_value_t = crate::http::client::DEFAULT_IPV6_PREFIX,
        value_parser = clap::value_parser!(u8).range(32..=128))]
    pub ipv6_prefix: u8,
}

impl Config {
    /// The promoter's tick.
    pub fn tick(&self) -> Duration {
        Duration::from_millis(self.tick_ms)
    }

    /// The Redis command timeout.
    pub fn redis_timeout(&self) -> Duration {
        Duration::from_millis(self.redis_timeout_ms)
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

fn parse_prefix(raw: &str) -> Result<String, String> {
    if raw.contains(['{', '}']) || raw.chars().any(char::is_whitespace) {
        Err("must not contain braces or whitespace (braces are Redis hash tags)".into())
    } else {
        Ok(raw.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_work() {
        let cfg = Config::try_parse_from(["origin"]).unwrap();
        assert_eq!(cfg.listen.to_string(), "127.0.0.1:8080");
        assert_eq!(cfg.tick_ms, 100);
        assert!(cfg.redis_url.is_none());
        assert!(cfg.admin_key.is_none() && cfg.edge_secret.is_none());
        assert_eq!((cfg.ip_join_rate, cfg.ip_max_places), (0, 0));
        assert_eq!(cfg.ipv6_prefix, 64);
        assert!(!cfg.redis_cluster);
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
            &["origin", "--redis-prefix", "{x}"],
            &["origin", "--unknown"],
            &["origin", "--admin-key", ""],
            &["origin", "--edge-secret", "  "],
            &["origin", "--ip-join-rate", "-1"],
            &["origin", "--ipv6-prefix", "31"],
            &["origin", "--ipv6-prefix", "129"],
        ] {
            assert!(Config::try_parse_from(args).is_err(), "{args:?}");
        }
    }
}
