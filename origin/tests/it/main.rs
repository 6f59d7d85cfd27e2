//! The origin's integration tests, one binary with a module per subject.
//! `common` holds the harness: stores under key prefixes of their own,
//! databases of their own, the router driven in-process and real servers on
//! loopback ports, so tests on parallel threads never share state.
//!
//! The subjects that hold for both queue stores run twice, as
//! `on_redis::…` and `on_memory::…`: each file is compiled into both
//! modules and reads the store from its parent's `STORE`. The rest are about
//! Redis itself, the booking database or real servers, and run once.

// Test code: clippy.toml allows these in test functions, and the helpers
// around them are test code too.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

mod booking_account_limit;
mod booking_confirm;
mod booking_holds;
mod cluster;
mod faults;
mod hardening;
mod parity;
mod payment_knob;
mod persistence;
mod slow_clients;

/// Every subject here runs on Redis; the same list is in `on_memory`.
#[path = "."]
#[allow(clippy::duplicate_mod)] // each subject is here once per store, on purpose
mod on_redis {
    const STORE: crate::common::Store = crate::common::Store::Redis;

    mod abandon;
    mod accounts;
    mod admin;
    mod bad_input;
    mod booking_api;
    mod booking_seatmap;
    mod challenge;
    mod console;
    mod draw;
    mod eta;
    mod fifo;
    mod held_polls;
    mod identity;
    mod joins;
    mod leave_entry;
    mod limits;
    mod line;
    mod methods;
    mod openapi;
    mod outlook;
    mod pages;
    mod promoter;
    mod sale;
    mod sessions;
    mod snapshots;
    mod tokens;
    mod turnstile;
}

/// Every subject here runs on the embedded store; the same list is in
/// `on_redis`.
#[path = "."]
#[allow(clippy::duplicate_mod)] // each subject is here once per store, on purpose
mod on_memory {
    const STORE: crate::common::Store = crate::common::Store::Memory;

    mod abandon;
    mod accounts;
    mod admin;
    mod bad_input;
    mod booking_api;
    mod booking_seatmap;
    mod challenge;
    mod console;
    mod draw;
    mod eta;
    mod fifo;
    mod held_polls;
    mod identity;
    mod joins;
    mod leave_entry;
    mod limits;
    mod line;
    mod methods;
    mod openapi;
    mod outlook;
    mod pages;
    mod promoter;
    mod sale;
    mod sessions;
    mod snapshots;
    mod tokens;
    mod turnstile;
}
