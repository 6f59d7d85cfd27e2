//! Booking: performances, seats, holds and bookings, on MySQL (or an SQLite
//! file) through sqlx. Plain Rust: no HTTP here. The HTTP layer calls
//! [`BookingStore`] and maps [`BookingError`] to the contract's answers.
//!
//! # What the database holds
//! One row per seat (`booking_seats`) says its state: booked when it has a
//! `booking_id`, held while `held_until > now`, available otherwise. So a
//! hold that ended is free by time alone, before any sweeper runs, and a
//! claim is one conditional `UPDATE` of the wanted seats. What is sold is
//! also written to `booking_seat_sales`, whose primary key (performance,
//! seat) is the schema's rule that no seat is sold twice; one row per seat
//! means no two holds share a seat; a unique key on live holds allows one
//! per visitor and room (one admission buys once, so it holds once); a
//! unique hold id on bookings allows one booking per hold.
//!
//! # Confirming
//! 1. One short transaction claims the `Idempotency-Key` (its row stores the
//!    first answer) and marks the hold `paying`: its seats' `held_until`
//!    becomes [`PAYING`], so neither time, the sweeper nor another visitor
//!    frees them while the payment runs; a payment attempt row is written.
//! 2. The payment runs outside any transaction, bounded by the payment
//!    timeout. A success is recorded on the attempt row at once.
//! 3. A second transaction marks the seats sold, writes the booking and
//!    stores the answer under the key.
//!
//! A crash between 2 and 3 leaves a paying hold; [`BookingStore::connect`]
//! and every [`BookingStore::sweep`] finish it: a recorded success becomes
//! the booking; an attempt with no result, once the paying window
//! ([`BookingConfig::payment_timeout`] + [`PAYING_MARGIN`]) has passed, is
//! refunded (recorded, logged) and the hold goes back to what its own
//! expiry says. Never paid and no ticket.
//!
//! # Time
//! Every call takes `now_ms` (unix milliseconds) from the caller, so tests
//! move the clock; nothing here reads the system clock, except the
//! simulated payment's sleep and the retry backoff.
//!
//! # Layout
//! - [`error`]: [`BookingError`] and its codes.
//! - `db`: connecting, migrations, the two databases' differences, retries.
//! - `performances`: performances, the seat map, counts, the map's tag.
//! - `seatmap`: the seat map as loaded: layout, state, the full listing.
//! - `holds`: claiming seats, releasing them, ending a session's holds.
//! - `confirm`: idempotent confirmation, bookings, cancellation.
//! - [`payment`]: the payment step ([`Payment`]) and its simulation.
//! - `recovery`: finishing paying holds after a crash.
//! - `sweeper`: marking ended holds, promptly.
//! - `retention`: how long keys, declined attempts and ended holds are
//!   kept, and deleting them after.

pub mod error;
pub mod payment;

mod confirm;
pub(crate) mod db;
mod holds;
mod performances;
mod recovery;
mod retention;
mod seatmap;
mod sweeper;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::ToSchema;

pub use db::Backend;
pub use error::BookingError;
pub use holds::Session;
pub use payment::{Payment, PaymentError, SimulatedPayment};
pub use recovery::RecoveryReport;
pub use retention::{IDEMPOTENCY_TTL, PruneReport};
pub use seatmap::{Layout, MapState, MapTag, SeatLayout, SeatMapWork, SeatStates};
pub use sweeper::SweepReport;

use db::Db;

/// The default `hold_seconds` of a performance (field report 003: seven minutes).
pub const DEFAULT_HOLD_SECONDS: u32 = 420;
/// The default `max_seats_per_hold` of a performance.
pub const DEFAULT_MAX_SEATS_PER_HOLD: u32 = 4;
/// The most seats one performance may have.
pub const MAX_SEATS_PER_PERFORMANCE: u64 = 100_000;
/// `held_until` of the seats of a paying hold: later than any clock, so
/// neither time nor a claim frees them; only the confirm's end or recovery.
pub const PAYING: i64 = i64::MAX / 2;
/// Declined payments one hold takes: the last one ends the hold (402
/// `payment_declined` still), and a confirm after it is 409 `hold_expired`.
pub const MAX_DECLINES_PER_HOLD: u32 = 5;
/// How long past the payment timeout a paying hold is left to its confirm
/// before recovery may settle it (clocks of several instances may differ).
pub const PAYING_MARGIN: Duration = Duration::from_secs(60);

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
    layouts: std::sync::Mutex<HashMap<i64, Arc<seatmap::Layout>>>,
    /// Each performance's latest seat state, by performance key, behind
    /// the lock its loaders queue on; see `seat_map_state`.
    map_states: std::sync::Mutex<HashMap<i64, seatmap::StateSlot>>,
    /// Seat map reads and renderings (a test hook), and the loaders' order.
    work: Arc<seatmap::WorkCounters>,
    /// Performance rows as holds read them, by (room, performance), each
    /// kept at most [`performances::PERF_TTL`]; see `cached_performance_row`.
    perf_cache: std::sync::Mutex<HashMap<(String, String), performances::CachedPerf>>,
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
            base + self.payment_timeout + confirm::OUTCOME_MARGIN
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

/// A performance's settings and seat map, as the admin API takes them
/// (unknown fields refused).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PerformanceSpec {
    /// Shown to visitors (1 to 200 characters, no control characters).
    #[schema(
        min_length = 1,
        max_length = 200,
        pattern = r"^[^\x00-\x1f\x7f-\x9f]+$"
    )]
    pub title: String,
    /// When the performance starts (RFC 3339, years 2000 to 9999).
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime, pattern = r"^[2-9]\d{3}-")]
    pub starts_at: OffsetDateTime,
    /// How long a hold lasts at most (1 to 86,400; default 420).
    #[serde(default = "default_hold_seconds")]
    #[schema(minimum = 1, maximum = 86_400)]
    pub hold_seconds: u32,
    /// Most seats in one hold (1 to 100; default 4).
    #[serde(default = "default_max_seats")]
    #[schema(minimum = 1, maximum = 100)]
    pub max_seats_per_hold: u32,
    /// The seat map, in display order: 1 to 100 sections with distinct
    /// names, at most 100,000 seats in all.
    #[schema(min_items = 1, max_items = 100)]
    pub sections: Vec<SectionSpec>,
}

fn default_hold_seconds() -> u32 {
    DEFAULT_HOLD_SECONDS
}

fn default_max_seats() -> u32 {
    DEFAULT_MAX_SEATS_PER_HOLD
}

/// One section of the seat map: `rows` rows of `seats_per_row` seats, all
/// at one price. Seat ids are `{name}-{row}-{number}`, counted from 1.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SectionSpec {
    /// 1 to 8 ASCII letters or digits, unique in the performance.
    #[schema(pattern = "^[A-Za-z0-9]{1,8}$")]
    pub name: String,
    /// 1 to 1,000.
    #[schema(minimum = 1, maximum = 1_000)]
    pub rows: u32,
    /// 1 to 1,000.
    #[schema(minimum = 1, maximum = 1_000)]
    pub seats_per_row: u32,
    /// In minor units (cents, won), at most 10^12.
    #[schema(minimum = 0, maximum = 1_000_000_000_000_u64)]
    pub price: u64,
}

/// How many seats are in each state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct SeatCounts {
    /// Neither held nor booked.
    pub available: u64,
    /// In a live hold (including one being paid for).
    pub held: u64,
    /// Sold.
    pub booked: u64,
}

/// A performance as the admin API answers it: settings, map and counts.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct Performance {
    /// The performance id.
    pub id: String,
    /// The settings and seat map.
    #[serde(flatten)]
    pub spec: PerformanceSpec,
    /// Seats per state now.
    #[serde(flatten)]
    pub counts: SeatCounts,
}

/// A performance in the visitors' list.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct PerformanceSummary {
    /// The performance id.
    pub id: String,
    /// Its title.
    pub title: String,
    /// When it starts (RFC 3339).
    #[serde(with = "time::serde::rfc3339")]
    pub starts_at: OffsetDateTime,
    /// Seats per state now.
    #[serde(flatten)]
    pub counts: SeatCounts,
}

/// A seat's state as visitors see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum SeatState {
    /// Free to hold.
    Available,
    /// In someone's live hold.
    Held,
    /// Sold.
    Booked,
}

/// One seat of the listing.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub struct Seat {
    /// `{section}-{row}-{number}`.
    pub id: String,
    /// The section's name.
    pub section: String,
    /// Row, from 1.
    pub row: u32,
    /// Seat number in the row, from 1.
    pub number: u32,
    /// In minor units.
    pub price: u64,
    /// Its state now.
    pub state: SeatState,
}

/// Every seat of a performance, in map order, with a tag for conditional GETs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub struct SeatMap {
    /// The performance id.
    pub performance: String,
    /// The seats.
    pub seats: Vec<Seat>,
    /// Changes whenever any seat's state may have changed: usable as an
    /// ETag (it is [`BookingStore::seats_tag`] at the time of the read, or
    /// later).
    #[serde(skip)]
    pub tag: String,
}

/// A live hold, as the hold route answers it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub struct Hold {
    /// UUID v7.
    pub hold_id: String,
    /// The performance id.
    pub performance: String,
    /// The seats held, sorted.
    pub seats: Vec<String>,
    /// Their prices added up, in minor units.
    pub total: u64,
    /// When the hold ends (RFC 3339).
    #[serde(with = "rfc3339_ms")]
    #[schema(value_type = String, format = DateTime)]
    pub expires_at: u64,
}

/// A booking's status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum BookingStatus {
    /// Paid; the seats are sold.
    Confirmed,
    /// Cancelled; the seats are back on sale.
    Cancelled,
}

/// A booking, as the confirm route answers it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Booking {
    /// UUID v7.
    pub booking_id: String,
    /// The performance id.
    pub performance: String,
    /// The seats sold, sorted.
    pub seats: Vec<String>,
    /// Paid, in minor units.
    pub total: u64,
    /// Confirmed, or cancelled later.
    pub status: BookingStatus,
    /// When it was confirmed (RFC 3339).
    #[serde(with = "rfc3339_ms")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: u64,
}

/// A room's seats over all its performances: the promoter's signal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub struct RoomSeats {
    /// Neither held nor booked.
    pub available: u64,
    /// In live holds.
    pub held: u64,
    /// Sold.
    pub booked: u64,
    /// All seats.
    pub total: u64,
}

impl RoomSeats {
    /// Nothing left to sell, ever (every seat booked).
    pub fn sold_out(&self) -> bool {
        self.total > 0 && self.booked >= self.total
    }
}

/// Checks an `Idempotency-Key` header value: 1 to 255 visible ASCII characters.
pub fn validate_idempotency_key(key: &str) -> Result<(), BookingError> {
    if key.is_empty() || key.len() > 255 || !key.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(BookingError::Invalid(
            "Idempotency-Key must be 1 to 255 visible ASCII characters".into(),
        ));
    }
    Ok(())
}

/// The database's text form of a visitor id: 32 lowercase hex digits.
fn visitor_key(visitor: u128) -> String {
    format!("{visitor:032x}")
}

/// A room id or performance id (the room id rule): else `what` is refused.
fn check_id(id: &str, what: BookingError) -> Result<(), BookingError> {
    if token::is_valid_room(id) {
        Ok(())
    } else {
        Err(what)
    }
}

/// A new UUID v7 whose time part is `now_ms` (the caller's clock).
fn new_id(now_ms: u64) -> String {
    let ts = uuid::Timestamp::from_unix(
        uuid::NoContext,
        now_ms / 1000,
        u32::try_from((now_ms % 1000) * 1_000_000).unwrap_or(0),
    );
    uuid::Uuid::new_v7(ts).to_string()
}

/// Whether `id` is a UUID in its hyphenated text form (else it cannot name
/// a hold or booking, and reads as not found).
fn is_uuid(id: &str) -> bool {
    id.len() == 36 && uuid::Uuid::try_parse(id).is_ok()
}

/// `u64` milliseconds to the `i64` the database stores (saturating).
fn db_ms(ms: u64) -> i64 {
    i64::try_from(ms).unwrap_or(i64::MAX / 4)
}

/// Serializes unix milliseconds as RFC 3339 (UTC, millisecond precision).
pub(crate) mod rfc3339_ms {
    use serde::{Deserialize, Deserializer, Serializer};
    use time::OffsetDateTime;
    use time::format_description::well_known::Rfc3339;

    /// The RFC 3339 text of `ms`.
    pub(crate) fn format(ms: u64) -> String {
        let nanos = i128::from(ms) * 1_000_000;
        OffsetDateTime::from_unix_timestamp_nanos(nanos)
            .ok()
            .and_then(|t| t.format(&Rfc3339).ok())
            .unwrap_or_default()
    }

    pub(crate) fn serialize<S: Serializer>(ms: &u64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format(*ms))
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        let text = String::deserialize(d)?;
        let t = OffsetDateTime::parse(&text, &Rfc3339).map_err(serde::de::Error::custom)?;
        u64::try_from(t.unix_timestamp_nanos() / 1_000_000).map_err(serde::de::Error::custom)
    }
}

/// The demo performance a first start on the embedded defaults puts on
/// sale in the example room: three sections, 160 seats.
pub fn demo_performance() -> PerformanceSpec {
    PerformanceSpec {
        title: "Demo night".into(),
        // A fixed date in the future: the demo sells, it does not perform.
        starts_at: OffsetDateTime::from_unix_timestamp(1_893_492_000)
            .unwrap_or(OffsetDateTime::UNIX_EPOCH),
        hold_seconds: DEFAULT_HOLD_SECONDS,
        max_seats_per_hold: DEFAULT_MAX_SEATS_PER_HOLD,
        sections: vec![
            SectionSpec {
                name: "A".into(),
                rows: 4,
                seats_per_row: 10,
                price: 150_000,
            },
            SectionSpec {
                name: "B".into(),
                rows: 6,
                seats_per_row: 10,
                price: 110_000,
            },
            SectionSpec {
                name: "C".into(),
                rows: 6,
                seats_per_row: 10,
                price: 77_000,
            },
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idempotency_keys() {
        assert!(validate_idempotency_key("a").is_ok());
        assert!(validate_idempotency_key(&"k".repeat(255)).is_ok());
        assert!(validate_idempotency_key("~!@#$%^&*()_+{}|:\"<>?").is_ok());
        assert!(validate_idempotency_key("").is_err());
        assert!(validate_idempotency_key(&"k".repeat(256)).is_err());
        assert!(validate_idempotency_key("has space").is_err());
        assert!(validate_idempotency_key("tab\t").is_err());
        assert!(validate_idempotency_key("é").is_err());
    }

    #[test]
    fn ids_are_uuid_v7_in_caller_time() {
        let id = new_id(1_700_000_000_123);
        let parsed = uuid::Uuid::parse_str(&id).unwrap();
        assert_eq!(parsed.get_version_num(), 7);
        let (secs, nanos) = parsed.get_timestamp().unwrap().to_unix();
        assert_eq!((secs, nanos / 1_000_000), (1_700_000_000, 123));
        assert!(is_uuid(&id));
        assert!(!is_uuid("not-a-uuid"));
    }

    #[test]
    fn times_round_trip_as_rfc3339() {
        assert_eq!(rfc3339_ms::format(0), "1970-01-01T00:00:00Z");
        let hold = Hold {
            hold_id: "h".into(),
            performance: "p".into(),
            seats: vec![],
            total: 0,
            expires_at: 1_700_000_000_250,
        };
        let json = serde_json::to_value(&hold).unwrap();
        assert_eq!(json["expires_at"], "2023-11-14T22:13:20.25Z");
    }
}
