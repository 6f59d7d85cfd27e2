//! The check every protected route makes: an entry token for the room in
//! the path, verified here (signature, room, expiry) even though the edge
//! checked it too, since the origin never trusts that it did. Handlers ask
//! for it in their signature: [`ActiveEntry`] when the session must still
//! run (every booking write), [`Entry`] when a genuine token is enough
//! (reading or cancelling one's own booking after the session ended).
//!
//! [`renew`] wraps the protected routes (`/api/{room}/`, `/book/{room}/`):
//! it ends a session used from too many addresses before the handler runs,
//! and after a successful answer sets the entry cookie again with a fresh
//! short-lived token, for as long as the session runs.

use std::net::SocketAddr;

use axum::extract::{ConnectInfo, FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{Extensions, HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use token::{Claims, Kind};

use super::extract::{Room, presented_entry, verify};
use super::issue::{Holder, issue};
use crate::error::ApiError;
use crate::sessions::{Watch, entry_expiry};
use crate::state::AppState;
use queue::{Snapshot, Standing};
use room::RoomId;

/// A genuine, unexpired entry token for the path's room; its session may
/// have ended.
pub struct Entry {
    /// The room in the path (the token's room).
    pub room: RoomId,
    /// What the token says: the visitor and its sequence number.
    pub claims: Claims,
}

/// An entry token for the path's room whose session still runs (not left,
/// not ended by a booking, not expired), and when that session ends (unix
/// ms): later than the short-lived token's own expiry, which is renewed.
pub struct ActiveEntry(pub Entry, pub u64);

/// What [`renew`] already checked (the token, and that its session runs
/// until `until_ms`), handed to [`ActiveEntry`] so a protected request asks
/// the store once, not twice.
#[derive(Clone)]
struct Checked {
    room: RoomId,
    claims: Claims,
    until_ms: u64,
}

impl FromRequestParts<AppState> for Entry {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Entry, ApiError> {
        let Room(room) = Room::from_request_parts(parts, state).await?;
        let claims = entry_claims(state, &room, &parts.headers, state.clock.now_secs())?;
        Ok(Entry { room, claims })
    }
}

impl FromRequestParts<AppState> for ActiveEntry {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<ActiveEntry, ApiError> {
        let Room(room) = Room::from_request_parts(parts, state).await?;
        if let Some(checked) = parts.extensions.get::<Checked>()
            && checked.room == room
        {
            let entry = Entry {
                room,
                claims: checked.claims.clone(),
            };
            return Ok(ActiveEntry(entry, checked.until_ms));
        }
        let claims = entry_claims(state, &room, &parts.headers, state.clock.now_secs())?;
        match state.queue.status(&room, claims.seq).await?.standing {
            Standing::Admitted { until_ms } => Ok(ActiveEntry(Entry { room, claims }, until_ms)),
            _ => Err(ApiError::SessionEnded),
        }
    }
}

/// The session [`renew`] verified for this request, if any: its room and
/// sequence number (a running session of a room that exists).
pub fn verified_session(extensions: &Extensions) -> Option<(RoomId, u64)> {
    extensions
        .get::<Checked>()
        .map(|checked| (checked.room.clone(), checked.claims.seq))
}

/// The claims of the request's entry token for `room`, if it is genuine and
/// not expired at `now` (unix seconds).
pub fn entry_claims(
    state: &AppState,
    room: &RoomId,
    headers: &HeaderMap,
    now: u64,
) -> Result<Claims, ApiError> {
    let token = presented_entry(headers, room).ok_or(ApiError::MissingEntry)?;
    verify(&state.keys, &token, Kind::Entry, room, now).map_err(ApiError::InvalidEntry)
}

/// The claims of the request's entry token for `room`, if it is genuine,
/// not expired and its session has not ended (left, ended by booking,
/// expired).
pub async fn require_entry(
    state: &AppState,
    room: &RoomId,
    headers: &HeaderMap,
    now: u64,
) -> Result<Claims, ApiError> {
    let claims = entry_claims(state, room, headers, now)?;
    if !state.queue.session_active(room, claims.seq).await? {
        return Err(ApiError::SessionEnded);
    }
    Ok(claims)
}

/// The room of a protected path: `/api/{room}/...` or `/book/{room}/...`,
/// percent-decoded as the handlers' `Room` reads it (a room spelled
/// `%63oncert` is `concert`, and its addresses count all the same).
fn protected_room(path: &str) -> Option<RoomId> {
    let rest = path
        .strip_prefix("/api/")
        .or_else(|| path.strip_prefix("/book/"))?;
    let segment = rest.split('/').next()?;
    let decoded = percent_encoding::percent_decode_str(segment)
        .decode_utf8()
        .ok()?;
    RoomId::parse(&decoded)
}

/// Middleware of the protected routes: watches the session's addresses and
/// renews its entry token on every successful answer (see the module doc).
pub async fn renew(State(state): State<AppState>, mut request: Request, next: Next) -> Response {
    let Some(room) = protected_room(request.uri().path()) else {
        return next.run(request).await;
    };
    let now = state.clock.now_secs();
    let Ok(claims) = entry_claims(&state, &room, request.headers(), now) else {
        // No genuine token: the handler refuses (or, for the page, shows
        // the way back to the line); nothing to renew.
        return next.run(request).await;
    };
    let until_ms = match state.queue.status(&room, claims.seq).await {
        Ok(Snapshot {
            standing: Standing::Admitted { until_ms },
            ..
        }) => until_ms,
        _ => return next.run(request).await,
    };
    let rules = state.sessions.rules_for(&room, state.queue.as_ref()).await;
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0);
    let client = state.clients.client_of(request.headers(), peer);
    let now_ms = state.clock.now_ms();
    if state
        .sessions
        .watch(&room, claims.seq, until_ms, client, now_ms)
        == Watch::Shared
    {
        if let Err(e) =
            super::session_end::end_shared(&state, &room, claims.seq, claims.visitor).await
        {
            return e.into_response();
        }
        return ApiError::SessionEnded.into_response();
    }
    let writes = !matches!(*request.method(), Method::GET | Method::HEAD);
    request.extensions_mut().insert(Checked {
        room: room.clone(),
        claims: claims.clone(),
        until_ms,
    });
    let mut response = next.run(request).await;
    let answered = response.status().is_success() || response.status() == StatusCode::NOT_MODIFIED;
    // A write may have ended the session (a booking does): renew only a
    // session that still runs.
    let running = !writes
        || state
            .queue
            .session_active(&room, claims.seq)
            .await
            .unwrap_or(false);
    if answered && running {
        let now = state.clock.now_secs();
        let expires_at = entry_expiry(now, until_ms, rules);
        let entry = issue(
            &state,
            Kind::Entry,
            &room,
            claims.seq,
            Holder::of(&claims),
            now,
            expires_at,
        );
        response
            .headers_mut()
            .append(header::SET_COOKIE, entry.cookie);
    }
    response
}
