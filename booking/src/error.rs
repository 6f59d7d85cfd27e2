//! The one error type of the booking store. Each variant is an answer the
//! HTTP layer maps to the contract's status and code (see [`BookingError::code`]);
//! database details are logged here and never carried to a client.

use std::sync::atomic::{AtomicU64, Ordering};

/// Everything a booking call can fail with. The status each variant answers
/// with is in its doc; the code is [`BookingError::code`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BookingError {
    /// No such performance in this room (404 `unknown_performance`).
    #[error("no such performance")]
    UnknownPerformance,
    /// Seat ids not on the performance's map (422 `unknown_seat`).
    #[error("no such seat: {}", .0.join(", "))]
    UnknownSeat(Vec<String>),
    /// Some of the seats are held or booked by someone else; nothing was held
    /// (409 `seat_unavailable`, the taken ones listed as `"seats"`).
    #[error("seats not available: {}", .seats.join(", "))]
    SeatUnavailable {
        /// The requested seats that are taken.
        seats: Vec<String>,
    },
    /// More seats than the performance's `max_seats_per_hold` (422 `too_many_seats`).
    #[error("at most {max} seats per hold")]
    TooManySeats {
        /// The performance's limit.
        max: u32,
    },
    /// A hold of no seat (422 `no_seats`).
    #[error("a hold needs at least one seat")]
    NoSeats,
    /// The visitor already has a live hold in this room, on this
    /// performance or another (409 `hold_exists`).
    #[error(
        "a live hold in this room exists already (one per visitor, whatever the performance): pay for it or release it first"
    )]
    HoldExists,
    /// The hold would take the visitor's account past the performance's
    /// `max_seats_per_account`, counting the seats it holds and has booked
    /// there; nothing was held (409 `account_limit`).
    #[error(
        "at most {max} seats per account for this performance, held and booked together: release or cancel some first"
    )]
    AccountLimit {
        /// The performance's limit.
        max: u32,
    },
    /// The hold has ended (time, session, release, or it became a booking)
    /// (409 `hold_expired`).
    #[error("the hold has ended")]
    HoldExpired,
    /// A confirm of this hold is paying right now under another key
    /// (409 `payment_in_progress`).
    #[error("this hold is being paid for")]
    PaymentInProgress,
    /// No such hold or booking for this visitor in this room; another
    /// visitor's reads the same (404 `not_found`).
    #[error("no such hold or booking")]
    NotFound,
    /// The payment was declined; the hold stays, unless this was its
    /// [`MAX_DECLINES_PER_HOLD`](crate::store::MAX_DECLINES_PER_HOLD)th decline,
    /// which ends it (402 `payment_declined`).
    #[error("the payment was declined")]
    PaymentDeclined,
    /// The payment provider failed or timed out; nothing was charged and the
    /// hold stays (402 `payment_failed`).
    #[error("the payment did not go through")]
    PaymentFailed,
    /// The idempotency key was used before with another hold or body
    /// (409 `idempotency_key_reused`).
    #[error("this Idempotency-Key was used for another request")]
    IdempotencyKeyReused,
    /// A performance replacement would remove or reprice held or booked seats;
    /// nothing changed (409 `seats_in_use`).
    #[error("the new seat map would remove or reprice held or booked seats: {}", .seats.join(", "))]
    SeatsInUse {
        /// Some of the seats in the way (at most a few dozen).
        seats: Vec<String>,
    },
    /// The session this hold would belong to has ended (401 `invalid_entry`).
    #[error("the session has ended")]
    SessionEnded,
    /// A malformed id, key or setting (422 `invalid`; 400
    /// `idempotency_key_required` is the HTTP layer's for a missing header).
    #[error("{0}")]
    Invalid(String),
    /// Lock contention outlasted the bounded retries (503 `busy`, retry).
    #[error("the booking database is busy, retry shortly")]
    Busy,
    /// The database cannot be reached (503 `store_unavailable`).
    #[error("the booking database is unavailable")]
    Unavailable,
    /// A database error that is a bug, not the client's doing (500
    /// `internal`); the detail was logged when it was built.
    #[error("internal booking error")]
    Internal,
}

impl BookingError {
    /// The contract's snake_case error code for this answer.
    pub fn code(&self) -> &'static str {
        match self {
            BookingError::UnknownPerformance => "unknown_performance",
            BookingError::UnknownSeat(_) => "unknown_seat",
            BookingError::SeatUnavailable { .. } => "seat_unavailable",
            BookingError::TooManySeats { .. } => "too_many_seats",
            BookingError::NoSeats => "no_seats",
            BookingError::HoldExists => "hold_exists",
            BookingError::AccountLimit { .. } => "account_limit",
            BookingError::HoldExpired => "hold_expired",
            BookingError::PaymentInProgress => "payment_in_progress",
            BookingError::NotFound => "not_found",
            BookingError::PaymentDeclined => "payment_declined",
            BookingError::PaymentFailed => "payment_failed",
            BookingError::IdempotencyKeyReused => "idempotency_key_reused",
            BookingError::SeatsInUse { .. } => "seats_in_use",
            BookingError::SessionEnded => "invalid_entry",
            BookingError::Invalid(_) => "invalid_body",
            BookingError::Busy => "busy",
            BookingError::Unavailable => "store_unavailable",
            BookingError::Internal => "internal",
        }
    }

    /// Whether the same call may succeed when simply tried again (lock
    /// contention); the store retries these a bounded number of times.
    pub(crate) fn is_retryable(&self) -> bool {
        matches!(self, BookingError::Busy)
    }
}

impl From<sqlx::Error> for BookingError {
    fn from(e: sqlx::Error) -> Self {
        classify(&e)
    }
}

/// MySQL's "deadlock found" and "lock wait timeout exceeded".
const MYSQL_DEADLOCK: u16 = 1213;
const MYSQL_LOCK_WAIT_TIMEOUT: u16 = 1205;
/// MySQL's answers of a server going away or refusing work for now: too
/// many connections, shutdown in progress, a connection aborted or killed
/// (a shutdown kills every session), a query interrupted, read-only mode (a
/// replica, or a primary being failed over).
const MYSQL_OUTAGE: &[u16] = &[1040, 1053, 1152, 1290, 1317, 1836, 1927, 4031];
/// SQLite's SQLITE_BUSY and SQLITE_LOCKED primary result codes.
const SQLITE_BUSY: &str = "5";
const SQLITE_LOCKED: &str = "6";

/// Sorts a database error into contention (retry), an outage (503) or a bug
/// (logged, 500).
fn classify(e: &sqlx::Error) -> BookingError {
    match e {
        sqlx::Error::Database(db) => {
            if let Some(my) = db.try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>() {
                if matches!(my.number(), MYSQL_DEADLOCK | MYSQL_LOCK_WAIT_TIMEOUT) {
                    return BookingError::Busy;
                }
                if MYSQL_OUTAGE.contains(&my.number()) {
                    return unavailable(e);
                }
            }
            if let Some(lite) = db.try_downcast_ref::<sqlx::sqlite::SqliteError>() {
                // Extended codes carry the primary code in their low byte.
                let code = sqlx::error::DatabaseError::code(lite)
                    .map(|c| c.into_owned())
                    .unwrap_or_default();
                let primary = code.parse::<i64>().map(|c| (c & 0xff).to_string());
                if matches!(primary.as_deref(), Ok(SQLITE_BUSY | SQLITE_LOCKED)) {
                    return BookingError::Busy;
                }
            }
            tracing::error!(error = %db, "booking database error");
            BookingError::Internal
        }
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed => unavailable(e),
        other => {
            tracing::error!(error = %other, "booking database error");
            BookingError::Internal
        }
    }
}

/// How often an outage is logged at warn level: during one every call
/// fails, and a line per call would bury the log.
const OUTAGE_LOG_SECS: u64 = 10;

/// Logs an outage (at warn at most once per [`OUTAGE_LOG_SECS`] across all
/// calls, else at debug) and answers `Unavailable`.
fn unavailable(e: &sqlx::Error) -> BookingError {
    static LAST: AtomicU64 = AtomicU64::new(0);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let last = LAST.load(Ordering::Relaxed);
    if now >= last.saturating_add(OUTAGE_LOG_SECS)
        && LAST
            .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    {
        tracing::warn!(error = %e, "booking database unavailable (more within {OUTAGE_LOG_SECS} s are logged at debug)");
    } else {
        tracing::debug!(error = %e, "booking database unavailable");
    }
    BookingError::Unavailable
}

/// Whether the error is a unique-key violation (a duplicate row).
pub(crate) fn is_unique_violation(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(db) if db.is_unique_violation())
}
