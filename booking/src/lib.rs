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
//! unique hold id on bookings allows one booking per hold. A hold of an
//! identified visitor records its account ([`AccountHash`]), and so does its
//! booking; a performance's `max_seats_per_account` caps what one account
//! holds and has booked there, checked inside the hold's transaction.
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
//! This crate knows no queue, no Redis and no HTTP server (its dependency
//! tree names none: `scripts/check-layers.sh`).
//! - [`model`]: what booking speaks in (performances, seats, holds,
//!   bookings), their limits and the id rules.
//! - [`error`]: [`BookingError`] and its codes.
//! - `db`: connecting, migrations (`migrations/`), the two databases'
//!   differences, retries.
//! - [`payment`]: the payment step ([`Payment`]) and its simulation.
//! - [`store`]: [`BookingStore`], its configuration and caches. Below it,
//!   what the caches hold:
//!   - `perf_row`: a performance's row as read, and the seat id rules.
//!   - `map_state`: a seat map's layout and state, with their answers.
//!
//!   Above it, its operations, one module each:
//!   - `performances`: performances, the seat map, counts, the map's tag.
//!   - `seatmap`: loading the seat map: sharing one state read per moment.
//!   - `holds`: claiming seats, releasing them, ending a session's holds.
//!   - `account_limit`: the seats one account may hold and book in a
//!     performance (`max_seats_per_account`): its lock and its count.
//!   - `confirm`: idempotent confirmation, bookings, cancellation.
//!   - `recovery`: finishing paying holds after a crash.
//!   - `sweeper`: marking ended holds, promptly.
//!   - `retention`: how long keys, declined attempts and ended holds are
//!     kept, and deleting them after.

pub(crate) mod db;
pub mod error;
pub mod model;
pub mod payment;
pub mod store;

pub use db::Backend;
pub use error::BookingError;
pub use model::{
    Booking, BookingStatus, DEFAULT_HOLD_SECONDS, DEFAULT_MAX_SEATS_PER_HOLD, Hold,
    MAX_SEATS_PER_PERFORMANCE, Performance, PerformanceSpec, PerformanceSummary, RoomSeats, Seat,
    SeatCounts, SeatMap, SeatState, SectionSpec, demo_performance, validate_idempotency_key,
};
pub use payment::{Payment, PaymentError, SimulatedPayment};
pub use room::AccountHash;
pub use store::holds::Session;
pub use store::map_state::{Layout, MapState, SeatLayout, SeatMapWork, SeatStates};
pub use store::recovery::RecoveryReport;
pub use store::retention::{IDEMPOTENCY_TTL, PruneReport};
pub use store::seatmap::MapTag;
pub use store::sweeper::SweepReport;
pub use store::{
    BookingConfig, BookingStore, Faults, MAX_DECLINES_PER_HOLD, PAYING, PAYING_MARGIN,
};
