//! The line: who waits, in what order, and who is let in.
//!
//! A visitor is known to the store only by its *member*: 1, 2, 3, ... from
//! one atomic counter per room. Its signed ticket carries its *sequence
//! number* (`seq`): the room's base plus the member, the base taken from the
//! clock when the room is created, so a room created again never gives an
//! old ticket's seq to someone new. The store trait speaks only seqs; the
//! stores turn them into members. So the store holds two small integers per
//! waiter and nothing else (plus, only while a per-address cap is on, the
//! short key of the address the place was given to: see [`PlaceLimit`];
//! and for a place given to an account, the account's 8-byte keyed hash,
//! so each account holds one place: see [`JoinRequest`]); what a visitor
//! is (room, id, issue time) travels in the ticket.
//!
//! This crate knows nothing of HTTP, tokens or the booking database (its
//! dependency tree names none of them: `scripts/check-layers.sh`); Redis is
//! named only in [`redis`].
//!
//! - [`store`]: the [`QueueStore`] trait every backend implements, and the
//!   answers it gives.
//! - [`promoter`]: the background loop that admits visitors every tick.
//! - [`joins`]: gathers an instance's joins to a room into batches.
//! - [`pacing`]: how often clients poll and what the ETA is (pure functions).
//! - [`redis`]: the Redis store, one Lua script per multi-key change
//!   (`src/redis/lua`).
//! - [`memory`]: the embedded store (no Redis), the same behaviour in-process.
//! - [`snapshot`]: each instance's per-room view, refreshed every tick by
//!   [`QueueStore::observe`], that answers far-back status polls.
//! - [`draw`]: the pre-queue draw anyone can check (seed, commitment,
//!   HMAC-SHA256 draw values).
//! - [`counter_hash`]: the cheap hasher of maps keyed by members and seqs.

pub mod counter_hash;
pub mod draw;
pub mod joins;
pub mod memory;
pub mod pacing;
pub mod promoter;
pub mod redis;
pub mod snapshot;
pub mod store;

pub use draw::DrawView;
pub use store::{
    DEPARTURES_KEPT_MS, END_BUCKETS, JoinRequest, Joined, LineView, MAX_ADMITS_PER_TICK,
    MAX_DROPS_PER_TICK, Observation, PREQUEUE_SPAN, PlaceLimit, Proof, QueueStore,
    ROOMS_REFRESH_TICKS, RoomFigures, SaleSignal, Sample, Schedule, SeatsLeft, Snapshot, Standing,
    StoreError, TickReport, Watch, sample_ranks,
};
