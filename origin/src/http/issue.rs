//! Signing a visitor's tokens: a ticket for a place in line, or an entry
//! token for a session, each with the cookie that carries it.

use axum::http::HeaderValue;
use room::RoomId;
use token::{Claims, Kind, entry_cookie, ticket_cookie};

use crate::cookies::set_cookie;
use crate::state::AppState;

/// A signed token and the cookie that carries it.
pub(crate) struct Issued {
    /// The token.
    pub(crate) token: String,
    /// Its `Set-Cookie` value.
    pub(crate) cookie: HeaderValue,
}

/// Signs a token of `kind` (a ticket, or an entry token: short-lived,
/// renewed while the session runs) for the place `seq`, issued `now` and
/// valid until `expires_at` (unix seconds), with the cookie that carries
/// it. `now` is the caller's: a request reads the clock once.
#[allow(clippy::too_many_arguments)] // each is one claim of the token
pub(crate) fn issue(
    state: &AppState,
    kind: Kind,
    room: &RoomId,
    seq: u64,
    visitor: u128,
    now: u64,
    expires_at: u64,
) -> Issued {
    let secure = state.secure_cookies;
    let token = state.keys.sign(&Claims {
        kind,
        room: room.as_str().to_owned(), // not Display's formatter
        visitor,
        seq,
        issued_at: now,
        expires_at,
        account: None,
    });
    let name = match kind {
        Kind::Ticket => ticket_cookie(room.as_str()),
        Kind::Entry => entry_cookie(room.as_str()),
    };
    let cookie = set_cookie(&name, &token, expires_at.saturating_sub(now), secure);
    Issued { token, cookie }
}
