//! What one client or one session may do how often: the abuse limits the
//! state holds and the handlers check. Knows client keys, sessions and
//! time; nothing of the store, and of HTTP only the headers that name a
//! client.
//!
//! - [`clients`]: who a client is (an address, an IPv6 network) and what
//!   it may do: joins a second, places held in a room.
//! - [`strikes`]: failed admin attempts per client, and the refusal log
//!   that cannot be flooded.
//! - [`limiter`]: one allowance per session (room and sequence number):
//!   its quota, wait rounding and pruning, used three times: by
//!   [`sessions`], by [`map_loads`] and for the samples a session may add
//!   to booking latency (`latency`).
//! - [`sessions`]: booking writes (holds, releases, confirms) per session.
//! - [`map_loads`]: seat map loads per session (`--seat-map-per-minute`).

pub mod clients;
pub mod limiter;
pub mod map_loads;
pub mod sessions;
pub mod strikes;
