//! The booking store: its configuration, the database pool, the payment
//! step and the caches of seat maps and performances. What the caches hold
//! lives below it (`perf_row`, `map_state`); its operations live above it,
//! in the modules named after them (`holds`, `confirm`, ...), each adding
//! to `impl BookingStore`.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use self::map_state::{Layout, StateSlot, WorkCounters};
use self::perf_row::CachedPerf;
use crate::db::{Backend, Db};
use crate::error::BookingError;
use crate::payment::{Payment, SimulatedPayment};

mod account_limit;
mod confirm;
pub(crate) mod holds;
pub(crate) mod map_state;
mod perf_row;
mod performances;
pub(crate) mod recovery;
pub(crate) mod retention;
pub(crate) mod seatmap;
pub(crate) mod sweeper;

/// `held_until` of the seats of a paying hold: later than any clock, so
/// neither time nor a claim frees them; only the confirm's end or recovery.
pub const PAYING: i64 = i64::MAX / 2;
/// Declined payments one hold takes: the last one ends the hold (402
/// `payment_declined` still), and a confirm after it is 409 `hold_expired`.
pub const MAX_DECLINES_PER_HOLD: u32 = 5;
/// How long past the payment timeout a paying hold is left to its confirm
/// before recovery may settle it (clocks of several instances may differ).
pub const PAYING_MARGIN: Duration = Duration::from_secs(60);

/// How long past the payment timeout a repeat of a running confirm waits
/// for the first request's answer.
pub(crate) const OUTCOME_MARGIN: Duration = Duration::from_secs(10);

/// How to reach the booking database, and the payment step.
#[derive(Clone)]
pub struct BookingConfig {
    /// A `mysql://` URL; `None`: the SQLite file at `sqlite_path`.
    pub database_url: Option<String>,
    /// Where the SQLite file lives when no URL is given (created if missing).
    pub sqlite_path: PathBuf,
    /// Most connections the pool opens.
    pub max_connections: u32,
    /// The payment step (the simulation, or a test's).
    pub payment: Arc<dyn Payment>,
    /// How long a payment may take before it counts as failed (and is voided).
    pub payment_timeout: Duration,
    /// How long a call waits for a connection before it fails with
    /// `Unavailable`; a visitor's whole request gets twice this (see
    /// [`BookingStore::deadline`]).
    pub timeout: Duration,
}

impl BookingConfig {
    /// The defaults: SQLite at `sqlite_path` unless `database_url`, a pool
    /// of 16, an instant simulated payment that never fails, 30 s payment
    /// timeout, 5 s database timeout.
    pub fn new(database_url: Option<String>, sqlite_path: impl Into<PathBuf>) -> BookingConfig {
        BookingConfig {
            database_url,
            sqlite_path: sqlite_path.into(),
            max_connections: 16,
            payment: Arc::new(SimulatedPayment::new(Duration::ZERO, 0.0)),
            payment_timeout: Duration::from_secs(30),
            timeout: Duration::from_secs(5),
        }
    }
}

/// Test hooks; not part of the API.
#[doc(hidden)]
#[derive(Clone, Default)]
pub struct Faults {
    /// Called by confirm right after a successful payment was recorded and
    /// before the booking is written: a test aborts the process here.
    pub after_payment_recorded: Option<Arc<dyn Fn() + Send + Sync>>,
}

/// The booking service's data: performances, seats, holds, bookings.
pub struct BookingStore {
    db: Db,
    payment: Arc<dyn Payment>,
    payment_timeout: Duration,
    timeout: Duration,
    /// Each performance's layout, by performance key; see `seat_layout`.
    layouts: std::sync::Mutex<HashMap<i64, Arc<Layout>>>,
    /// Each performance's latest seat state, by performance key, behind
    /// the lock its loaders queue on; see `seat_map_state`.
    map_states: std::sync::Mutex<HashMap<i64, StateSlot>>,
    /// Seat map reads and renderings (a test hook), and the loaders' order.
    work: Arc<WorkCounters>,
    /// Performance rows as holds read them, by (room, performance), each
    /// kept at most [`perf_row::PERF_TTL`]; see `cached_performance_row`.
    perf_cache: std::sync::Mutex<HashMap<(String, String), CachedPerf>>,
    /// Performance ids by key: a performance keeps its key for good.
    perf_ids: std::sync::Mutex<HashMap<i64, String>>,
    faults: Faults,
    /// When the sweep next deletes rows past their time (the caller's
    /// clock, unix ms); see `retention`.
    next_prune_ms: std::sync::atomic::AtomicU64,
    /// Queue sessions whose purchase recovery finished (room, sequence
    /// number), for the sale loop to end; see `take_booked_sessions`.
    booked_sessions: std::sync::Mutex<Vec<(String, u64)>>,
}

impl BookingStore {
    /// The simulated payment provider, if that is what this store pays
    /// with: the operator's knob for its latency (`PUT /admin/payment`).
    pub fn simulated_payment(&self) -> Option<&SimulatedPayment> {
        self.payment.simulation()
    }

    /// Connects (MySQL with a URL, else the SQLite file), applies the
    /// migrations, and finishes paying holds a crash left behind (see the
    /// module doc), with `now_ms` as the time.
    pub async fn connect(
        config: &BookingConfig,
        now_ms: u64,
    ) -> Result<BookingStore, BookingError> {
        let url = match &config.database_url {
            Some(url) => url.clone(),
            None => format!("sqlite://{}?mode=rwc", config.sqlite_path.display()),
        };
        let db = Db::connect(&url, config.max_connections.max(1), config.timeout).await?;
        let store = BookingStore {
            db,
            payment: config.payment.clone(),
            payment_timeout: config.payment_timeout,
            timeout: config.timeout,
            layouts: Default::default(),
            map_states: Default::default(),
            work: Default::default(),
            perf_cache: Default::default(),
            perf_ids: Default::default(),
            faults: Faults::default(),
            next_prune_ms: Default::default(),
            booked_sessions: Default::default(),
        };
        let recovered = store.recover(now_ms).await?;
        if recovered.completed + recovered.refunded > 0 {
            tracing::warn!(
                completed = recovered.completed,
                refunded = recovered.refunded,
                "booking: finished paying holds left by an earlier run"
            );
        }
        Ok(store)
    }

    /// Installs test hooks.
    #[doc(hidden)]
    pub fn with_faults(mut self, faults: Faults) -> BookingStore {
        self.faults = faults;
        self
    }

    /// Which database this store runs on.
    pub fn backend(&self) -> Backend {
        self.db.backend
    }

    /// Checks that the database answers (for `/readyz`).
    pub async fn ping(&self) -> Result<(), BookingError> {
        self.db.ping().await
    }

    /// Runs `SELECT 1` through the store's pool: the floor every booking
    /// call stands on, which the benchmark measures beside them.
    pub async fn select_one(&self) -> Result<(), BookingError> {
        let (one,): (i64,) = sqlx::query_as("SELECT 1").fetch_one(&self.db.pool).await?;
        debug_assert_eq!(one, 1);
        Ok(())
    }

    /// Closes the pool; calls after this fail with `Unavailable`.
    pub async fn close(&self) {
        self.db.close().await;
    }

    /// The longest a visitor's booking request may take before it answers
    /// 503 `store_unavailable`: twice the database timeout (the wait for a
    /// connection, then the statements, which a database that froze
    /// mid-request never answers). A confirm also gets its payment's
    /// timeout and a repeat's wait for the first request's answer.
    pub fn deadline(&self, confirm: bool) -> Duration {
        let base = self.timeout * 2;
        if confirm {
            base + self.payment_timeout + OUTCOME_MARGIN
        } else {
            base
        }
    }

    /// How long a paying hold is protected past its start: the payment
    /// timeout plus a margin.
    fn paying_window_ms(&self) -> i64 {
        let ms = (self.payment_timeout + PAYING_MARGIN).as_millis();
        i64::try_from(ms).unwrap_or(i64::MAX / 4)
    }
}
