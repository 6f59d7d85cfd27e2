//! The admin API for what a room sells: `PUT` and `GET`
//! `/admin/rooms/{room}/performances/{performance}`, a performance's
//! settings and seat map with its seat counts. Same key as the room API.

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, Path, State};
use serde::{Deserialize, Serialize};
use tracing::instrument;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::admin::{Admin, MAX_BODY, integral_floats_as_integers};
use super::extract::{Room, required_json};
use super::responses::{AdminAuth, BadBody, BookingDown, NotFound};
use crate::error::ApiError;
use crate::state::AppState;
use booking::{Performance, PerformanceSpec, SectionSpec};

/// The admin performance routes.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(put_performance, get_performance))
        .layer(DefaultBodyLimit::max(MAX_BODY))
}

/// `{room}` and `{performance}` in the path.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
struct PerformancePath {
    /// The room's id.
    #[param(pattern = "^[a-z0-9][a-z0-9-]{0,63}$", example = "concert")]
    #[allow(dead_code)] // read by the `Room` extractor
    room: String,
    /// The performance's id (the rule of room ids).
    #[param(pattern = "^[a-z0-9][a-z0-9-]{0,63}$", example = "evening")]
    performance: String,
}

/// A performance as the admin API answers it: its settings and seat map as
/// PUT takes them, plus its id and seat counts. (Spelled out rather than
/// flattened from [`PerformanceSpec`], whose schema refuses other fields.)
#[derive(Serialize, ToSchema)]
struct PerformanceBody {
    /// The performance id.
    id: String,
    /// Shown to visitors.
    title: String,
    /// When the performance starts (RFC 3339).
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    starts_at: time::OffsetDateTime,
    /// How long a hold lasts at most, in seconds.
    hold_seconds: u32,
    /// Most seats in one hold.
    max_seats_per_hold: u32,
    /// Most seats one account holds and has booked in the performance,
    /// over all its sessions; null: no limit.
    #[schema(minimum = 1, maximum = 100_000)]
    max_seats_per_account: Option<u32>,
    /// The seat map.
    sections: Vec<SectionSpec>,
    /// Seats neither held nor booked.
    available: u64,
    /// Seats in live holds.
    held: u64,
    /// Seats sold.
    booked: u64,
}

impl From<Performance> for PerformanceBody {
    fn from(p: Performance) -> Self {
        PerformanceBody {
            id: p.id,
            title: p.spec.title,
            starts_at: p.spec.starts_at,
            hold_seconds: p.spec.hold_seconds,
            max_seats_per_hold: p.spec.max_seats_per_hold,
            max_seats_per_account: p.spec.max_seats_per_account,
            sections: p.spec.sections,
            available: p.counts.available,
            held: p.counts.held,
            booked: p.counts.booked,
        }
    }
}

/// Create a performance or replace its settings and seat map.
///
/// A replacement that would remove or reprice a held or booked seat is 409
/// `seats_in_use` and changes nothing. Unknown fields are refused.
#[utoipa::path(
    put,
    path = "/admin/rooms/{room}/performances/{performance}",
    tag = "admin",
    params(PerformancePath),
    request_body(content = PerformanceSpec),
    security(("admin_key" = [])),
    responses(
        (status = 200, description = "The performance as it now is, with seat counts", body = PerformanceBody),
        (status = 409, description = "`seats_in_use`: held or booked seats would be removed \
            or repriced (some listed in `seats`); nothing changed", body = super::api_doc::ErrorBody),
        BadBody, AdminAuth, NotFound, BookingDown,
    ),
)]
#[instrument(skip_all, fields(%room))]
async fn put_performance(
    _: Admin,
    State(state): State<AppState>,
    Room(room): Room,
    Path(path): Path<PerformancePath>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<PerformanceBody>, ApiError> {
    let mut fields: serde_json::Value = required_json(body)?;
    // `454.0` is the integer 454 to JSON Schema and most encoders.
    integral_floats_as_integers(&mut fields);
    let spec: PerformanceSpec =
        serde_json::from_value(fields).map_err(|e| ApiError::InvalidBody(e.to_string()))?;
    let store = state.booking.as_deref().ok_or(ApiError::NotFound)?;
    // A performance belongs to a room that exists.
    state.queue.figures(&room).await?;
    let performance = store
        .put_performance(
            room.as_str(),
            &path.performance,
            &spec,
            state.clock.now_ms(),
        )
        .await?;
    tracing::info!(performance = %path.performance, "performance put");
    Ok(Json(performance.into()))
}

/// A performance with its settings, seat map and seat counts.
#[utoipa::path(
    get,
    path = "/admin/rooms/{room}/performances/{performance}",
    tag = "admin",
    params(PerformancePath),
    security(("admin_key" = [])),
    responses(
        (status = 200, description = "The performance, with seat counts", body = PerformanceBody),
        AdminAuth, NotFound, BookingDown,
    ),
)]
#[instrument(skip_all, fields(%room))]
async fn get_performance(
    _: Admin,
    State(state): State<AppState>,
    Room(room): Room,
    Path(path): Path<PerformancePath>,
) -> Result<Json<PerformanceBody>, ApiError> {
    let store = state.booking.as_deref().ok_or(ApiError::NotFound)?;
    let performance = store
        .get_performance(room.as_str(), &path.performance, state.clock.now_ms())
        .await?;
    Ok(Json(performance.into()))
}
