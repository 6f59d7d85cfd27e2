//! `/metrics` in the Prometheus text format, and the middleware that times
//! every request by matched route, method and status. The recorder and the
//! room gauges are in `telemetry`.

use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::responses::MetricsAuth;
use crate::state::AppState;
use crate::telemetry;

/// The metrics route.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(metrics))
}

/// Prometheus metrics. With `--metrics-key`, only for
/// `Authorization: Bearer <metrics key>` (else 401); without it, open.
///
/// Per room (label `room`): `wr_room_waiting`, `wr_room_active`,
/// `wr_room_capacity`, `wr_room_admitted_total`, `wr_room_abandoned_total`,
/// `wr_room_admit_rate`, `wr_room_oldest_wait_seconds`, `wr_room_state`
/// (label `state`); refreshed from the store every second. Also
/// `wr_http_request_duration_seconds` (histogram by `route`, `method`,
/// `status`), `wr_store_up` and `wr_joins_rate_limited_total`.
#[utoipa::path(
    get,
    path = "/metrics",
    tag = "operations",
    responses(
        (status = 200, description = "The Prometheus text exposition format (version 0.0.4)",
            content_type = "text/plain", body = String),
        MetricsAuth,
    ),
)]
async fn metrics(State(state): State<AppState>, headers: HeaderMap) -> Response {
    if let Some(key) = &state.metrics_key {
        let presented = headers
            .get(header::AUTHORIZATION)
            .map(HeaderValue::as_bytes)
            .and_then(|v| {
                v.get(..7)
                    .filter(|scheme| scheme.eq_ignore_ascii_case(b"bearer "))
                    .and(v.get(7..))
            });
        if !presented.is_some_and(|p| key.matches(p.trim_ascii())) {
            return refused();
        }
    }
    let mut response = telemetry::handle().render().into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    response
}

/// 401 in the contract's error shape. Its own code, not the admin API's:
/// the metrics key is a separate secret.
fn refused() -> Response {
    let body = serde_json::json!({"error": {
        "code": "invalid_metrics_key",
        "message": "/metrics needs Authorization: Bearer <metrics key>",
    }});
    let mut response = (StatusCode::UNAUTHORIZED, axum::Json(body)).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer realm=\"metrics\""),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// A bounded label for the method: the standard ones by name, anything else `other`.
fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::OPTIONS => "OPTIONS",
        _ => "other",
    }
}

/// Records how long each request took, labelled by the route pattern it
/// matched (never the raw path, so room ids do not multiply the series).
pub async fn track(request: Request, next: Next) -> Response {
    let start = Instant::now();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |p| p.as_str().to_owned());
    let method = method_label(request.method());
    let response = next.run(request).await;
    metrics::histogram!(
        crate::metric_names::HTTP_DURATION,
        "route" => route,
        "method" => method,
        "status" => response.status().as_str().to_owned(),
    )
    .record(start.elapsed().as_secs_f64());
    response
}
