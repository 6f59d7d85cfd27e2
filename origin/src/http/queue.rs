//! The queue API of the contract: join, status and leave, under
//! `/queue/{room}/`. Tickets come from the `wr_ticket_{room}` cookie
//! (browsers: every tab of one browser shares it, and so one place) or
//! `Authorization: Bearer` (apps).

use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use token::{Claims, Kind};

use super::extract::{
    Room, clear_cookie, entry_cookie, insecure_loopback, optional_json, presented_ticket,
    set_cookie, ticket_cookie, verify,
};
use crate::error::ApiError;
use crate::queue::{PREQUEUE_SPAN, Snapshot, Standing, pacing};
use crate::room::RoomId;
use crate::state::AppState;

/// Largest body a queue route accepts (they take none, or `{}`).
const MAX_BODY: usize = 1024;
/// How long a ticket stays valid after the later of its issue and the
/// room's opening; a visitor who keeps polling gets a fresh one on rejoin.
const TICKET_LIFETIME_SECS: u64 = 24 * 3600;

/// The queue routes.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/queue/{room}/join", post(join))
        .route("/queue/{room}/status", get(status))
        .route("/queue/{room}/leave", post(leave))
        .layer(DefaultBodyLimit::max(MAX_BODY))
}

/// The join body: nothing yet, but unknown fields are refused so a client
/// that thinks it sends options hears that they are ignored.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct JoinBody {}

/// The contract's status body.
#[derive(Serialize)]
struct StatusBody {
    state: &'static str,
    position: Option<u64>,
    waiting: u64,
    eta_seconds: Option<u64>,
    poll_after_ms: u64,
    room: RoomBody,
    #[serde(skip_serializing_if = "Option::is_none")]
    ticket: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    entry_token: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    entry_expires_at: Option<String>,
}

#[derive(Serialize)]
struct RoomBody {
    id: String,
    state: &'static str,
    opens_at: Option<String>,
}

fn unix_now() -> u64 {
    u64::try_from(OffsetDateTime::now_utc().unix_timestamp()).unwrap_or(0)
}

fn rfc3339_ms(ms: u64) -> Option<String> {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .ok()
        .and_then(|t| t.format(&Rfc3339).ok())
}

/// Verifies the request's ticket, if it carries one.
async fn ticket_claims(
    state: &AppState,
    headers: &HeaderMap,
    room: &RoomId,
    now: u64,
) -> Result<Option<Claims>, ApiError> {
    let checked = presented_ticket(headers, room).and_then(|presented| {
        let Some(presented) = presented else {
            return Ok(None);
        };
        verify(&state.keys, &presented.token, Kind::Ticket, room, now)
            .map(Some)
            .map_err(|reason| ApiError::InvalidTicket {
                reason,
                clear_cookie: presented.cookie,
            })
    });
    refine_for_unknown_room(state, room, checked).await
}

/// The ticket that must be there (status, leave).
async fn required_claims(
    state: &AppState,
    headers: &HeaderMap,
    room: &RoomId,
    now: u64,
) -> Result<Claims, ApiError> {
    let claims = ticket_claims(state, headers, room, now).await?;
    refine_for_unknown_room(state, room, claims.ok_or(ApiError::MissingTicket)).await
}

/// A room that does not exist is 404 whatever the ticket says. Asked of the
/// store only when the ticket failed, so good requests keep one round trip.
async fn refine_for_unknown_room<T>(
    state: &AppState,
    room: &RoomId,
    result: Result<T, ApiError>,
) -> Result<T, ApiError> {
    if result.is_err() {
        state.store.figures(room).await?;
    }
    result
}

/// Builds the response for a snapshot: the status body, plus a fresh ticket
/// (join) or entry token (admitted), each also set as its cookie.
fn respond(
    state: &AppState,
    room: &RoomId,
    headers: &HeaderMap,
    snap: Snapshot,
    visitor: u128,
    issue_ticket: bool,
) -> Response {
    let now = unix_now();
    let secure = !insecure_loopback(headers);
    let mut cookies: Vec<HeaderValue> = Vec::new();
    let line = &snap.line;

    let ticket = match (issue_ticket, snap.seq) {
        (true, Some(seq)) => {
            let start = line.opens_at_ms.map_or(now, |at| now.max(at / 1000));
            let expires_at = start + TICKET_LIFETIME_SECS;
            let token = state.keys.sign(&Claims {
                kind: Kind::Ticket,
                room: room.to_string(),
                visitor,
                seq,
                issued_at: now,
                expires_at,
            });
            cookies.push(set_cookie(
                ticket_cookie(room),
                token.clone(),
                expires_at - now,
                secure,
            ));
            Some(token)
        }
        _ => None,
    };

    let (mut entry_token, mut entry_expires_at) = (None, None);
    if let (Standing::Admitted { until_ms }, Some(seq)) = (snap.standing, snap.seq) {
        let expires_at = until_ms / 1000;
        let token = state.keys.sign(&Claims {
            kind: Kind::Entry,
            room: room.to_string(),
            visitor,
            seq,
            issued_at: now,
            expires_at,
        });
        cookies.push(set_cookie(
            entry_cookie(room),
            token.clone(),
            expires_at.saturating_sub(now),
            secure,
        ));
        entry_token = Some(token);
        entry_expires_at = rfc3339_ms(expires_at * 1000);
    }

    let (state_name, position) = match snap.standing {
        Standing::Waiting { position } => ("waiting", position),
        Standing::Admitted { .. } => ("admitted", None),
        Standing::Gone => ("expired", None),
        Standing::Closed => ("closed", None),
        Standing::SoldOut => ("sold_out", None),
        // Refused before a body is built (see join).
        Standing::LimitReached => ("sold_out", None),
    };
    let body = StatusBody {
        state: state_name,
        position,
        waiting: line.waiting,
        eta_seconds: pacing::eta_seconds(snap.standing, line),
        poll_after_ms: pacing::poll_after_ms(snap.standing, line),
        room: RoomBody {
            id: room.to_string(),
            state: line.state.as_str(),
            opens_at: line.opens_at_ms.and_then(rfc3339_ms),
        },
        ticket,
        entry_token,
        entry_expires_at,
    };
    let mut response = Json(body).into_response();
    let h = response.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    for cookie in cookies {
        h.append(header::SET_COOKIE, cookie);
    }
    response
}

/// `POST /queue/{room}/join`: a place in line, the existing place of a valid
/// ticket, or admission at once when nobody waits and there is room.
async fn join(
    State(state): State<AppState>,
    Room(room): Room,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let JoinBody {} = optional_json(body)?;
    let claims = ticket_claims(&state, &headers, &room, unix_now()).await?;
    let draw = rand::random::<u64>() % PREQUEUE_SPAN;
    let snap = state
        .store
        .join(&room, claims.as_ref().map(|c| c.seq), draw, None)
        .await?;
    if snap.standing == Standing::LimitReached {
        return Err(ApiError::TooManyPlaces);
    }
    // The same place keeps the same visitor; a new place gets a new visitor id.
    let visitor = match &claims {
        Some(c) if Some(c.seq) == snap.seq => c.visitor,
        _ => rand::random(),
    };
    Ok(respond(&state, &room, &headers, snap, visitor, true))
}

/// `GET /queue/{room}/status`: where the ticket's holder stands.
async fn status(
    State(state): State<AppState>,
    Room(room): Room,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let claims = required_claims(&state, &headers, &room, unix_now()).await?;
    let snap = state.store.status(&room, claims.seq).await?;
    Ok(respond(
        &state,
        &room,
        &headers,
        snap,
        claims.visitor,
        false,
    ))
}

/// `POST /queue/{room}/leave`: gives up the place or the session at once and
/// deletes the room's cookies.
async fn leave(
    State(state): State<AppState>,
    Room(room): Room,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let JoinBody {} = optional_json(body)?;
    let claims = required_claims(&state, &headers, &room, unix_now()).await?;
    state.store.leave(&room, claims.seq).await?;
    let mut response = StatusCode::NO_CONTENT.into_response();
    let h = response.headers_mut();
    h.append(header::SET_COOKIE, clear_cookie(ticket_cookie(&room)));
    h.append(header::SET_COOKIE, clear_cookie(entry_cookie(&room)));
    Ok(response)
}
