//! The operator's knob on the simulated payment provider, for rehearsals:
//! `GET` and `PUT /admin/payment` read and change its latency while the
//! origin runs, so a rehearsal can slow payment down mid-sale and watch
//! adaptive admission answer. Same key as the room API. It exists only when
//! the origin was started with `--payment-knob` and pays with the
//! simulation; otherwise both routes are 404 and nothing changes. Visitors
//! cannot reach it.

use std::time::Duration;

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, State};
use serde::{Deserialize, Serialize};
use tracing::instrument;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::admin::{Admin, MAX_BODY};
use super::extract::required_json;
use super::responses::{AdminAuth, BadBody, BookingDown, NotFound};
use crate::error::ApiError;
use crate::state::AppState;
use booking::SimulatedPayment;

/// The payment knob's routes.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(get_payment, put_payment))
        .layer(DefaultBodyLimit::max(MAX_BODY))
}

/// The simulated provider's settings, as `PUT` takes them and both answer.
#[derive(Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct PaymentKnob {
    /// How long each charge and refund takes, in milliseconds, from the
    /// next one on.
    #[schema(minimum = 0, maximum = 60_000)]
    latency_ms: u64,
}

/// The simulation, when the knob is on.
fn simulation(state: &AppState) -> Result<&SimulatedPayment, ApiError> {
    state
        .booking
        .as_deref()
        .and_then(|b| b.simulated_payment())
        .ok_or(ApiError::NotFound)
}

/// The simulated payment's latency.
#[utoipa::path(
    get,
    path = "/admin/payment",
    tag = "admin",
    security(("admin_key" = [])),
    responses(
        (status = 200, description = "The simulated payment's settings", body = PaymentKnob),
        AdminAuth, NotFound, BookingDown,
    ),
)]
#[instrument(skip_all)]
async fn get_payment(
    _: Admin,
    State(state): State<AppState>,
) -> Result<Json<PaymentKnob>, ApiError> {
    let sim = simulation(&state)?;
    Ok(Json(PaymentKnob {
        latency_ms: sim.latency().as_millis() as u64,
    }))
}

/// Change the simulated payment's latency (only with `--payment-knob`).
///
/// Charges already waiting keep the latency they started with.
#[utoipa::path(
    put,
    path = "/admin/payment",
    tag = "admin",
    request_body(content = PaymentKnob),
    security(("admin_key" = [])),
    responses(
        (status = 200, description = "The simulated payment's settings, as they now are", body = PaymentKnob),
        BadBody, AdminAuth, NotFound, BookingDown,
    ),
)]
#[instrument(skip_all)]
async fn put_payment(
    _: Admin,
    State(state): State<AppState>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<PaymentKnob>, ApiError> {
    // Off: 404 whatever the body, as if the route were not there.
    let sim = simulation(&state)?;
    let knob: PaymentKnob = required_json(body)?;
    if knob.latency_ms > 60_000 {
        return Err(ApiError::InvalidBody(
            "latency_ms: 0 to 60,000 milliseconds".into(),
        ));
    }
    sim.set_latency(Duration::from_millis(knob.latency_ms));
    tracing::warn!(
        latency_ms = knob.latency_ms,
        "simulated payment latency changed"
    );
    Ok(Json(knob))
}
