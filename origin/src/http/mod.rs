//! The HTTP layer: one module per resource, each with its `router()`, merged
//! here into the app; plus the layers every route shares (tracing, panic
//! catching, header size limit, JSON 404/405).

pub mod entry;
pub mod extract;
mod health;
mod queue;

use std::future::Future;

use axum::Router;
use axum::extract::Request;
use axum::http::HeaderMap;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use tokio::net::TcpListener;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::trace::{DefaultOnFailure, TraceLayer};

use crate::error::ApiError;
use crate::state::AppState;

/// Largest total size of a request's headers, in bytes. Tickets are a few
/// hundred bytes; anything near this is abuse or a broken client.
pub const MAX_HEADER_BYTES: usize = 16 * 1024;

/// The whole application.
pub fn app(state: AppState) -> Router {
    Router::new()
        .merge(queue::router())
        .merge(health::router())
        .fallback(|| async { ApiError::NotFound })
        .method_not_allowed_fallback(|| async { ApiError::MethodNotAllowed })
        .layer(middleware::from_fn(limit_headers))
        .layer(CatchPanicLayer::custom(
            |_: Box<dyn std::any::Any + Send>| {
                tracing::error!("handler panicked");
                ApiError::Internal.into_response()
            },
        ))
        // 5xx are logged where they arise (error.rs, rate-limited during a
        // store outage); the trace layer's own per-response error line would
        // log every failed request of an outage again.
        .layer(
            TraceLayer::new_for_http()
                .on_failure(DefaultOnFailure::new().level(tracing::Level::DEBUG)),
        )
        .with_state(state)
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

/// Serves `app` on `listener` until `shutdown` completes; in-flight requests
/// finish first.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    use axum::serve::ListenerExt;
    // workerd reuses its connection to the origin; without TCP_NODELAY each
    // request stalls on Nagle against delayed ACK.
    let listener = listener.tap_io(|tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "cannot set TCP_NODELAY");
        }
    });
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await
}
