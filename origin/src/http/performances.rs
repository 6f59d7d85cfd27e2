//! The admin API for what a room sells: `PUT` and `GET`
//! `/admin/rooms/{room}/performances/{performance}`, a performance's
//! settings and seat map with its seat counts. Same key as the room API.

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, Path, State};
use serde::Deserialize;
use tracing::instrument;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::admin::{Admin, MAX_BODY};
use super::extract::{Room, required_json};
use super::responses::{AdminAuth, BadBody, BookingDown, NotFound};
use crate::booking::{Performance, PerformanceSpec};
use crate::error::ApiError;
use crate::state::AppState;

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
        (status = 200, description = "The performance as it now is, with seat counts", body = Performance),
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
) -> Result<Json<Performance>, ApiError> {
    let spec: PerformanceSpec = required_json(body)?;
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
    Ok(Json(performance))
}

/// A performance with its settings, seat map and seat counts.
#[utoipa::path(
    get,
    path = "/admin/rooms/{room}/performances/{performance}",
    tag = "admin",
    params(PerformancePath),
    security(("admin_key" = [])),
    responses(
        (status = 200, description = "The performance, with seat counts", body = Performance),
        AdminAuth, NotFound, BookingDown,
    ),
)]
#[instrument(skip_all, fields(%room))]
async fn get_performance(
    _: Admin,
    State(state): State<AppState>,
    Room(room): Room,
    Path(path): Path<PerformancePath>,
) -> Result<Json<Performance>, ApiError> {
    let store = state.booking.as_deref().ok_or(ApiError::NotFound)?;
    let performance = store
        .get_performance(room.as_str(), &path.performance, state.clock.now_ms())
        .await?;
    Ok(Json(performance))
}
