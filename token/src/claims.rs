//! The signed content of a token: [`Kind`], [`Claims`], and the room-id rule
//! both signer and verifier enforce.

use alloc::string::String;

/// Longest room id, in bytes (the rule is `^[a-z0-9][a-z0-9-]{0,63}$`).
pub const MAX_ROOM_LEN: usize = 64;

/// Which of the two token types this is.
///
/// A ticket proves a place in a room's line; an entry token proves the
/// visitor was let in. They share one format so that a kind byte, covered by
/// the MAC, is all that stops one from being replayed as the other.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A place in the line, handed out on arrival.
    Ticket,
    /// Admission to the protected origin, handed out when the line reaches
    /// the visitor.
    Entry,
}

impl Kind {
    /// The wire byte for this kind (1 ticket, 2 entry).
    pub(crate) const fn to_byte(self) -> u8 {
        match self {
            Kind::Ticket => 1,
            Kind::Entry => 2,
        }
    }

    /// The kind for a wire byte, or `None` for an unknown one.
    pub(crate) const fn from_byte(byte: u8) -> Option<Kind> {
        match byte {
            1 => Some(Kind::Ticket),
            2 => Some(Kind::Entry),
            _ => None,
        }
    }
}

/// What a token asserts. Everything here is covered by the MAC.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Claims {
    /// Ticket or entry token.
    pub kind: Kind,
    /// Room id, `^[a-z0-9][a-z0-9-]{0,63}$` (see [`is_valid_room`]).
    pub room: String,
    /// Random visitor id chosen by the origin.
    pub visitor: u128,
    /// The visitor's sequence number in the room's line.
    pub seq: u64,
    /// Unix seconds at issue.
    pub issued_at: u64,
    /// Unix seconds; the token is valid while `now < expires_at`.
    pub expires_at: u64,
    /// The keyed hash of the visitor's account (see `AccountHasher` under
    /// the `identity` feature) when the visitor joined with an identity;
    /// `None` otherwise. A token with an account is a version-2 token.
    pub account: Option<[u8; 8]>,
}

/// Whether `room` is a valid room id: `^[a-z0-9][a-z0-9-]{0,63}$`.
///
/// [`Keyring::sign`](crate::Keyring::sign) cannot fail, so callers should
/// check room ids from untrusted input with this before signing: a claim with
/// an invalid room yields a token that never verifies.
#[must_use]
pub fn is_valid_room(room: &str) -> bool {
    is_valid_room_bytes(room.as_bytes())
}

/// [`is_valid_room`] on bytes (a valid room id is ASCII).
pub(crate) fn is_valid_room_bytes(bytes: &[u8]) -> bool {
    match bytes.split_first() {
        Some((first, rest)) => {
            bytes.len() <= MAX_ROOM_LEN
                && (first.is_ascii_lowercase() || first.is_ascii_digit())
                && rest
                    .iter()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        }
        None => false,
    }
}
