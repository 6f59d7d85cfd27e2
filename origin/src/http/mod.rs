//! The HTTP layer: one module per resource, each with its `router()`, merged
//! here into the app and into the OpenAPI document (each route is
//! registered once, with its description, through `utoipa_axum`); plus the
//! layers every route shares (tracing, latency metrics, panic catching,
//! header size limit, 404 (slash redirects, JSON or the HTML page) and
//! JSON 405); [`serve`] runs it under the connection
//! limits of `conn`.

mod about;
mod admin;
pub mod api_doc;
mod booking;
pub mod client;
pub mod conn;
mod deadline;
mod draw;
pub mod entry;
pub mod extract;
mod fallback;
mod health;
mod history;
mod issue;
mod metrics;
mod pages;
mod payment;
mod performances;
mod queue;
mod responses;
pub mod seatmap;
mod session_end;
pub mod site;

use std::future::Future;

use axum::Router;
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use tokio::net::TcpListener;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::compression::CompressionLayer;
use tower_http::compression::predicate::SizeAbove;
use tower_http::trace::{DefaultOnFailure, TraceLayer};
use utoipa::OpenApi;
use utoipa::openapi::{RefOr, Required};
use utoipa_axum::router::OpenApiRouter;

pub use self::conn::ConnLimits;
use crate::error::ApiError;
use crate::state::AppState;

/// Largest total size of a request's headers, in bytes. Tickets are a few
/// hundred bytes; anything near this is abuse or a broken client.
pub const MAX_HEADER_BYTES: usize = 16 * 1024;

/// Every route with its description.
fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(api_doc::ApiDoc::openapi())
        .merge(queue::router())
        .merge(about::router())
        .merge(draw::router())
        .merge(admin::router())
        .merge(history::router())
        .merge(performances::router())
        .merge(booking::router())
        .merge(health::router())
        .merge(metrics::router())
        .merge(payment::router())
        .merge(api_doc::router())
        .merge(pages::router())
}

/// The OpenAPI document of every route [`app`] serves.
pub fn openapi() -> utoipa::openapi::OpenApi {
    let mut doc = routes().split_for_parts().1;
    // The queue's and the room admin API's bodies may be left out: join and
    // leave take none (or `{}`), a room PUT then means all defaults, PATCH no
    // change. Booking's bodies (a hold's seats, a payment, a performance)
    // must be there.
    for (path, item) in doc.paths.paths.iter_mut() {
        if path.starts_with("/api/") || path.contains("/performances/") {
            continue;
        }
        for op in [&mut item.put, &mut item.post, &mut item.patch]
            .into_iter()
            .flatten()
        {
            if let Some(RefOr::T(body)) = &mut op.request_body {
                body.required = Some(Required::False);
            }
        }
    }
    doc
}

/// The whole application.
pub fn app(state: AppState) -> Router {
    // Installs the metrics recorder before the first request is timed.
    crate::telemetry::handle();
    let (router, _) = routes().split_for_parts();
    router
        .fallback(fallback::fallback)
        .method_not_allowed_fallback(|| async { ApiError::MethodNotAllowed })
        // The last layer added runs first: an oversized head is refused
        // before the session's addresses are counted or its token renewed,
        // and booking latency is timed only inside a session `renew` checked.
        .layer(middleware::from_fn_with_state(
            state.clone(),
            deadline::bound,
        ))
        .layer(middleware::from_fn_with_state(
            state.clone(),
            booking::track_latency,
        ))
        .layer(middleware::from_fn_with_state(state.clone(), entry::renew))
        .layer(middleware::from_fn(limit_headers))
        .layer(middleware::from_fn(private_when_setting_cookies))
        .layer(CatchPanicLayer::custom(
            |_: Box<dyn std::any::Any + Send>| {
                tracing::error!("handler panicked");
                ApiError::Internal.into_response()
            },
        ))
        .layer(middleware::from_fn(metrics::track))
        // 5xx are logged where they arise (error.rs, rate-limited during a
        // store outage); the trace layer's own per-response error line would
        // log every failed request of an outage again.
        .layer(
            TraceLayer::new_for_http()
                .on_failure(DefaultOnFailure::new().level(tracing::Level::DEBUG)),
        )
        .with_state(state)
}

/// Gzip for the answers worth it, when the client takes it: the seat map
/// and the pages (large and repetitive), over 1 KiB. Not the queue's small
/// status answers, which most clients poll and which would gain nothing.
fn compression() -> CompressionLayer<SizeAbove> {
    CompressionLayer::new().compress_when(SizeAbove::new(1024))
}

fn header_bytes(headers: &HeaderMap) -> usize {
    headers
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len() + 4)
        .sum()
}

async fn limit_headers(request: Request, next: Next) -> Response {
    if header_bytes(request.headers()) > MAX_HEADER_BYTES {
        return ApiError::HeadersTooLarge.into_response();
    }
    next.run(request).await
}

/// Marks every answer that sets a cookie `Cache-Control: private,
/// no-store`, unless its handler already made it `private`: a shared cache
/// (a CDN rule that caches everything) must never hand one visitor's
/// ticket or entry to another, while the browser's own cache may keep what
/// its handler allows (the seat map's layout).
async fn private_when_setting_cookies(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let private = response
        .headers()
        .get(header::CACHE_CONTROL)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(',')
                .any(|d| d.trim().eq_ignore_ascii_case("private"))
        });
    if response.headers().contains_key(header::SET_COOKIE) && !private {
        response.headers_mut().insert(
            header::CACHE_CONTROL,
            HeaderValue::from_static("private, no-store"),
        );
    }
    response
}

/// Serves `app` on `listener` under the default [`ConnLimits`] until
/// `shutdown` completes; in-flight requests finish first. Handlers see the
/// TCP peer's address (`ConnectInfo`), which the abuse limits key clients by.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    conn::serve(listener, app, ConnLimits::default(), shutdown).await
}
