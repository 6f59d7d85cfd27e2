//! The one error type of the HTTP API, and its mapping to the contract's
//! shape: `{"error": {"code": "snake_case", "message": "human text"}}` with
//! the matching status. Internal details are logged, never sent.

use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use token::TokenError;

use crate::challenge::{Ask, Refusal};
use booking::BookingError;
use queue::StoreError;

/// Everything a request can fail with. Status, code and message of each
/// variant live in one table, [`ApiError::parts`].
#[derive(Debug)]
pub enum ApiError {
    /// The room id is malformed or no such room exists.
    UnknownRoom,
    /// The room never had an opening, so it has no pre-queue draw.
    NoDraw,
    /// No route has this path.
    NotFound,
    /// The path exists, the method does not.
    MethodNotAllowed,
    /// A queue route that needs a ticket got none.
    MissingTicket,
    /// The ticket is forged, malformed, expired, for another room or not a
    /// ticket. `clear_cookie` names the cookie it came from, which the
    /// response deletes so the browser can join afresh.
    InvalidTicket {
        /// Why it was refused.
        reason: TokenError,
        /// The cookie to delete, when the ticket came from one.
        clear_cookie: Option<String>,
    },
    /// A protected request got no entry token.
    MissingEntry,
    /// The entry token is forged, malformed, expired, for another room or not
    /// an entry token.
    InvalidEntry(TokenError),
    /// A join to a room whose `identity` is `required` carried no identity
    /// token.
    IdentityRequired,
    /// The identity token is forged, malformed, expired, not yet valid, for
    /// another room, or signed with an unknown key or algorithm.
    InvalidIdentity(String),
    /// The room asks a join challenge and the join brought no answer: 428
    /// with what to solve.
    ChallengeRequired(Box<Ask>),
    /// The join's challenge answer is wrong: forged, expired or other-room
    /// seed, too few bits, or a refused Turnstile token.
    ChallengeFailed(&'static str),
    /// The challenge cannot be checked now (Turnstile unreachable, the room
    /// failing closed).
    ChallengeUnavailable,
    /// The entry token is genuine but its session has ended or was given up.
    SessionEnded,
    /// The body is not JSON at all.
    MalformedBody(String),
    /// The body is JSON of the wrong shape or with wrong values.
    InvalidBody(String),
    /// The body is longer than the route accepts.
    BodyTooLarge,
    /// The request's headers are larger than the server accepts.
    HeadersTooLarge,
    /// The admin API was called without `Authorization: Bearer <admin key>`.
    MissingAdminKey,
    /// The admin key presented is wrong.
    InvalidAdminKey,
    /// Too many failed admin calls from this address: refused whatever the
    /// key, until `retry_after_secs` have passed.
    AdminThrottled {
        /// Seconds until a key is compared again.
        retry_after_secs: u64,
    },
    /// The origin runs without `--admin-key`, so the admin API refuses every call.
    AdminDisabled,
    /// The client address made more joins than `--ip-join-rate` allows;
    /// retry after the given number of seconds.
    RateLimited {
        /// Seconds until a join would be accepted (at least 1).
        retry_after_secs: u64,
    },
    /// The session made more booking writes than its allowance (see
    /// `limits::sessions`); retry after the given number of seconds.
    SessionRateLimited {
        /// Seconds until a write would be accepted (at least 1).
        retry_after_secs: u64,
    },
    /// The session loaded the seat map more often than allowed; retry after
    /// the given number of seconds.
    SeatMapRateLimited {
        /// Seconds until a load would be accepted (at least 1).
        retry_after_secs: u64,
    },
    /// The client address already holds as many places in the room as allowed.
    TooManyPlaces,
    /// The store cannot be reached; retry later.
    StoreUnavailable,
    /// A state-changing request from another site's page.
    CrossSite,
    /// A confirm without `Idempotency-Key`.
    IdempotencyKeyRequired,
    /// An `Idempotency-Key` that is not 1 to 255 visible ASCII characters.
    InvalidIdempotencyKey,
    /// A query parameter that is not what the route takes.
    InvalidQuery(String),
    /// The booking store's answer (its own codes; statuses below).
    Booking(BookingError),
    /// A bug; details are in the log.
    Internal,
}

impl ApiError {
    /// The one table: HTTP status, machine-readable code and human message.
    /// A new error is one variant and one line here.
    #[rustfmt::skip] // a table reads best one row per line
    pub fn parts(&self) -> (StatusCode, &'static str, Cow<'static, str>) {
        use StatusCode as S;
        match self {
            ApiError::UnknownRoom => (S::NOT_FOUND, "unknown_room", "no such room".into()),
            ApiError::NoDraw => (S::NOT_FOUND, "no_draw", "this room never had an opening, so it has no pre-queue draw".into()),
            ApiError::NotFound => (S::NOT_FOUND, "not_found", "no such resource".into()),
            ApiError::MethodNotAllowed => (S::METHOD_NOT_ALLOWED, "method_not_allowed", "method not allowed on this resource".into()),
            ApiError::MissingTicket => (S::UNAUTHORIZED, "missing_ticket", "this request needs the room's ticket: the wr_ticket_{room} cookie or an Authorization: Bearer header".into()),
            ApiError::InvalidTicket { reason, .. } => (S::UNAUTHORIZED, "invalid_ticket", format!("the ticket is not valid for this room ({reason})").into()),
            ApiError::MissingEntry => (S::UNAUTHORIZED, "invalid_entry", "this request needs an entry token: the wr_entry_{room} cookie or the Entry-Token header".into()),
            ApiError::InvalidEntry(reason) => (S::UNAUTHORIZED, "invalid_entry", format!("the entry token is not valid for this room ({reason})").into()),
            ApiError::IdentityRequired => (S::UNAUTHORIZED, "identity_required", "this room lets in only the site's own accounts: sign in on the site, then join (the wr_identity cookie or the Waiting-Room-Identity header)".into()),
            ApiError::InvalidIdentity(reason) => (S::UNAUTHORIZED, "invalid_identity", format!("the identity token is not valid for this room ({reason})").into()),
            ApiError::ChallengeRequired(_) => (S::PRECONDITION_REQUIRED, "challenge_required", "this room asks each join to solve a challenge first: solve `challenge` and join again with the Waiting-Room-Challenge header".into()),
            ApiError::ChallengeFailed(reason) => (S::FORBIDDEN, "challenge_failed", format!("the challenge's answer is not valid ({reason}): join again without it for a new challenge").into()),
            ApiError::ChallengeUnavailable => (S::SERVICE_UNAVAILABLE, "challenge_unavailable", "the room's challenge cannot be checked right now, retry shortly".into()),
            ApiError::SessionEnded => (S::UNAUTHORIZED, "invalid_entry", "the session of this entry token has ended: join the line again".into()),
            ApiError::MalformedBody(detail) => (S::BAD_REQUEST, "malformed_json", format!("malformed JSON body: {detail}").into()),
            ApiError::InvalidBody(detail) => (S::UNPROCESSABLE_ENTITY, "invalid_body", format!("invalid request body: {detail}").into()),
            ApiError::BodyTooLarge => (S::PAYLOAD_TOO_LARGE, "body_too_large", "request body too large".into()),
            ApiError::HeadersTooLarge => (S::REQUEST_HEADER_FIELDS_TOO_LARGE, "headers_too_large", "request headers too large".into()),
            ApiError::MissingAdminKey => (S::UNAUTHORIZED, "missing_admin_key", "the admin API needs Authorization: Bearer <admin key>".into()),
            ApiError::InvalidAdminKey => (S::UNAUTHORIZED, "invalid_admin_key", "the admin key is not valid".into()),
            ApiError::AdminThrottled { retry_after_secs } => (S::UNAUTHORIZED, "invalid_admin_key", format!("too many failed admin calls from this address: no key is checked for {retry_after_secs} s").into()),
            ApiError::AdminDisabled => (S::UNAUTHORIZED, "admin_disabled", "the admin API is off: this origin was started without --admin-key".into()),
            ApiError::RateLimited { retry_after_secs } => (S::TOO_MANY_REQUESTS, "rate_limited", format!("too many requests from this address, retry in {retry_after_secs} s").into()),
            ApiError::SessionRateLimited { retry_after_secs } => (S::TOO_MANY_REQUESTS, "rate_limited", format!("too many holds, releases or confirms in this session, retry in {retry_after_secs} s").into()),
            ApiError::SeatMapRateLimited { retry_after_secs } => (S::TOO_MANY_REQUESTS, "rate_limited", format!("too many seat map loads in this session, retry in {retry_after_secs} s").into()),
            ApiError::TooManyPlaces => (S::TOO_MANY_REQUESTS, "too_many_places", "this address already holds as many places in this room as allowed".into()),
            ApiError::StoreUnavailable => (S::SERVICE_UNAVAILABLE, "store_unavailable", "the queue's store is unavailable, retry shortly".into()),
            ApiError::CrossSite => (S::FORBIDDEN, "cross_site", "a state-changing request from another site's page is refused".into()),
            ApiError::IdempotencyKeyRequired => (S::BAD_REQUEST, "idempotency_key_required", "a confirm needs an Idempotency-Key header".into()),
            ApiError::InvalidIdempotencyKey => (S::BAD_REQUEST, "invalid_idempotency_key", "Idempotency-Key must be 1 to 255 visible ASCII characters".into()),
            ApiError::InvalidQuery(detail) => (S::BAD_REQUEST, "invalid_query", format!("invalid query: {detail}").into()),
            ApiError::Booking(e) => (booking_status(e), e.code(), e.to_string().into()),
            ApiError::Internal => (S::INTERNAL_SERVER_ERROR, "internal", "internal error".into()),
        }
    }

    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        self.parts().0
    }

    /// The machine-readable code.
    pub fn code(&self) -> &'static str {
        self.parts().1
    }
}

/// The status of each booking answer.
fn booking_status(e: &BookingError) -> StatusCode {
    use StatusCode as S;
    match e {
        BookingError::UnknownPerformance | BookingError::NotFound => S::NOT_FOUND,
        BookingError::UnknownSeat(_)
        | BookingError::TooManySeats { .. }
        | BookingError::NoSeats
        | BookingError::Invalid(_) => S::UNPROCESSABLE_ENTITY,
        BookingError::SeatUnavailable { .. }
        | BookingError::HoldExists
        | BookingError::AccountLimit { .. }
        | BookingError::HoldExpired
        | BookingError::PaymentInProgress
        | BookingError::IdempotencyKeyReused
        | BookingError::SeatsInUse { .. } => S::CONFLICT,
        BookingError::PaymentDeclined | BookingError::PaymentFailed => S::PAYMENT_REQUIRED,
        BookingError::SessionEnded => S::UNAUTHORIZED,
        BookingError::Busy | BookingError::Unavailable => S::SERVICE_UNAVAILABLE,
        BookingError::Internal => S::INTERNAL_SERVER_ERROR,
    }
}

impl From<Refusal> for ApiError {
    fn from(r: Refusal) -> Self {
        match r {
            Refusal::Required(ask) => ApiError::ChallengeRequired(ask),
            Refusal::Failed(reason) => ApiError::ChallengeFailed(reason),
            Refusal::Unavailable => ApiError::ChallengeUnavailable,
        }
    }
}

impl From<BookingError> for ApiError {
    fn from(e: BookingError) -> Self {
        ApiError::Booking(e)
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.parts().2)
    }
}

impl std::error::Error for ApiError {}

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
        let (status, code, message) = self.parts();
        let mut body = json!({"error": {"code": code, "message": message}});
        // The contract lists the seats in the way beside the error.
        if let ApiError::Booking(
            BookingError::SeatUnavailable { seats } | BookingError::SeatsInUse { seats },
        ) = &self
            && let Some(fields) = body.as_object_mut()
        {
            fields.insert("seats".to_owned(), json!(seats));
        }
        // And what to solve beside a 428.
        if let ApiError::ChallengeRequired(ask) = &self
            && let Some(fields) = body.as_object_mut()
        {
            fields.insert("challenge".to_owned(), json!(ask));
        }
        let mut response = (status, Json(body)).into_response();
        let headers = response.headers_mut();
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        match &self {
            ApiError::StoreUnavailable
            | ApiError::ChallengeUnavailable
            | ApiError::Booking(BookingError::Busy | BookingError::Unavailable) => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from_static("2"));
            }
            ApiError::TooManyPlaces => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from_static("60"));
            }
            ApiError::RateLimited { retry_after_secs }
            | ApiError::SessionRateLimited { retry_after_secs }
            | ApiError::SeatMapRateLimited { retry_after_secs } => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from(*retry_after_secs));
            }
            ApiError::AdminThrottled { retry_after_secs } => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from(*retry_after_secs));
                headers.insert(
                    header::WWW_AUTHENTICATE,
                    HeaderValue::from_static("Bearer realm=\"admin\""),
                );
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
                // The name is `wr_ticket_` plus a validated room id.
                headers.append(header::SET_COOKIE, crate::cookies::clear_cookie(name));
            }
            _ => {}
        }
        response
    }
}
