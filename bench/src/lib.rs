//! The benchmark programs (`src/bin`, one per measurement; BENCHMARKS.md
//! says what each measures and how to run it) and what they share.
//!
//! - [`accounts`]: the identity key, the origin's identities and tokens of
//!   accounts of their own, for `bench` and `request_cost`.
//! - [`commandstats`]: Redis's account of the scripts it ran, read by
//!   `bench` and `request_cost`.
//! - [`pinned`]: a queue store on the run's own clock, embedded or on
//!   Redis, for `draw_bench` and `eta_bench`.
//! - [`scratch_db`]: a MariaDB database of one run's own, for
//!   `booking_bench` and `seatmap_bench`.

pub mod accounts;
pub mod commandstats;
pub mod pinned;
pub mod scratch_db;
