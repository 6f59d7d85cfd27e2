//! Liveness and readiness: `/healthz` answers while the process runs,
//! `/readyz` only while the store answers too.

use axum::Json;
use axum::extract::State;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::responses::StoreDown;
use crate::error::ApiError;
use crate::state::AppState;

/// The health routes.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(healthz))
        .routes(routes!(readyz))
}

/// A health answer.
#[derive(Serialize, ToSchema)]
struct Health {
    /// `ok` (process up) or `ready` (store reachable too).
    #[schema(pattern = "^(ok|ready)$")]
    status: &'static str,
}

/// Liveness: 200 while the process runs.
#[utoipa::path(
    get,
    path = "/healthz",
    tag = "operations",
    responses((status = 200, description = "The process runs", body = Health)),
)]
async fn healthz() -> Json<Health> {
    Json(Health { status: "ok" })
}

/// Readiness: 200 while the store answers, else 503.
#[utoipa::path(
    get,
    path = "/readyz",
    tag = "operations",
    responses(
        (status = 200, description = "The store answers", body = Health),
        StoreDown,
    ),
)]
async fn readyz(State(state): State<AppState>) -> Result<Json<Health>, ApiError> {
    state.queue.ping().await?;
    Ok(Json(Health { status: "ready" }))
}
