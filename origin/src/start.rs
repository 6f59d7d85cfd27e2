//! Start-up: the pieces the binary builds from its configuration (keys,
//! the queue's store, the booking store, the shared state), the rooms
//! file applied, and the loop that serves until shutdown.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use token::{AccountHasher, IdentityKeys, Keyring};

use crate::identity::Identities;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::config::{self, Config};
use crate::limits::clients::ClientPolicy;
use crate::state::AppState;
use crate::turnstile::Turnstile;
use crate::{http, sale, telemetry};
use booking::{BookingConfig, BookingError, BookingStore, SimulatedPayment};
use queue::QueueStore;
use queue::redis::{RedisConfig, RedisStore};
use room::clock::Clock;

/// Start-up failed; the message says what to fix.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// A flag or file has a bad value.
    #[error("configuration: {0}")]
    Config(String),
    /// The store refused a start-up step.
    #[error("store: {0}")]
    Store(#[from] queue::StoreError),
    /// The booking database refused a start-up step.
    #[error("booking database: {0}")]
    Booking(#[from] booking::BookingError),
}

/// The signing keys from `--signing-keys`, or a random one for this process.
pub fn keyring(config: &Config) -> Result<Keyring, StartError> {
    match &config.signing_keys {
        Some(spec) => {
            Keyring::parse(spec).map_err(|e| StartError::Config(format!("--signing-keys: {e}")))
        }
        None => {
            tracing::warn!(
                "no --signing-keys: signing with a random key; tokens die with this process \
                 and other instances (and the edge) cannot verify them"
            );
            let secret: [u8; 32] = rand::random();
            Keyring::new(vec![("dev".to_owned(), secret.to_vec())])
                .map_err(|e| StartError::Config(e.to_string()))
        }
    }
}

/// The identity keys (`--identity-keys`, `--identity-public-keys`) and the
/// key accounts are hashed with: `--account-hash-key`, else derived from the
/// first signing key (every instance derives the same), else, with a random
/// signing key, random too (tickets die with this process anyway).
pub fn identities(config: &Config) -> Result<Identities, StartError> {
    let keys = IdentityKeys::parse(
        config.identity_keys.as_deref(),
        config.identity_public_keys.as_deref(),
    )
    .map_err(|e| StartError::Config(e.to_string()))?;
    let keys = (!keys.is_empty()).then_some(keys);
    let hash_key: Vec<u8> = match (&config.account_hash_key, &config.signing_keys) {
        (Some(key), _) => key.as_bytes().to_vec(),
        (None, Some(spec)) => {
            let first = spec.split(',').next().unwrap_or_default().trim();
            let secret = first.split_once(':').map_or(first, |(_, secret)| secret);
            AccountHasher::new(secret.as_bytes())
                .hash("", "waiting-room account hash key")
                .iter()
                .chain(secret.as_bytes())
                .copied()
                .collect()
        }
        (None, None) => rand::random::<[u8; 32]>().to_vec(),
    };
    Ok(Identities::new(keys, &hash_key))
}

/// The Turnstile verifier from `--turnstile-secret`, `--turnstile-site-key`
/// and `--turnstile-verify-url`; a warning when only one key is given.
pub fn turnstile(config: &Config) -> Turnstile {
    let turnstile = Turnstile::new(
        config.turnstile_secret.clone(),
        config.turnstile_site_key.clone(),
        config.turnstile_verify_url.clone(),
    );
    if !turnstile.is_configured()
        && (config.turnstile_secret.is_some() || config.turnstile_site_key.is_some())
    {
        tracing::warn!(
            "Turnstile needs both --turnstile-secret and --turnstile-site-key;              rooms with challenge \"turnstile\" are refused"
        );
    }
    turnstile
}

/// Whether the configuration has what a Turnstile room needs: a secret to
/// check tokens with and a site key for the widget.
fn has_turnstile_keys(config: &Config) -> bool {
    [&config.turnstile_secret, &config.turnstile_site_key]
        .iter()
        .all(|k| k.as_deref().is_some_and(|k| !k.trim().is_empty()))
}

/// Whether the configuration names any identity key: a room with
/// `identity` on needs one.
fn has_identity_keys(config: &Config) -> bool {
    [&config.identity_keys, &config.identity_public_keys]
        .iter()
        .any(|k| k.as_deref().is_some_and(|k| !k.trim().is_empty()))
}

/// The queue's store from the configuration: Redis with `--redis-url`, else
/// the embedded in-process store.
pub fn store(config: &Config) -> Result<Arc<dyn QueueStore>, StartError> {
    let Some(url) = &config.redis_url else {
        if config.redis_cluster {
            return Err(StartError::Config(
                "--redis-cluster needs --redis-url with the cluster's seed nodes".into(),
            ));
        }
        tracing::info!(
            "no --redis-url: the queue lives in this process (embedded store); \
             it is lost on restart and cannot be shared by several instances"
        );
        return Ok(Arc::new(queue::memory::MemoryStore::new()));
    };
    let store = RedisStore::connect(&RedisConfig {
        url: url.clone(),
        prefix: config.redis_prefix.clone(),
        timeout: config.redis_timeout(),
        cluster: config.redis_cluster,
    })?;
    Ok(Arc::new(store))
}

/// The state handlers share, from the configuration: the admin key (a
/// warning when there is none) and the abuse limits.
pub fn app_state(config: &Config, store: Arc<dyn QueueStore>, keys: Keyring) -> AppState {
    let mut state = AppState::new(store, keys)
        .with_clients(
            ClientPolicy::new(
                config.edge_secret.as_deref(),
                config.ip_join_rate,
                config.ip_max_places,
            )
            .with_ipv6_prefix(config.ipv6_prefix)
            .with_trusted_proxies(config.trusted_proxies.clone()),
        )
        .with_lobby(config.lobby)
        .with_allowed_origins(config.allowed_origins.clone())
        .with_secure_cookies(config.secure_cookies())
        .with_join_window(std::time::Duration::from_micros(config.join_window_us))
        .with_max_held_polls(usize::try_from(config.max_held_polls).unwrap_or(usize::MAX))
        .with_seat_map_per_minute(config.seat_map_per_minute)
        .with_turnstile(turnstile(config));
    if config.status_snapshot == config::OnOff::On {
        state = state.with_status_snapshots(config.tick());
    }
    if !state.secure_cookies {
        tracing::info!("cookies without Secure (plain-http loopback; see --cookie-secure)");
    }
    // Admin keys under 16 bytes are refused by the flag's parser.
    match &config.admin_key {
        Some(key) => state = state.with_admin_key(key),
        None => tracing::warn!("no --admin-key: the admin API refuses every call (401)"),
    }
    if let Some(key) = &config.metrics_key {
        state = state.with_metrics_key(key);
    }
    if config
        .edge_secret
        .as_ref()
        .is_some_and(|s| s.len() < token::MIN_SECRET_LEN)
    {
        tracing::warn!(
            "--edge-secret is shorter than 16 bytes: use a long random secret in production"
        );
    }
    if config.edge_secret.is_none() && (config.ip_join_rate > 0 || config.ip_max_places > 0) {
        tracing::warn!(
            "no --edge-secret: abuse limits count the TCP peer; behind the edge that is \
             the edge itself, so every visitor would share one address"
        );
    }
    state
}

/// The booking store from the configuration: MySQL with `--database-url`,
/// else the SQLite file `--sqlite-path`; migrations run and paying holds a
/// crash left behind are finished before it is handed out.
pub async fn booking_store(
    config: &Config,
    clock: &Clock,
) -> Result<Arc<BookingStore>, StartError> {
    let mut settings = BookingConfig::new(config.database_url.clone(), &config.sqlite_path);
    let mut payment = SimulatedPayment::new(
        Duration::from_millis(config.payment_latency_ms),
        config.payment_failure_rate,
    );
    if config.payment_knob {
        tracing::warn!(
            "--payment-knob: the admin API may change the payment latency (PUT /admin/payment)"
        );
        payment = payment.adjustable();
    }
    settings.payment = Arc::new(payment);
    settings.timeout = config.database_timeout();
    if config.database_url.is_none() {
        tracing::info!(path = %config.sqlite_path.display(), "no --database-url: booking uses an SQLite file");
    }
    Ok(Arc::new(
        BookingStore::connect(&settings, clock.now_ms()).await?,
    ))
}

/// Creates or updates the rooms of the `--rooms` file, and the performances
/// it declares (with `booking`).
pub async fn apply_rooms_file(
    config: &Config,
    store: &dyn QueueStore,
    booking: Option<&BookingStore>,
    clock: &Clock,
) -> Result<(), StartError> {
    let Some(path) = &config.rooms else {
        return Ok(());
    };
    let text = std::fs::read_to_string(path)
        .map_err(|e| StartError::Config(format!("--rooms {}: {e}", path.display())))?;
    let specs = crate::rooms_file::parse_rooms_file(&text)
        .map_err(|e| StartError::Config(format!("--rooms {}: {e}", path.display())))?;
    for spec in &specs {
        if spec.settings.identity.is_on() && !has_identity_keys(config) {
            return Err(StartError::Config(format!(
                "--rooms {}: room {} has identity \"{}\" but the origin has no identity key \
                 (--identity-keys or --identity-public-keys)",
                path.display(),
                spec.id,
                spec.settings.identity.as_str()
            )));
        }
        if spec.settings.challenge == room::ChallengeKind::Turnstile && !has_turnstile_keys(config)
        {
            return Err(StartError::Config(format!(
                "--rooms {}: room {} has challenge \"turnstile\" but the origin has no \
                 Turnstile keys (--turnstile-secret and --turnstile-site-key)",
                path.display(),
                spec.id,
            )));
        }
        store.put_room(&spec.id, &spec.settings).await?;
        tracing::info!(room = %spec.id, "room configured");
        let Some(booking) = booking else { continue };
        for (id, performance) in &spec.performances {
            match booking
                .put_performance(spec.id.as_str(), id, performance, clock.now_ms())
                .await
            {
                Ok(_) => {
                    tracing::info!(room = %spec.id, performance = %id, "performance configured")
                }
                // Seats already sold stay as they are; the file does not undo a sale.
                Err(BookingError::SeatsInUse { .. }) => tracing::warn!(
                    room = %spec.id, performance = %id,
                    "performance kept: the file's seat map would remove or reprice sold seats"
                ),
                Err(e) => return Err(e.into()),
            }
        }
    }
    Ok(())
}

/// The example room's demo performance, made on a first start with
/// `--demo` or on the embedded defaults (no `--database-url`) when nothing
/// is on sale yet, so the demo shows a sale on any database.
pub async fn demo_sale(
    config: &Config,
    store: &dyn QueueStore,
    booking: &BookingStore,
    clock: &Clock,
) -> Result<(), StartError> {
    const ROOM: &str = "concert";
    let Some(room) = room::RoomId::parse(ROOM) else {
        return Ok(());
    };
    if (config.database_url.is_some() && !config.demo)
        || !booking
            .list_performances(ROOM, clock.now_ms())
            .await?
            .is_empty()
    {
        return Ok(());
    }
    if store.figures(&room).await.is_err() {
        return Ok(());
    }
    booking
        .put_performance(ROOM, "demo", &booking::demo_performance(), clock.now_ms())
        .await?;
    tracing::info!(
        room = ROOM,
        performance = "demo",
        "demo performance created"
    );
    Ok(())
}

/// How often the per-room metrics are read from the store.
const METRICS_REFRESH: Duration = Duration::from_secs(1);

/// Serves the app and runs the promoter, the metrics refresh and the
/// limiters' housekeeping (joins, sessions) until `shutdown` completes, then lets in-flight
/// requests finish and stops the background tasks cleanly. Connections get
/// the default [`http::ConnLimits`]; [`run_with`] takes others.
pub async fn run(
    state: AppState,
    listener: TcpListener,
    tick: Duration,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    run_with(state, listener, tick, http::ConnLimits::default(), shutdown).await
}

/// [`run`] with these connection limits (the binary's come from its flags).
pub async fn run_with(
    state: AppState,
    listener: TcpListener,
    tick: Duration,
    limits: http::ConnLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let cancel = CancellationToken::new();
    let tasks = TaskTracker::new();
    tasks.spawn(queue::promoter::run(
        state.queue.clone(),
        state.snapshots.clone(),
        tick,
        cancel.clone(),
    ));
    tasks.spawn(telemetry::run(
        state.queue.clone(),
        state.sessions.clone(),
        state.history.clone(),
        state.clock.clone(),
        METRICS_REFRESH,
        cancel.clone(),
    ));
    if state.clients.limits_joins() {
        tasks.spawn(state.clients.clone().housekeeping(cancel.clone()));
    }
    tasks.spawn(state.session_limits.clone().housekeeping(cancel.clone()));
    if let Some(booking) = &state.booking {
        tasks.spawn(sale::run(
            state.queue.clone(),
            booking.clone(),
            state.latency.clone(),
            sale::Watchers {
                history: state.history.clone(),
                views: state.snapshots.clone(),
                outlooks: state.outlooks.clone(),
            },
            state.clock.clone(),
            cancel.clone(),
        ));
    }
    let stop = cancel.clone();
    let holds = state.holds.clone();
    let served = http::conn::serve(listener, http::app(state), limits, async move {
        shutdown.await;
        // Held polls answer now: the drain must not wait out their holds.
        holds.release_all();
        stop.cancel();
    })
    .await;
    cancel.cancel();
    tasks.close();
    tasks.wait().await;
    served
}
