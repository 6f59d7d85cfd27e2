//! The booking API visitors use once admitted, under `/api/{room}/`:
//! performances, holds, confirmation and bookings (the seat map's routes
//! are `seatmap`'s). Every route
//! asks for the room's entry token in its signature ([`ActiveEntry`] while
//! the session must still run, [`Entry`] where a genuine token is enough).
//! The booking rules themselves live in `crate::booking`; this module only
//! reads requests and shapes answers.

use std::time::Instant;

use axum::Json;
use axum::body::{Body, Bytes};
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, Path, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use tracing::instrument;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::entry::{ActiveEntry, Entry, verified_session};
use super::extract::required_json;
use super::responses::{
    BadBody, BookingConflict, BookingDown, ConfirmBody, CrossSite, EntryAuth, NotFound,
    SeatRefusal, SessionLimit,
};
use super::session_end::end_session;
use super::site::SameSite;
use crate::error::ApiError;
use crate::limits::sessions::SessionAction;
use crate::metric_names::{CONFIRMS, HOLDS};
use crate::state::AppState;
use booking::{Booking, BookingError, BookingStore, Hold, PerformanceSummary, Session};
use room::RoomId;

/// Largest visitor body: a hold's seat list or a payment token.
const MAX_BODY: usize = 4 * 1024;

/// The visitor booking routes.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(performances))
        .merge(super::seatmap::router())
        .routes(routes!(hold))
        .routes(routes!(release))
        .routes(routes!(confirm))
        .routes(routes!(booking, cancel))
        .layer(DefaultBodyLimit::max(MAX_BODY))
}

/// Times booking API requests (`/api/{room}/...`) for adaptive admission,
/// which slows the room's admissions while booking is slow. Only what the
/// origin controls is timed: requests of a session [`entry::renew`]
/// verified (a refusal is no sample), from after the body has arrived (a
/// client sending it slowly is not the booking system being slow) to the
/// handler's answer, and only answers that did the work (a success other
/// than 304, or a failure of the origin's own); `Latency` caps each
/// session's share.
///
/// [`entry::renew`]: super::entry::renew
pub async fn track_latency(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    let session = request
        .uri()
        .path()
        .starts_with("/api/")
        .then(|| verified_session(request.extensions()))
        .flatten();
    let Some((room, seq)) = session else {
        return next.run(request).await;
    };
    let (parts, body) = request.into_parts();
    let bytes = match axum::body::to_bytes(body, MAX_BODY).await {
        Ok(bytes) => bytes,
        Err(e) => {
            let too_large = e
                .into_inner()
                .downcast_ref::<http_body_util::LengthLimitError>()
                .is_some();
            return if too_large {
                ApiError::BodyTooLarge
            } else {
                ApiError::MalformedBody("the request body could not be read".into())
            }
            .into_response();
        }
    };
    let request = Request::from_parts(parts, Body::from(bytes));
    let started = Instant::now();
    let response = next.run(request).await;
    let status = response.status();
    // A 304 did no work worth timing; a session polling tags must not
    // outvote the requests that did.
    if status.is_success() || status.is_server_error() {
        state.latency.record(&room, seq, started.elapsed());
    }
    response
}

/// Counts a hold, release or confirm against its session's allowance
/// (429 `rate_limited` past it): one admission cannot queue write after
/// write, nor leave row after row.
fn booking_write(state: &AppState, room: &RoomId, seq: u64) -> Result<(), ApiError> {
    state
        .session_limits
        .check(SessionAction::BookingWrite, room, seq)
}

/// The booking store, or 404 when this origin sells nothing.
fn store(state: &AppState) -> Result<&BookingStore, ApiError> {
    state.booking.as_deref().ok_or(ApiError::NotFound)
}

/// `{room}` and `{hold_id}` in the path.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
struct HoldPath {
    /// The room's id.
    #[param(pattern = "^[a-z0-9][a-z0-9-]{0,63}$", example = "concert")]
    #[allow(dead_code)] // read by the `Entry` extractors
    room: String,
    /// The hold's id (a UUID).
    hold_id: String,
}

/// `{room}` and `{booking_id}` in the path.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
struct BookingPath {
    /// The room's id.
    #[param(pattern = "^[a-z0-9][a-z0-9-]{0,63}$", example = "concert")]
    #[allow(dead_code)] // read by the `Entry` extractors
    room: String,
    /// The booking's id (a UUID).
    booking_id: String,
}

/// The room's performances.
#[derive(Serialize, ToSchema)]
struct PerformanceList {
    performances: Vec<PerformanceSummary>,
}

/// What to hold.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct HoldRequest {
    /// Seat ids, `{section}-{row}-{number}`, at least one, each once.
    #[schema(min_items = 1, max_items = 100)]
    seats: Vec<String>,
}

/// How to pay.
#[derive(Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct ConfirmRequest {
    /// The payment provider's token; `tok_decline` is always declined.
    #[schema(min_length = 1, max_length = 255)]
    payment_token: String,
}

/// The performances of the room, with seat counts.
#[utoipa::path(
    get,
    path = "/api/{room}/performances",
    tag = "booking",
    params(super::api_doc::RoomPath),
    security(("entry_token" = [])),
    responses(
        (status = 200, description = "The room's performances", body = PerformanceList),
        EntryAuth, NotFound, BookingDown,
    ),
)]
#[instrument(skip_all, fields(room = %entry.0.room))]
async fn performances(
    State(state): State<AppState>,
    entry: ActiveEntry,
) -> Result<Json<PerformanceList>, ApiError> {
    let room = &entry.0.room;
    let performances = store(&state)?
        .list_performances(room.as_str(), state.clock.now_ms())
        .await?;
    Ok(Json(PerformanceList { performances }))
}

/// Hold seats, all or nothing.
///
/// The hold ends at the performance's `hold_seconds` or when the visitor's
/// session ends, whichever is first; its seats are then available again
/// without anyone acting. One live hold per visitor and room, whatever the
/// performance: another is 409 `hold_exists` until the first is released
/// or has ended. Where the performance has a `max_seats_per_account`, the
/// seats one account holds and has booked there, over all its sessions,
/// stay within it: a hold past it is 409 `account_limit`.
#[utoipa::path(
    post,
    path = "/api/{room}/performances/{performance}/holds",
    tag = "booking",
    params(super::api_doc::PerformancePath),
    request_body(content = HoldRequest),
    security(("entry_token" = [])),
    responses(
        (status = 201, description = "Held", body = Hold),
        BadBody, EntryAuth, CrossSite, NotFound, SeatRefusal, SessionLimit, BookingDown,
    ),
)]
#[instrument(skip_all, fields(room = %entry.0.room))]
async fn hold(
    State(state): State<AppState>,
    _: SameSite,
    entry: ActiveEntry,
    Path(path): Path<super::api_doc::PerformancePath>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let HoldRequest { seats } = required_json(body)?;
    let Entry { room, claims } = &entry.0;
    booking_write(&state, room, claims.seq)?;
    // The session's end, not the short-lived token's: a hold ends with the session.
    let session_ends_ms = entry.1;
    // The visitor's account (identified rooms: its entry token carries the
    // hash): the hold records it and counts it against `max_seats_per_account`.
    let account = claims.account.map(booking::AccountHash);
    let hold = store(&state)?
        .hold_in_session(
            room.as_str(),
            &path.performance,
            claims.visitor,
            account,
            &seats,
            Session {
                seq: Some(claims.seq),
                ends_ms: session_ends_ms,
            },
            state.clock.now_ms(),
        )
        .await?;
    // The session may have ended while the hold was being written (a leave,
    // a booking, a shared session): whoever ended it has ended the holds it
    // found, so one that committed after is ended here, not left to the
    // session's scheduled end.
    if let Ok(false) = state.queue.session_active(room, claims.seq).await {
        store(&state)?
            .end_session(room.as_str(), claims.visitor, state.clock.now_ms())
            .await?;
        return Err(ApiError::SessionEnded);
    }
    tracing::info!(hold = %hold.hold_id, seats = hold.seats.len(), "held");
    metrics::counter!(HOLDS, "room" => room.to_string()).increment(1);
    Ok((StatusCode::CREATED, Json(hold)).into_response())
}

/// Give a hold up: its seats are available at once.
#[utoipa::path(
    delete,
    path = "/api/{room}/holds/{hold_id}",
    tag = "booking",
    params(HoldPath),
    security(("entry_token" = [])),
    responses(
        (status = 204, description = "Released"),
        EntryAuth, CrossSite, NotFound, BookingConflict, SessionLimit, BookingDown,
    ),
)]
#[instrument(skip_all, fields(room = %entry.0.room))]
async fn release(
    State(state): State<AppState>,
    _: SameSite,
    entry: ActiveEntry,
    Path(path): Path<HoldPath>,
) -> Result<StatusCode, ApiError> {
    let Entry { room, claims } = &entry.0;
    booking_write(&state, room, claims.seq)?;
    store(&state)?
        .release_hold(
            room.as_str(),
            claims.visitor,
            &path.hold_id,
            state.clock.now_ms(),
        )
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Pay for a hold and book its seats.
///
/// Needs `Idempotency-Key`: the same key again (also concurrently) gets the
/// same answer and never a second booking or payment; the same key with
/// another hold or body is 409 `idempotency_key_reused`. A key's answer is
/// kept a day, then the key is new again. A declined card leaves the hold
/// as it was, up to the hold's 5th decline, which ends it. A confirmed
/// booking ends the visitor's session in the room, so the next waiter gets in.
#[utoipa::path(
    post,
    path = "/api/{room}/holds/{hold_id}/confirm",
    tag = "booking",
    params(HoldPath, ("Idempotency-Key" = String, Header, description = "1 to 255 visible ASCII characters",
        min_length = 1, max_length = 255, pattern = r"^[\x21-\x7e]+$")),
    request_body(content = ConfirmRequest),
    security(("entry_token" = [])),
    responses(
        (status = 201, description = "Booked", body = Booking),
        ConfirmBody, EntryAuth, CrossSite, NotFound, BookingConflict, SessionLimit, BookingDown,
    ),
)]
#[instrument(skip_all, fields(room = %entry.room))]
async fn confirm(
    State(state): State<AppState>,
    _: SameSite,
    entry: Entry,
    Path(path): Path<HoldPath>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let key = idempotency_key(&headers)?;
    let request: ConfirmRequest = required_json(body)?;
    let store = store(&state)?;
    let Entry { room, claims } = &entry;
    booking_write(&state, room, claims.seq)?;
    let (hold_id, token) = (&path.hold_id, &request.payment_token);
    // A live session confirms (a repeated key gets its first answer there);
    // once the session ended, only a repeat of a key already used is
    // answered, as the first time: the booking itself ended the session.
    let result = if state.queue.session_active(room, claims.seq).await? {
        let now = state.clock.now_ms();
        let result = store
            .confirm(room.as_str(), claims.visitor, hold_id, &key, token, now)
            .await;
        let outcome = match &result {
            Ok(_) => "booked",
            Err(BookingError::PaymentDeclined) => "declined",
            Err(_) => "refused",
        };
        metrics::counter!(CONFIRMS, "room" => room.to_string(), "outcome" => outcome).increment(1);
        result
    } else {
        store
            .replay(room.as_str(), claims.visitor, hold_id, &key, token)
            .await?
            .ok_or(ApiError::SessionEnded)?
    };
    let booking = result?;
    // The sale is made: the slot goes to the next waiter now (a repeat
    // finds the session gone already, which is fine).
    // In a task of its own: a request cut short here (its deadline, the
    // client hanging up) must not leave the session running after its
    // booking, free to hold and buy again.
    let ending = {
        let (state, room) = (state.clone(), room.clone());
        let (seq, visitor) = (claims.seq, claims.visitor);
        tokio::spawn(async move { end_session(&state, &room, seq, visitor).await })
    };
    ending.await.map_err(|_| ApiError::Internal)??;
    let mut response = (StatusCode::CREATED, Json(booking)).into_response();
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}

/// The `Idempotency-Key` header: 1 to 255 visible ASCII characters.
fn idempotency_key(headers: &HeaderMap) -> Result<String, ApiError> {
    let value = headers
        .get("idempotency-key")
        .ok_or(ApiError::IdempotencyKeyRequired)?;
    let key = value
        .to_str()
        .map_err(|_| ApiError::InvalidIdempotencyKey)?;
    booking::validate_idempotency_key(key).map_err(|_| ApiError::InvalidIdempotencyKey)?;
    Ok(key.to_owned())
}

/// One of the visitor's bookings.
#[utoipa::path(
    get,
    path = "/api/{room}/bookings/{booking_id}",
    tag = "booking",
    params(BookingPath),
    security(("entry_token" = [])),
    responses(
        (status = 200, description = "The booking", body = Booking),
        EntryAuth, NotFound, BookingDown,
    ),
)]
#[instrument(skip_all, fields(room = %entry.room))]
async fn booking(
    State(state): State<AppState>,
    entry: Entry,
    Path(path): Path<BookingPath>,
) -> Result<Json<Booking>, ApiError> {
    let booking = store(&state)?
        .get_booking(entry.room.as_str(), entry.claims.visitor, &path.booking_id)
        .await?;
    Ok(Json(booking))
}

/// Cancel one of the visitor's bookings: its seats are on sale again.
#[utoipa::path(
    delete,
    path = "/api/{room}/bookings/{booking_id}",
    tag = "booking",
    params(BookingPath),
    security(("entry_token" = [])),
    responses(
        (status = 204, description = "Cancelled"),
        EntryAuth, CrossSite, NotFound, BookingDown,
    ),
)]
#[instrument(skip_all, fields(room = %entry.room))]
async fn cancel(
    State(state): State<AppState>,
    _: SameSite,
    entry: Entry,
    Path(path): Path<BookingPath>,
) -> Result<StatusCode, ApiError> {
    store(&state)?
        .cancel_booking(
            entry.room.as_str(),
            entry.claims.visitor,
            &path.booking_id,
            state.clock.now_ms(),
        )
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
