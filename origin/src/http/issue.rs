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

/// Whom a token names: the visitor, and in a room keyed by accounts the
/// account's hash, which rides from the ticket to the entry token and on to
/// booking.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Holder {
    /// The visitor id (random, chosen by the origin for each new place).
    pub(crate) visitor: u128,
    /// The account's keyed hash, when the join named one.
    pub(crate) account: Option<[u8; 8]>,
}

impl Holder {
    /// Whom a verified token names.
    pub(crate) fn of(claims: &Claims) -> Holder {
        Holder {
            visitor: claims.visitor,
            account: claims.account,
        }
    }
}

/// Signs a token of `kind` (a ticket, or an entry token: short-lived,
/// renewed while the session runs) for the place `seq`, issued `now` and
/// valid until `expires_at` (unix seconds), with the cookie that carries
/// it. `now` is the caller's: a request reads the clock once.
pub(crate) fn issue(
    state: &AppState,
    kind: Kind,
    room: &RoomId,
    seq: u64,
    holder: Holder,
    now: u64,
    expires_at: u64,
) -> Issued {
    let secure = state.secure_cookies;
    let token = state.keys.sign(&Claims {
        kind,
        room: room.as_str().to_owned(), // not Display's formatter
        visitor: holder.visitor,
        seq,
        issued_at: now,
        expires_at,
        account: holder.account,
    });
    let name = match kind {
        Kind::Ticket => ticket_cookie(room.as_str()),
        Kind::Entry => entry_cookie(room.as_str()),
    };
    let cookie = set_cookie(&name, &token, expires_at.saturating_sub(now), secure);
    Issued { token, cookie }
}
