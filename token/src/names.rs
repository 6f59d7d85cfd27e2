//! The names a token travels under on the wire: the cookies that carry
//! tickets and entry tokens, and the headers the origin and the edge agree
//! on. Both sides take them from here so they cannot drift apart.
//!
//! Names only: reading or writing cookies and headers is the caller's job.
//! HTTP header names are case-insensitive; the constants use the spelling
//! of the public documentation (lowercase them where an API insists, e.g.
//! `http::HeaderName::from_static`).

use alloc::string::String;

/// What every ticket cookie's name starts with; the room id follows.
pub const TICKET_COOKIE_PREFIX: &str = "wr_ticket_";

/// What every entry-token cookie's name starts with; the room id follows.
pub const ENTRY_COOKIE_PREFIX: &str = "wr_entry_";

/// The cookie that carries `room`'s ticket (browsers; apps send
/// `Authorization: Bearer`).
///
/// `room` should be a valid room id ([`is_valid_room`](crate::is_valid_room)):
/// those are always valid cookie names.
#[must_use]
pub fn ticket_cookie(room: &str) -> String {
    // Joined, not `format!`ted: every join and status pays for it.
    [TICKET_COOKIE_PREFIX, room].concat()
}

/// The cookie that carries `room`'s entry token (browsers; apps send
/// [`ENTRY_TOKEN_HEADER`]).
///
/// `room` should be a valid room id ([`is_valid_room`](crate::is_valid_room)):
/// those are always valid cookie names.
#[must_use]
pub fn entry_cookie(room: &str) -> String {
    [ENTRY_COOKIE_PREFIX, room].concat()
}

/// The request header an app puts its entry token in, for a protected path.
pub const ENTRY_TOKEN_HEADER: &str = "Entry-Token";

/// The request header a join carries its challenge's solution in (proof of
/// work `seed.nonce`, or the Turnstile widget's token).
pub const CHALLENGE_HEADER: &str = "Waiting-Room-Challenge";

/// The request header the edge adds to everything it forwards, carrying the
/// secret it shares with the origin; it proves a request came through the
/// edge, so only such requests may name the client address.
pub const EDGE_HEADER: &str = "Waiting-Room-Edge";

/// The request header that lets staff past the edge's gate when it carries
/// the operator's bypass secret. The edge never forwards it.
pub const BYPASS_HEADER: &str = "Waiting-Room-Bypass";
