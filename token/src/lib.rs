//! Signed tickets and entry tokens for the waiting room: the format, signing
//! and verification, plus the vocabulary the origin and the edge share
//! around them (cookie and header names, secret comparison). Nothing else.
//!
//! The origin signs; the origin and the edge (a Cloudflare Worker, built for
//! `wasm32-unknown-unknown`) verify. The crate does no I/O, reads no clock
//! and draws no randomness: the caller passes `now`, and the visitor id is
//! chosen by the origin. It is `no_std` (with `alloc`) to keep it that way.
//!
//! # Usage
//!
//! ```
//! use token::{Claims, Keyring, Kind, TokenError};
//!
//! let keys = Keyring::parse("k2:new-secret-0123456789,k1:old-secret-0123456789")?;
//! let claims = Claims {
//!     kind: Kind::Entry,
//!     room: "launch".into(),
//!     visitor: 42,
//!     seq: 7,
//!     issued_at: 1_700_000_000,
//!     expires_at: 1_700_000_600,
//!     account: None,
//! };
//! let token = keys.sign(&claims);
//! assert_eq!(keys.verify(&token, Kind::Entry, "launch", 1_700_000_001), Ok(claims));
//! assert_eq!(
//!     keys.verify(&token, Kind::Entry, "launch", 1_700_000_600),
//!     Err(TokenError::Expired)
//! );
//! # Ok::<(), token::KeyringError>(())
//! ```
//!
//! # Wire format (versions 1 and 2)
//!
//! ```text
//! token   = base64url_nopad(payload) "." base64url_nopad(hmac_sha256(key[kid], payload))
//! payload = version u8 (1 = no account, 2 = with an account)
//!           kind u8 (1 = ticket, 2 = entry)
//!           kid_len u8 (1..=16)  kid bytes ([A-Za-z0-9_-])
//!           room_len u8 (1..=64) room bytes (^[a-z0-9][a-z0-9-]{0,63}$)
//!           visitor u128 | seq u64 | issued_at u64 | expires_at u64
//!           [version 2 only] account [u8; 8]
//! ```
//!
//! Integers are big-endian; times are unix seconds. The alphabet
//! (`A-Z a-z 0-9 - _` plus one `.`) is safe in URLs and cookie values
//! without escaping. The MAC is always 32 bytes (43 characters); a payload
//! is 44 bytes plus kid and room (plus 8 for an account), so a version-1
//! token is at most 210 characters and a version-2 one 220, well under
//! [`MAX_TOKEN_LEN`]. Padding, non-canonical base64 (non-zero trailing
//! bits), trailing payload bytes, wrong lengths and unknown versions or
//! kinds are all [`TokenError::Malformed`].
//!
//! [`Claims::account`] decides the version: a token without an account is
//! version 1, byte for byte as before accounts existed, so verifiers built
//! before them keep accepting every such token; the account, when present,
//! is covered by the MAC like every other field.
//!
//! The kid travels in the payload, in the clear and under the MAC, so the
//! verifier picks the key without trial and a rotation (`"new:..,old:.."`)
//! keeps old tokens valid until `old` is removed.
//!
//! # Verification order
//!
//! 1. length `> MAX_TOKEN_LEN`, not exactly one `.`, bad base64, MAC not 32
//!    bytes, bad payload structure: [`TokenError::Malformed`]
//! 2. kid not in the keyring: [`TokenError::UnknownKey`]
//! 3. HMAC-SHA256 over the payload bytes, compared in constant time:
//!    [`TokenError::BadSignature`]
//! 4. kind differs from the expected one: [`TokenError::WrongKind`]
//! 5. room differs (constant-time compare): [`TokenError::WrongRoom`]
//! 6. `now >= expires_at`: [`TokenError::Expired`]
//!
//! Each key's keyed HMAC state is computed once when the [`Keyring`] is
//! built and cloned per call, so a verification is a few SHA-256 blocks.
//!
//! # Layout
//! - `claims`: what a token says ([`Claims`], [`Kind`]) and the room-id rule.
//! - `wire`: the byte layout above, encoding and decoding; no keys.
//! - `keyring`: [`Keyring`], parsing `kid:secret,...`, signing, verifying.
//! - `error`: [`TokenError`] and [`KeyringError`], never carrying secrets.
//! - `challenge`: the join challenge's proof-of-work seeds and solutions.
//! - `names`: cookie and header names the origin and the edge share.
//! - `secret`: [`Secret`], other shared secrets compared in constant time.
//! - `identity` (feature `identity`, off by default): identity tokens, the
//!   JWTs of the operator's site (`IdentityKeys`), and the account hash
//!   (`AccountHasher`). It needs `std` and a JWT library, so the edge,
//!   which only verifies entry tokens, builds without it.

#![no_std]
extern crate alloc;
#[cfg(feature = "identity")]
extern crate std;

mod challenge;
mod claims;
mod error;
#[cfg(feature = "identity")]
mod identity;
mod keyring;
mod names;
mod secret;
mod wire;

#[cfg(test)]
mod tests;

pub use challenge::{
    ChallengeError, MAX_NONCE_LEN, MAX_SOLUTION_LEN, SEED_RANDOM_LEN, Solved, solve, zero_bits,
};
pub use claims::{Claims, Kind, MAX_ROOM_LEN, is_valid_room};
pub use error::{KeyringError, TokenError};
#[cfg(feature = "identity")]
pub use identity::{
    ACCOUNT_HASH_LEN, AccountHasher, Identity, IdentityError, IdentityKeyError, IdentityKeys,
    MAX_IDENTITY_TOKEN_LEN, MAX_SUB_CHARS, ed25519_public_key, sign_ed25519, sign_hs256,
};
pub use keyring::{Keyring, MAX_TOKEN_LEN};
pub use names::{
    BYPASS_HEADER, CHALLENGE_HEADER, EDGE_HEADER, ENTRY_COOKIE_PREFIX, ENTRY_TOKEN_HEADER,
    TICKET_COOKIE_PREFIX, entry_cookie, ticket_cookie,
};
pub use secret::{MIN_SECRET_LEN, Secret};
pub use wire::MAX_KID_LEN;
