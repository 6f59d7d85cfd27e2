//! Error types: why a token was refused ([`TokenError`]) and why a keyring
//! spec was refused ([`KeyringError`]).
//!
//! Neither type ever carries secret material: keyring errors name the entry
//! by position (and the kid once it is known to be a well-formed kid), never
//! the text after the `:`.

use alloc::string::String;

/// Why [`Keyring::verify`](crate::Keyring::verify) refused a token.
///
/// Callers should treat every variant as "no entry"; the distinction exists
/// for logs and metrics (e.g. a burst of `UnknownKey` after a bad rotation).
#[derive(thiserror::Error, Debug, Clone, PartialEq, Eq)]
pub enum TokenError {
    /// Not a token of this format: too long, wrong shape, bad base64, bad
    /// lengths, unknown version or kind, or trailing bytes.
    #[error("malformed token")]
    Malformed,
    /// Well-formed, but signed with a kid this keyring does not hold.
    #[error("token signed with an unknown key id")]
    UnknownKey,
    /// The MAC does not match the payload: forged or corrupted.
    #[error("token signature does not match")]
    BadSignature,
    /// Authentic, but a ticket where an entry token was expected or vice versa.
    #[error("token is of the wrong kind")]
    WrongKind,
    /// Authentic, but issued for a different room.
    #[error("token is for a different room")]
    WrongRoom,
    /// Authentic, but `now >= expires_at`.
    #[error("token has expired")]
    Expired,
}

/// Why [`Keyring::parse`](crate::Keyring::parse) or
/// [`Keyring::new`](crate::Keyring::new) refused a key list.
///
/// `entry` fields are 1-based positions in the list, so an operator can find
/// the offending entry without the message echoing any secret.
#[derive(thiserror::Error, Debug, Clone, PartialEq, Eq)]
pub enum KeyringError {
    /// No keys at all.
    #[error("keyring is empty: expected \"kid:secret[,kid:secret...]\", the first key signs")]
    Empty,
    /// An entry is not of the form `kid:secret`.
    #[error("keyring entry {entry} is malformed ({reason}): expected \"kid:secret\"")]
    BadEntry {
        /// 1-based position of the entry in the list.
        entry: usize,
        /// What is wrong with it, in words (never the entry's text).
        reason: &'static str,
    },
    /// A kid is empty, too long, or has characters outside `[A-Za-z0-9_-]`.
    ///
    /// The kid text is deliberately not included: when the operator forgot
    /// the kid, the text before the first `:` may be part of a secret.
    #[error(
        "keyring entry {entry} has a bad kid ({len} bytes): a kid is 1 to 16 characters of [A-Za-z0-9_-]"
    )]
    BadKid {
        /// 1-based position of the entry in the list.
        entry: usize,
        /// Length in bytes of the rejected kid.
        len: usize,
    },
    /// A secret is shorter than [`MIN_SECRET_LEN`](crate::MIN_SECRET_LEN) bytes.
    #[error(
        "keyring entry {entry} (kid {kid:?}) has a {len}-byte secret: secrets must be at least 16 bytes"
    )]
    ShortSecret {
        /// 1-based position of the entry in the list.
        entry: usize,
        /// The (valid) kid of the entry.
        kid: String,
        /// Length in bytes of the rejected secret.
        len: usize,
    },
    /// The same kid appears twice, so verification would be ambiguous.
    #[error("keyring entry {entry} repeats kid {kid:?}: every kid must be unique")]
    DuplicateKid {
        /// 1-based position of the second occurrence.
        entry: usize,
        /// The repeated kid.
        kid: String,
    },
}
