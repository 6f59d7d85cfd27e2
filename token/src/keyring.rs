//! The keyring: parsing the operator's `kid:secret,...` list, signing with
//! the first key, and verifying with any of them.
//!
//! Secrets are turned into keyed HMAC states at construction and the raw
//! bytes are not kept, so per-token work is one clone plus the payload hash.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

use crate::claims::{Claims, Kind};
use crate::error::{KeyringError, TokenError};
use crate::secret::MIN_SECRET_LEN;
use crate::wire::{self, MAX_KID_LEN};

/// Longest token string [`Keyring::verify`] accepts: anything longer is
/// [`TokenError::Malformed`] before any decoding, so callers need no length
/// check of their own. Use it to bound what is read or stored before a
/// token reaches the keyring.
///
/// Version-1 tokens are at most 210 characters and version-2 ones (with an
/// account) 220; the rest is headroom so a future version can grow without
/// every caller changing its limit.
pub const MAX_TOKEN_LEN: usize = 512;

// Every token this crate signs must pass its own length check.
const _: () = assert!(wire::MAX_WIRE_TOKEN_LEN <= MAX_TOKEN_LEN);

pub(crate) type HmacSha256 = Hmac<Sha256>;

/// One key: its id and its precomputed keyed HMAC state.
#[derive(Clone)]
struct Key {
    kid: String,
    mac: HmacSha256,
}

/// The set of keys the origin signs with and the edge verifies with.
///
/// The first key signs; every key verifies, which is what makes rotation
/// work: deploy `new,old` everywhere, then drop `old` once tokens signed
/// with it have expired.
#[derive(Clone)]
pub struct Keyring {
    /// Never empty: both constructors refuse an empty list.
    keys: Vec<Key>,
}

impl fmt::Debug for Keyring {
    /// Lists the kids only; the keyed states are as good as the secrets.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Keyring")
            .field(
                "kids",
                &self.keys.iter().map(|k| k.kid.as_str()).collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

/// Whether `kid` is 1 to 16 characters of `[A-Za-z0-9_-]`.
pub(crate) fn is_valid_kid(kid: &str) -> bool {
    (1..=MAX_KID_LEN).contains(&kid.len())
        && kid
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Splits an operator's `kid:value,kid:value` list into `(kid, value)`
/// pairs, or names the first bad entry (1-based) and what is wrong with it;
/// `no_colon` is the words for an entry without a `:`.
///
/// Whitespace around each entry is trimmed; the value is everything after
/// the entry's first `:` and may not start with whitespace (a sign of
/// `"kid: value"`). Neither kids nor values are checked here. A blank list
/// is the caller's to refuse or accept.
pub(crate) fn split_list<'a>(
    spec: &'a str,
    no_colon: &'static str,
) -> Result<Vec<(&'a str, &'a str)>, (usize, &'static str)> {
    let mut pairs = Vec::new();
    for (i, entry) in spec.split(',').enumerate() {
        let entry_no = i + 1;
        let entry = entry.trim();
        if entry.is_empty() {
            return Err((entry_no, "empty entry (stray ',')"));
        }
        let (kid, value) = entry.split_once(':').ok_or((entry_no, no_colon))?;
        if value.starts_with(char::is_whitespace) {
            return Err((entry_no, "whitespace after ':'"));
        }
        pairs.push((kid, value));
    }
    Ok(pairs)
}

/// Parses and checks a `kid:secret,...` list by the rules of
/// [`Keyring::parse`], keeping the raw secrets (for verifiers that need
/// them as bytes, such as the identity tokens' HS256 keys).
pub(crate) fn parse_pairs(spec: &str) -> Result<Vec<(String, Vec<u8>)>, KeyringError> {
    if spec.trim().is_empty() {
        return Err(KeyringError::Empty);
    }
    let pairs: Vec<(String, Vec<u8>)> = split_list(spec, "no ':' between kid and secret")
        .map_err(|(entry, reason)| KeyringError::BadEntry { entry, reason })?
        .into_iter()
        .map(|(kid, secret)| (String::from(kid), Vec::from(secret.as_bytes())))
        .collect();
    check_pairs(&pairs)?;
    Ok(pairs)
}

/// The rules of [`Keyring::new`]: at least one pair, valid kids, secrets
/// of at least [`MIN_SECRET_LEN`] bytes, no kid twice.
pub(crate) fn check_pairs(pairs: &[(String, Vec<u8>)]) -> Result<(), KeyringError> {
    if pairs.is_empty() {
        return Err(KeyringError::Empty);
    }
    for (i, (kid, secret)) in pairs.iter().enumerate() {
        let entry = i + 1;
        if !is_valid_kid(kid) {
            return Err(KeyringError::BadKid {
                entry,
                len: kid.len(),
            });
        }
        if secret.len() < MIN_SECRET_LEN {
            return Err(KeyringError::ShortSecret {
                entry,
                kid: kid.clone(),
                len: secret.len(),
            });
        }
        if pairs.iter().take(i).any(|(seen, _)| seen == kid) {
            return Err(KeyringError::DuplicateKid {
                entry,
                kid: kid.clone(),
            });
        }
    }
    Ok(())
}

impl Keyring {
    /// Parses the operator format `"kid:secret,kid:secret"`, e.g.
    /// `"k2:9f1c...,k1:77ab..."`.
    ///
    /// The first key signs; all verify. Whitespace around each entry is
    /// trimmed (so `"k2:..., k1:..."` works). A kid is 1 to 16 characters
    /// of `[A-Za-z0-9_-]`; the secret is the raw UTF-8 bytes of everything
    /// after the entry's first `:` (it may itself contain `:`), at least 16
    /// bytes, and may not start with whitespace (a sign of `"kid: secret"`,
    /// which would otherwise silently sign with a different key).
    ///
    /// # Errors
    ///
    /// [`KeyringError::Empty`] for a blank spec, [`KeyringError::BadEntry`]
    /// for an empty entry, a missing `:` or whitespace after it, and the
    /// errors of [`Keyring::new`] otherwise.
    pub fn parse(spec: &str) -> Result<Keyring, KeyringError> {
        Keyring::new(parse_pairs(spec)?)
    }

    /// Builds a keyring from `(kid, secret)` pairs, first pair signing, with
    /// the same validation as [`Keyring::parse`] (no trimming here: the
    /// bytes are taken as given).
    ///
    /// # Errors
    ///
    /// [`KeyringError::Empty`] for no pairs, [`KeyringError::BadKid`],
    /// [`KeyringError::ShortSecret`] or [`KeyringError::DuplicateKid`] for
    /// the first pair that breaks a rule.
    pub fn new(keys: Vec<(String, Vec<u8>)>) -> Result<Keyring, KeyringError> {
        check_pairs(&keys)?;
        let mut out: Vec<Key> = Vec::with_capacity(keys.len());
        for (i, (kid, secret)) in keys.into_iter().enumerate() {
            // HMAC accepts keys of any length, so this never fails; mapping
            // the impossible error keeps the constructor panic-free.
            let mac =
                HmacSha256::new_from_slice(&secret).map_err(|_| KeyringError::ShortSecret {
                    entry: i + 1,
                    kid: kid.clone(),
                    len: secret.len(),
                })?;
            out.push(Key { kid, mac });
        }
        Ok(Keyring { keys: out })
    }

    /// The signing key: the first in the list.
    fn signer(&self) -> Option<&Key> {
        self.keys.first()
    }

    /// The signing key's kid and a fresh copy of its keyed MAC state.
    pub(crate) fn signing_mac(&self) -> Option<(&str, HmacSha256)> {
        self.signer().map(|k| (k.kid.as_str(), k.mac.clone()))
    }

    /// A fresh copy of the keyed MAC state of the key `kid` (kids are
    /// public: a plain lookup).
    pub(crate) fn mac_of(&self, kid: &[u8]) -> Option<HmacSha256> {
        self.keys
            .iter()
            .find(|k| k.kid.as_bytes() == kid)
            .map(|k| k.mac.clone())
    }

    /// The kid new tokens are signed with (the first key).
    #[must_use]
    pub fn signing_kid(&self) -> &str {
        self.signer().map_or("", |k| k.kid.as_str())
    }

    /// All kids, signing kid first, in the order given.
    pub fn kids(&self) -> impl Iterator<Item = &str> {
        self.keys.iter().map(|k| k.kid.as_str())
    }

    /// Signs `claims` with the first key and returns the token.
    ///
    /// `claims.room` must be a valid room id (see
    /// [`is_valid_room`](crate::is_valid_room)); otherwise the token is
    /// still produced but will never verify.
    #[must_use]
    pub fn sign(&self, claims: &Claims) -> String {
        let Some(key) = self.signer() else {
            // Unreachable: constructors refuse empty keyrings. An empty string
            // is Malformed to every verifier, so this fails closed.
            return String::new();
        };
        let payload = wire::encode_payload(claims, &key.kid);
        let mut mac = key.mac.clone();
        mac.update(payload.as_slice());
        let tag = mac.finalize().into_bytes();
        wire::encode_token(payload.as_slice(), &tag)
    }

    /// Verifies `token` as a `kind` token for `room` at unix time `now`, and
    /// returns its claims.
    ///
    /// Checks run in this order, and the first failure is returned: length
    /// and structure ([`TokenError::Malformed`]), kid
    /// ([`TokenError::UnknownKey`]), MAC in constant time
    /// ([`TokenError::BadSignature`]), kind ([`TokenError::WrongKind`]),
    /// room ([`TokenError::WrongRoom`]), expiry, where `now >= expires_at`
    /// is [`TokenError::Expired`]. Nothing in the payload is acted on before
    /// the MAC has been checked.
    ///
    /// # Errors
    ///
    /// The [`TokenError`] of the first check that fails.
    pub fn verify(
        &self,
        token: &str,
        kind: Kind,
        room: &str,
        now: u64,
    ) -> Result<Claims, TokenError> {
        if token.len() > MAX_TOKEN_LEN {
            return Err(TokenError::Malformed);
        }
        let (payload_buf, tag) = wire::decode_token(token)?;
        let payload_bytes = payload_buf.as_slice();
        let payload = wire::parse_payload(payload_bytes)?;

        // Kids are public (they travel in the clear), so a plain lookup is fine.
        let key = self
            .keys
            .iter()
            .find(|k| k.kid.as_bytes() == payload.kid)
            .ok_or(TokenError::UnknownKey)?;

        let mut mac = key.mac.clone();
        mac.update(payload_bytes);
        mac.verify_slice(&tag)
            .map_err(|_| TokenError::BadSignature)?;

        if payload.kind != kind {
            return Err(TokenError::WrongKind);
        }
        let same_room =
            payload.room.len() == room.len() && bool::from(payload.room.ct_eq(room.as_bytes()));
        if !same_room {
            return Err(TokenError::WrongRoom);
        }
        if now >= payload.expires_at {
            return Err(TokenError::Expired);
        }

        // The payload's room is `room`, byte for byte (checked above).
        Ok(Claims {
            kind: payload.kind,
            room: String::from(room),
            visitor: payload.visitor,
            seq: payload.seq,
            issued_at: payload.issued_at,
            expires_at: payload.expires_at,
            account: payload.account,
        })
    }
}
