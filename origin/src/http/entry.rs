//! The check every protected route makes: an entry token for the room in
//! the path, verified here (signature, room, expiry) even though the edge
//! checked it too, since the origin never trusts that it did. Handlers ask
//! for it in their signature: [`ActiveEntry`] when the session must still
//! run (every booking write), [`Entry`] when a genuine token is enough
//! (reading or cancelling one's own booking after the session ended).

use axum::extract::FromRequestParts;
use axum::http::HeaderMap;
use axum::http::request::Parts;
use token::{Claims, Kind};

use super::extract::{Room, presented_entry, verify};
use crate::error::ApiError;
use crate::room::RoomId;
use crate::state::AppState;

/// A genuine, unexpired entry token for the path's room; its session may
/// have ended.
pub struct Entry {
    /// The room in the path (the token's room).
    pub room: RoomId,
    /// What the token says: the visitor and its sequence number.
    pub claims: Claims,
}

/// An entry token for the path's room whose session still runs (not left,
/// not ended by a booking, not expired).
pub struct ActiveEntry(pub Entry);

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
        let claims = require_entry(state, &room, &parts.headers, state.clock.now_secs()).await?;
        Ok(ActiveEntry(Entry { room, claims }))
    }
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
