//! The waiting room's origin: it composes the layers below it and speaks
//! HTTP.
//!
//! # The crates below
//! - `room` (re-exported as [`room`] and [`clock`]): room ids, settings and
//!   the clock; the ground both of the others stand on.
//! - `queue` ([`queue`]): the line, its stores and the promoter; no HTTP.
//! - `booking` ([`booking`]): performances, seats, holds and bookings on
//!   SQL; no queue, no Redis, no HTTP server.
//! - `token`: the ticket and entry-token format, shared with the edge.
//!
//! # This crate, from the top down
//! - [`start`]: start-up wiring (keys, stores, shared state, the rooms
//!   file) and [`run`], which serves until shutdown.
//! - [`config`]: every operator setting (clap flags with `WR_` variables).
//! - [`http`]: the router, one module per resource, the OpenAPI document,
//!   the extractors, and the entry check protected routes ask for.
//! - [`state`]: what handlers share (the stores, the clock, keys, limits).
//! - [`sale`]: the loop that ties a room's line to its sale (seats left,
//!   sessions ended by a booking).
//! - [`telemetry`]: the Prometheus recorder and the loop that refreshes the
//!   per-room gauges.
//! - [`challenge`]: the join challenge: the seed a 428 asks to solve and
//!   what a join's answer proves to the store.
//! - [`sessions`]: entry sessions (one per admitted visitor) and their rules.
//! - [`holds`]: held status polls (`Prefer: wait`): who is held, what wakes
//!   them, and their cap.
//! - [`history`]: every room's last 30 minutes of figures, for the console.
//! - [`outlook`]: whether seats will probably be left at a waiter's turn.
//! - [`latency`]: booking latency per room, for adaptive admission.
//! - [`limits`]: what one client or session may do how often: clients and
//!   their join and place limits, failed admin attempts, booking writes
//!   and seat map loads per session, and the per-session limiter they share.
//! - [`error`]: the one error type and its JSON shape.
//! - [`cookies`]: the `Set-Cookie` values the origin writes.
//! - [`metric_names`]: the names metrics are recorded under.
//! - [`rooms_file`]: the `--rooms` file (rooms and their performances).
//! - [`turnstile`]: Cloudflare Turnstile tokens checked at siteverify.

pub mod challenge;
pub mod config;
pub mod cookies;
pub mod error;
pub mod history;
pub mod holds;
pub mod http;
pub mod identity;
pub mod latency;
pub mod limits;
pub mod metric_names;
pub mod outlook;
pub mod rooms_file;
pub mod sale;
pub mod sessions;
pub mod start;
pub mod state;
pub mod telemetry;
pub mod turnstile;

pub use booking;
pub use queue;
pub use room;
pub use room::clock;
pub use start::{
    StartError, app_state, apply_rooms_file, booking_store, demo_sale, identities, keyring, run,
    run_with, store,
};
