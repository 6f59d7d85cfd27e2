//! The one error type of the HTTP API, and its mapping to the contract's
//! shape: `{"error": {"code": "snake_case", "message": "human text"}}` with
//! the matching status. Internal details are logged, never sent.

use std::sync::atomic::{AtomicU64, Ordering};

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use token::TokenError;

use crate::queue::StoreError;

/// Everything a request can fail with.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// The room id is malformed or no such room exists.
    #[error("no such room")]
    UnknownRoom,
    /// No route has this path.
    #[error("no such resource")]
    NotFound,
    /// The path exists, the method does not.
    #[error("method not allowed on this resource")]
    MethodNotAllowed,
    /// A queue route that needs a ticket got none.
    #[error(
        "this request needs the room's ticket: the wr_ticket_{{room}} cookie or an Authorization: Bearer header"
    )]
    MissingTicket,
    /// The ticket is forged, malformed, expired, for another room or not a
    /// ticket. `clear_cookie` names the cookie it came from, which the
    /// response deletes so the browser can join afresh.
    #[error("the ticket is not valid for this room ({reason})")]
    InvalidTicket {
        /// Why it was refused.
        reason: TokenError,
        /// The cookie to delete, when the ticket came from one.
        clear_cookie: Option<String>,
    },
    /// A protected request got no entry token.
    #[error(
        "this request needs an entry token: the wr_entry_{{room}} cookie or the Entry-Token header"
    )]
    MissingEntry,
    /// The entry token is forged, malformed, expired, for another room or not
    /// an entry token.
    #[error("the entry token is not valid for this room ({0})")]
    InvalidEntry(TokenError),
    /// The entry token is genuine but its session has ended or was given up.
    #[error("the session of this entry token has ended")]
    SessionEnded,
    /// The body is not JSON at all.
    #[error("malformed JSON body: {0}")]
    MalformedBody(String),
    /// The body is JSON of the wrong shape or with wrong values.
    #[error("invalid request body: {0}")]
    InvalidBody(String),
    /// The body is longer than the route accepts.
    #[error("request body too large")]
    BodyTooLarge,
    /// The request's headers are larger than the server accepts.
    #[error("request headers too large")]
    HeadersTooLarge,
    /// The admin API was called without `Authorization: Bearer <admin key>`.
    #[error("the admin API needs Authorization: Bearer <admin key>")]
    MissingAdminKey,
    /// The admin key presented is wrong.
    #[error("the admin key is not valid")]
    InvalidAdminKey,
    /// The origin runs without `--admin-key`, so the admin API refuses every call.
    #[error("the admin API is off: this origin was started without --admin-key")]
    AdminDisabled,
    /// The client address made more joins than `--ip-join-rate` allows;
    /// retry after the given number of seconds.
    #[error("too many joins from this address, retry in {retry_after_secs} s")]
    RateLimited {
        /// Seconds until a join would be accepted (at least 1).
        retry_after_secs: u64,
    },
    /// The client address already holds as many places in the room as allowed.
    #[error("this address already holds as many places in this room as allowed")]
    TooManyPlaces,
    /// The store cannot be reached; retry later.
    #[error("the queue's store is unavailable, retry shortly")]
    StoreUnavailable,
    /// A bug; details are in the log.
    #[error("internal error")]
    Internal,
}

impl ApiError {
    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::UnknownRoom | ApiError::NotFound => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::MissingTicket
            | ApiError::InvalidTicket { .. }
            | ApiError::MissingEntry
            | ApiError::InvalidEntry(_)
            | ApiError::SessionEnded
            | ApiError::MissingAdminKey
            | ApiError::InvalidAdminKey
            | ApiError::AdminDisabled => StatusCode::UNAUTHORIZED,
            ApiError::MalformedBody(_) => StatusCode::BAD_REQUEST,
            ApiError::InvalidBody(_) => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::BodyTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::HeadersTooLarge => StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            ApiError::TooManyPlaces | ApiError::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
            ApiError::StoreUnavailable => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            ApiError::UnknownRoom => "unknown_room",
            ApiError::NotFound => "not_found",
            ApiError::MethodNotAllowed => "method_not_allowed",
            ApiError::MissingTicket => "missing_ticket",
            ApiError::InvalidTicket { .. } => "invalid_ticket",
            ApiError::MissingEntry => "missing_entry_token",
            ApiError::InvalidEntry(_) => "invalid_entry_token",
            ApiError::SessionEnded => "session_ended",
            ApiError::MalformedBody(_) => "malformed_json",
            ApiError::InvalidBody(_) => "invalid_body",
            ApiError::BodyTooLarge => "body_too_large",
            ApiError::HeadersTooLarge => "headers_too_large",
            ApiError::MissingAdminKey => "missing_admin_key",
            ApiError::InvalidAdminKey => "invalid_admin_key",
            ApiError::AdminDisabled => "admin_disabled",
            ApiError::RateLimited { .. } => "rate_limited",
            ApiError::TooManyPlaces => "too_many_places",
            ApiError::StoreUnavailable => "store_unavailable",
            ApiError::Internal => "internal",
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::UnknownRoom => ApiError::UnknownRoom,
            StoreError::Unavailable(detail) => {
                if outage_log_due() {
                    tracing::warn!(%detail, "store unavailable (more within {OUTAGE_LOG_SECS} s are logged at debug)");
                } else {
                    tracing::debug!(%detail, "store unavailable");
                }
                ApiError::StoreUnavailable
            }
            StoreError::Protocol(detail) => {
                tracing::error!(%detail, "unexpected store reply");
                ApiError::Internal
            }
        }
    }
}

/// How often a store outage is logged at warn level by the request path.
/// During an outage every request fails; one line per request would bury
/// the log (the promoter and `/readyz` report the outage too).
const OUTAGE_LOG_SECS: u64 = 10;

/// True at most once per `OUTAGE_LOG_SECS`, across all requests.
fn outage_log_due() -> bool {
    static LAST: AtomicU64 = AtomicU64::new(0);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let last = LAST.load(Ordering::Relaxed);
    now >= last.saturating_add(OUTAGE_LOG_SECS)
        && LAST
            .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({"error": {"code": self.code(), "message": self.to_string()}});
        let mut response = (self.status(), Json(body)).into_response();
        let headers = response.headers_mut();
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        match &self {
            ApiError::StoreUnavailable => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from_static("2"));
            }
            ApiError::TooManyPlaces => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from_static("60"));
            }
            ApiError::RateLimited { retry_after_secs } => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from(*retry_after_secs));
            }
            ApiError::MissingAdminKey | ApiError::InvalidAdminKey | ApiError::AdminDisabled => {
                headers.insert(
                    header::WWW_AUTHENTICATE,
                    HeaderValue::from_static("Bearer realm=\"admin\""),
                );
            }
            ApiError::InvalidTicket {
                clear_cookie: Some(name),
                ..
            } => {
                // The name is `wr_ticket_` plus a validated room id: always a valid header.
                if let Ok(v) = HeaderValue::from_str(&format!("{name}=; Path=/; Max-Age=0")) {
                    headers.append(header::SET_COOKIE, v);
                }
            }
            _ => {}
        }
        response
    }
}
