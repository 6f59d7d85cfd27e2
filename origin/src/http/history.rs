//! `GET /admin/rooms/{room}/history`: a room's last 30 minutes of figures,
//! one sample every few seconds, from the origin's memory (`history`), for
//! the operator's console. Admin key as every admin route.
//!
//! The answer comes from memory: a room the history holds costs no store
//! read; only a room it does not hold is looked up, to tell an unknown room
//! (404) from one not sampled yet (no samples).

use axum::Json;
use axum::extract::{RawQuery, State};
use serde::Serialize;
use tracing::instrument;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::admin::Admin;
use super::api_doc::RoomPath;
use super::extract::Room;
use super::responses::{AdminAuth, BadQuery, NoRoom, StoreDown};
use crate::error::ApiError;
use crate::history::{self, Sample};
use crate::state::AppState;
use room::RoomState;

/// The history route.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(room_history))
}

/// What the history may be asked for.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)] // read by the documentation only; the handler reads the raw query
struct HistoryQuery {
    /// Only samples taken after this instant (unix milliseconds), e.g. the
    /// last one already held; absent: the whole span.
    #[param(minimum = 0, maximum = 9_007_199_254_740_991_i64)]
    since_ms: Option<u64>,
}

/// A room's recent figures.
#[derive(Serialize, ToSchema)]
struct RoomHistory {
    /// The room's id.
    room: String,
    /// Seconds between samples.
    resolution_seconds: u64,
    /// Seconds the history reaches back.
    span_seconds: u64,
    /// The samples, oldest first.
    samples: Vec<HistorySample>,
}

/// A room's figures at one instant.
#[derive(Serialize, ToSchema)]
struct HistorySample {
    /// When they were read (unix milliseconds).
    at_ms: u64,
    /// The room's state.
    state: RoomState,
    /// Everyone in line.
    waiting: u32,
    /// Visitors inside.
    active: u32,
    /// Most visitors inside at once (a scheduled window's when one ran).
    capacity: u32,
    /// Admissions per second achieved.
    #[schema(minimum = 0)]
    admit_rate: f64,
    /// Admissions per second configured (a scheduled window's when one ran).
    #[schema(minimum = 0)]
    admit_per_second: f64,
    /// Admitted since the room was created.
    admitted_total: u64,
    /// Waiters dropped for not polling since the room was created.
    abandoned_total: u64,
    /// How long the front of the line had waited; null when nobody waited.
    #[schema(required = true)]
    oldest_wait_seconds: Option<u32>,
    /// The room's seats; null when it sells nothing.
    #[schema(required = true)]
    seats: Option<SeatCounts>,
}

/// A room's seats over all its performances.
#[derive(Serialize, ToSchema)]
pub(super) struct SeatCounts {
    /// Neither held nor booked.
    available: u32,
    /// In live holds.
    held: u32,
    /// Sold.
    booked: u32,
}

impl From<history::Seats> for SeatCounts {
    fn from(seats: history::Seats) -> SeatCounts {
        SeatCounts {
            available: seats.available,
            held: seats.held,
            booked: seats.booked,
        }
    }
}

impl From<Sample> for HistorySample {
    fn from(s: Sample) -> HistorySample {
        // f32 to f64 through the shortest decimal, so 2.5 stays 2.5 and 0.1
        // does not become 0.10000000149011612 on the wire.
        let wide = |x: f32| x.to_string().parse::<f64>().unwrap_or(0.0);
        HistorySample {
            at_ms: s.at_ms,
            state: s.state,
            waiting: s.waiting,
            active: s.active,
            capacity: s.capacity,
            admit_rate: wide(s.admit_rate),
            admit_per_second: wide(s.admit_per_second),
            admitted_total: s.admitted_total,
            abandoned_total: s.abandoned_total,
            oldest_wait_seconds: s.oldest_wait_seconds,
            seats: s.seats.map(SeatCounts::from),
        }
    }
}

/// `since_ms` from the query; other parameters are ignored.
fn since(query: Option<&str>) -> Result<u64, ApiError> {
    let Some(raw) = query
        .unwrap_or("")
        .split('&')
        .find_map(|pair| pair.strip_prefix("since_ms="))
    else {
        return Ok(0);
    };
    raw.parse::<u64>()
        .ok()
        .filter(|ms| *ms <= MAX_SINCE_MS)
        .ok_or_else(|| ApiError::InvalidQuery("since_ms must be unix milliseconds".into()))
}

/// Largest `since_ms` taken: the largest integer every JSON reader holds
/// exactly (2^53 - 1), as the document says.
const MAX_SINCE_MS: u64 = (1 << 53) - 1;

/// A room's figures over the last 30 minutes, one sample every few seconds.
///
/// Kept in the origin's memory from the figures it reads anyway (so each
/// origin instance answers from its own samples); a room is sampled from
/// when the origin first sees it.
#[utoipa::path(
    get,
    path = "/admin/rooms/{room}/history",
    tag = "admin",
    params(RoomPath, HistoryQuery),
    security(("admin_key" = [])),
    responses(
        (status = 200, description = "The room's recent figures", body = RoomHistory),
        BadQuery, AdminAuth, NoRoom, StoreDown,
    ),
)]
#[instrument(skip_all, fields(%room))]
async fn room_history(
    _: Admin,
    State(state): State<AppState>,
    Room(room): Room,
    RawQuery(query): RawQuery,
) -> Result<Json<RoomHistory>, ApiError> {
    let since = since(query.as_deref())?;
    let now = state.clock.now_ms();
    let samples = match state.history.samples(&room, since, now) {
        Some(samples) => samples,
        None => {
            state.queue.figures(&room).await?;
            Vec::new()
        }
    };
    Ok(Json(RoomHistory {
        room: room.to_string(),
        resolution_seconds: history::RESOLUTION_MS / 1000,
        span_seconds: history::SPAN_MS / 1000,
        samples: samples.into_iter().map(HistorySample::from).collect(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_is_unix_milliseconds_or_absent() {
        assert_eq!(since(None).unwrap(), 0);
        assert_eq!(since(Some("x=1")).unwrap(), 0);
        assert_eq!(
            since(Some("x=1&since_ms=1700000000000")).unwrap(),
            1_700_000_000_000
        );
        assert_eq!(
            since(Some("since_ms=9007199254740991")).unwrap(),
            MAX_SINCE_MS
        );
        for bad in [
            "since_ms=",
            "since_ms=-1",
            "since_ms=1.5",
            "since_ms=abc",
            "since_ms=9007199254740992",
        ] {
            assert_eq!(since(Some(bad)).unwrap_err().code(), "invalid_query");
        }
    }
}
