//! The names metrics are recorded under, in one place below every module
//! that records them (the telemetry loop, the HTTP layer, the limits).

/// Histogram: seconds from request to response, by `route` (the matched
/// route pattern, or `unmatched`), `method` and `status`.
pub const HTTP_DURATION: &str = "wr_http_request_duration_seconds";
/// Gauge per `room`: everyone in line.
pub const ROOM_WAITING: &str = "wr_room_waiting";
/// Gauge per `room`: visitors inside now.
pub const ROOM_ACTIVE: &str = "wr_room_active";
/// Gauge per `room`: most visitors inside at once (the setting).
pub const ROOM_CAPACITY: &str = "wr_room_capacity";
/// Counter per `room`: admitted since the room was created.
pub const ROOM_ADMITTED: &str = "wr_room_admitted_total";
/// Counter per `room`: waiters dropped for not polling since the room was created.
pub const ROOM_ABANDONED: &str = "wr_room_abandoned_total";
/// Gauge per `room`: admissions per second actually achieved recently.
pub const ROOM_ADMIT_RATE: &str = "wr_room_admit_rate";
/// Gauge per `room`: how long the visitor at the front has waited (0 when nobody waits).
pub const ROOM_OLDEST_WAIT: &str = "wr_room_oldest_wait_seconds";
/// Gauge per `room` and `state` (open, paused, closed): 1 for the room's state, else 0.
pub const ROOM_STATE: &str = "wr_room_state";
/// Gauge: 1 when the last refresh of the room figures reached the store, else 0.
pub const STORE_UP: &str = "wr_store_up";
/// Counter: joins refused by `--ip-join-rate`.
pub const JOINS_RATE_LIMITED: &str = "wr_joins_rate_limited_total";
/// Counter: booking writes refused by a session's allowance (`limits::sessions`).
pub const SESSION_RATE_LIMITED: &str = "wr_session_rate_limited_total";
/// Sessions ended for being used from too many client addresses.
pub const SESSIONS_SHARED: &str = "wr_sessions_shared_total";
/// Gauge: status polls held now (`Prefer: wait`, see `holds`).
pub const HELD_POLLS: &str = "wr_held_polls";
/// Gauge per `room` and `state` (available, held, booked): the seats of
/// the room's performances, as the sale loop last read them.
pub const SEATS: &str = "wr_seats";
/// Gauge per `room`: adaptive admission's factor on the admit rate (1: none).
pub const ROOM_RATE_FACTOR: &str = "wr_room_rate_factor";
/// Counter per `room`: holds made.
pub const HOLDS: &str = "wr_holds_total";
/// Counter per `room` and `outcome` (booked, declined, refused): confirms
/// answered on a live session (a repeated idempotency key counts again).
pub const CONFIRMS: &str = "wr_confirms_total";
