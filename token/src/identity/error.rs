//! Why an identity token was refused ([`IdentityError`]) and why a list of
//! identity keys was ([`IdentityKeyError`]).

use alloc::string::String;

use crate::error::KeyringError;

/// Why [`IdentityKeys::verify`](super::IdentityKeys::verify) refused an
/// identity token.
///
/// Every variant means the same to the client: 401 `invalid_identity`. The
/// distinction is for logs and metrics, and no variant carries text from
/// the token (a kid or a claim could be anything an attacker chose).
#[derive(thiserror::Error, Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdentityError {
    /// Longer than [`MAX_IDENTITY_TOKEN_LEN`](super::MAX_IDENTITY_TOKEN_LEN);
    /// refused before any decoding.
    #[error("identity token is too long")]
    TooLong,
    /// Not a compact JWS: wrong number of parts, bad base64, a header or
    /// claims that are not JSON objects, a `crit` header; also claims the
    /// JWT library's own pass cannot read (a `sub` that is a list or an
    /// object).
    #[error("identity token is malformed")]
    Malformed,
    /// The header's `alg` is not `HS256` or `EdDSA`, or not the one the
    /// kid's key is for (`none` and unknown names included).
    #[error("identity token's algorithm is not allowed")]
    AlgorithmNotAllowed,
    /// The header has no `kid`.
    #[error("identity token has no kid")]
    MissingKid,
    /// The header's `kid` is in neither key list.
    #[error("identity token is signed with an unknown kid")]
    UnknownKid,
    /// The signature does not match: forged, corrupted, or signed with
    /// another key under the same kid.
    #[error("identity token's signature does not match")]
    BadSignature,
    /// Authentic, but `now >= exp`.
    #[error("identity token has expired")]
    Expired,
    /// Authentic, but `now < nbf`.
    #[error("identity token is not yet valid")]
    NotYetValid,
    /// Authentic, but `aud` does not name this room.
    #[error("identity token is for another audience")]
    WrongAudience,
    /// A required claim (`sub`, `aud` or `exp`) is absent or `null`.
    #[error("identity token lacks the {0} claim")]
    MissingClaim(&'static str),
    /// A claim has the wrong type or value: `sub` not a string of 1 to 255
    /// characters, `aud` not a string or a list of strings, a date not a
    /// non-negative number.
    #[error("identity token's {0} claim is invalid")]
    InvalidClaim(&'static str),
}

/// Why [`IdentityKeys::parse`](super::IdentityKeys::parse) refused a list.
///
/// Entries are named by 1-based position; HS256 secrets never appear.
#[derive(thiserror::Error, Debug, Clone, PartialEq, Eq)]
pub enum IdentityKeyError {
    /// The HS256 list (`--identity-keys`) breaks a rule of the `kid:secret`
    /// format shared with `--signing-keys`.
    #[error("--identity-keys: {0}")]
    Hs256(KeyringError),
    /// An entry of the Ed25519 list (`--identity-public-keys`) is not of the
    /// form `kid:key`.
    #[error(
        "--identity-public-keys entry {entry} is malformed ({reason}): expected \"kid:base64url-public-key\""
    )]
    Ed25519Entry {
        /// 1-based position of the entry in the list.
        entry: usize,
        /// What is wrong with it, in words.
        reason: &'static str,
    },
    /// A kid of the Ed25519 list is empty, too long, or has characters
    /// outside `[A-Za-z0-9_-]`.
    #[error(
        "--identity-public-keys entry {entry} has a bad kid ({len} bytes): a kid is 1 to 16 characters of [A-Za-z0-9_-]"
    )]
    Ed25519Kid {
        /// 1-based position of the entry in the list.
        entry: usize,
        /// Length in bytes of the rejected kid.
        len: usize,
    },
    /// A key of the Ed25519 list is not a usable Ed25519 public key.
    #[error("--identity-public-keys entry {entry} (kid {kid:?}) is refused: {reason}")]
    Ed25519Key {
        /// 1-based position of the entry in the list.
        entry: usize,
        /// The (valid) kid of the entry.
        kid: String,
        /// What is wrong with the key, in words.
        reason: &'static str,
    },
    /// A kid appears twice, within the Ed25519 list or in both lists, so a
    /// token's kid would not name one key.
    #[error(
        "identity kid {kid:?} appears twice (in --identity-public-keys, or in it and --identity-keys): every kid must be unique"
    )]
    DuplicateKid {
        /// The repeated kid.
        kid: String,
    },
}
