//! The check every protected route makes (the booking API, later): a genuine
//! entry token for the room whose session is still running. The edge checks
//! the signature too, but the origin never trusts that it did.

use axum::http::HeaderMap;
use token::{Claims, Kind};

use super::extract::{presented_entry, verify};
use crate::error::ApiError;
use crate::room::RoomId;
use crate::state::AppState;

/// The claims of the request's entry token for `room`, if it is genuine, not
/// expired and its session has not ended (left, ended by booking, expired).
pub async fn require_entry(
    state: &AppState,
    room: &RoomId,
    headers: &HeaderMap,
    now: u64,
) -> Result<Claims, ApiError> {
    let token = presented_entry(headers, room).ok_or(ApiError::MissingEntry)?;
    let claims =
        verify(&state.keys, &token, Kind::Entry, room, now).map_err(ApiError::InvalidEntry)?;
    if !state.store.session_active(room, claims.seq).await? {
        return Err(ApiError::SessionEnded);
    }
    Ok(claims)
}
