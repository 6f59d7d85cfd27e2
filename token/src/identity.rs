//! Identity tokens: JWTs (RFC 7519, compact JWS) the operator's site signs
//! to name one of its accounts, checked at join. The waiting room only
//! verifies them; [`sign_hs256`] and [`sign_ed25519`] mint them for tests
//! and tools.
//!
//! # Contract
//!
//! - Header `alg` is exactly `HS256` (a key of the HS256 list,
//!   `--identity-keys`) or `EdDSA` (an Ed25519 key of
//!   `--identity-public-keys`); the header's `kid` (required) picks the key,
//!   and the key's kind must match `alg`. No other `alg` is ever accepted,
//!   `none` included. A header with `crit` is refused: no extension is
//!   understood here.
//! - Claims: `sub` (1 to 255 characters), `aud` (a string or a list of
//!   strings, containing the room id) and `exp` are required; `nbf` is
//!   honoured when present; `iat` is optional and only checked to be a
//!   date. Dates are JSON numbers of unix seconds (a fraction is rounded
//!   towards refusal: `exp` down, `nbf` up).
//! - No leeway: the token is valid while `nbf <= now < exp`. The site
//!   chooses both times; one that fears clock skew sets `nbf` a little in
//!   the past, or leaves it out.
//!
//! # Verification order
//!
//! 1. longer than [`MAX_IDENTITY_TOKEN_LEN`]: [`IdentityError::TooLong`],
//!    before any decoding, so a hostile client cannot make a cheap request
//!    expensive
//! 2. header not a JWS header: [`IdentityError::Malformed`]; an `alg` the
//!    JWT library does not know (e.g. `none`), or one other than `HS256`
//!    and `EdDSA`: [`IdentityError::AlgorithmNotAllowed`]; a `crit` header:
//!    [`IdentityError::Malformed`]
//! 3. no `kid`: [`IdentityError::MissingKid`]; a kid in neither list:
//!    [`IdentityError::UnknownKid`] (no other key is tried); the kid's key
//!    is of the other kind than `alg`: [`IdentityError::AlgorithmNotAllowed`]
//! 4. the signature, by the JWT library: [`IdentityError::BadSignature`]
//!    (and [`IdentityError::Malformed`] for bad base64 or JSON)
//! 5. the claims, only once the signature holds: missing or ill-typed
//!    claims ([`IdentityError::MissingClaim`], [`IdentityError::InvalidClaim`]),
//!    then [`IdentityError::Expired`], [`IdentityError::NotYetValid`],
//!    [`IdentityError::WrongAudience`]
//!
//! Every error means the same to a client (401 `invalid_identity`); the
//! variants exist for logs and metrics.
//!
//! # Layout
//! - this file: [`IdentityKeys`] (parsing the two lists, verifying) and
//!   [`Identity`].
//! - `error`: [`IdentityError`], [`IdentityKeyError`].
//! - `account`: [`AccountHasher`], the keyed hash an account is kept as.
//! - `mint`: signing helpers for tests, the benchmarks and the rehearsal.

mod account;
mod error;
mod mint;

#[cfg(test)]
mod tests;

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt;

use base64::Engine as _;
use base64::alphabet::URL_SAFE;
use base64::engine::DecodePaddingMode;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig, URL_SAFE_NO_PAD};
use jsonwebtoken::{Algorithm, DecodingKey};
use serde_json::{Map, Value};

use crate::keyring::{is_valid_kid, parse_pairs, split_list};

pub use account::{ACCOUNT_HASH_LEN, AccountHasher};
pub use error::{IdentityError, IdentityKeyError};
pub use mint::{ed25519_public_key, sign_ed25519, sign_hs256};

/// Longest identity token [`IdentityKeys::verify`] looks at, in bytes;
/// anything longer is [`IdentityError::TooLong`] before any decoding. A
/// token with the claims of the contract is a few hundred bytes.
pub const MAX_IDENTITY_TOKEN_LEN: usize = 4096;

/// Longest `sub`, in characters.
pub const MAX_SUB_CHARS: usize = 255;

/// Length of a raw Ed25519 public key.
const ED25519_KEY_LEN: usize = 32;

/// Base64url that takes padding or its absence: operators paste keys from
/// tools that differ on it.
const URL_SAFE_ANY_PAD: GeneralPurpose = GeneralPurpose::new(
    &URL_SAFE,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// What a verified identity token says: the account.
#[derive(Clone, PartialEq, Eq)]
pub struct Identity {
    /// The account id on the operator's site (the `sub` claim), 1 to 255
    /// characters. Keep only its [`AccountHasher`] hash.
    pub sub: String,
}

impl fmt::Debug for Identity {
    /// The length only: an account id is personal data and must not reach
    /// logs through a `{:?}`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Identity")
            .field("sub_chars", &self.sub.chars().count())
            .finish_non_exhaustive()
    }
}

/// One key of either list.
struct IdentityKey {
    kid: String,
    /// `HS256` or `EdDSA`: the one `alg` this key verifies.
    alg: Algorithm,
    key: DecodingKey,
}

struct Inner {
    keys: Vec<IdentityKey>,
}

/// The keys identity tokens are checked with: the operator's HS256 secrets
/// and Ed25519 public keys, each under its kid. Cheap to clone (shared).
#[derive(Clone)]
pub struct IdentityKeys {
    inner: Arc<Inner>,
}

impl fmt::Debug for IdentityKeys {
    /// Kids and kinds only; HS256 secrets are secrets.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut list = f.debug_map();
        for k in &self.inner.keys {
            list.entry(&k.kid, &k.alg);
        }
        list.finish()
    }
}

impl IdentityKeys {
    /// Parses the two operator lists.
    ///
    /// `hs256` (`--identity-keys`) is `kid:secret,kid:secret` with the
    /// rules of [`Keyring::parse`](crate::Keyring::parse): a kid is 1 to 16
    /// characters of `[A-Za-z0-9_-]`, a secret the raw bytes after the first
    /// `:`, at least 16 of them. `ed25519` (`--identity-public-keys`) is
    /// `kid:key,kid:key`, each key a raw 32-byte Ed25519 public key in
    /// base64url, padded or not. Whitespace around entries is trimmed. A
    /// list that is `None` or blank adds no key; no kid may appear twice,
    /// within a list or across both.
    ///
    /// # Errors
    ///
    /// The first rule an entry breaks, naming the list and the entry's
    /// position, never an HS256 secret.
    pub fn parse(
        hs256: Option<&str>,
        ed25519: Option<&str>,
    ) -> Result<IdentityKeys, IdentityKeyError> {
        // The process-wide crypto backend of the JWT library: its pure-Rust
        // one, the only one this crate enables. Err means one is already
        // installed, which is as good.
        let _ = jsonwebtoken::crypto::CryptoProvider::install_default(
            &jsonwebtoken::crypto::rust_crypto::DEFAULT_PROVIDER,
        );

        let mut keys: Vec<IdentityKey> = Vec::new();
        if let Some(spec) = hs256.filter(|s| !s.trim().is_empty()) {
            for (kid, secret) in parse_pairs(spec).map_err(IdentityKeyError::Hs256)? {
                keys.push(IdentityKey {
                    kid,
                    alg: Algorithm::HS256,
                    key: DecodingKey::from_secret(&secret),
                });
            }
        }
        if let Some(spec) = ed25519.filter(|s| !s.trim().is_empty()) {
            let pairs = split_list(spec, "no ':' between kid and key")
                .map_err(|(entry, reason)| IdentityKeyError::Ed25519Entry { entry, reason })?;
            for (i, (kid, text)) in pairs.into_iter().enumerate() {
                let entry = i + 1;
                if !is_valid_kid(kid) {
                    return Err(IdentityKeyError::Ed25519Kid {
                        entry,
                        len: kid.len(),
                    });
                }
                let raw =
                    parse_ed25519_key(text).map_err(|reason| IdentityKeyError::Ed25519Key {
                        entry,
                        kid: String::from(kid),
                        reason,
                    })?;
                if keys.iter().any(|k| k.kid == kid) {
                    return Err(IdentityKeyError::DuplicateKid {
                        kid: String::from(kid),
                    });
                }
                keys.push(IdentityKey {
                    kid: String::from(kid),
                    alg: Algorithm::EdDSA,
                    key: DecodingKey::from_ed_der(&raw),
                });
            }
        }
        Ok(IdentityKeys {
            inner: Arc::new(Inner { keys }),
        })
    }

    /// Whether neither list gave a key (then every token is refused).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.inner.keys.is_empty()
    }

    /// Verifies `jwt` as an identity token for `room` at unix time
    /// `now_unix_s`, and returns the account it names.
    ///
    /// The checks and their order are in the module documentation; nothing
    /// in the claims is looked at before the signature holds. Signatures
    /// are checked by `jsonwebtoken` on RustCrypto: an HS256 tag through
    /// `hmac`'s `verify_slice`, which compares in constant time; an Ed25519
    /// signature through `ed25519-dalek` (public data, nothing to hide).
    ///
    /// # Errors
    ///
    /// The [`IdentityError`] of the first check that fails; each one means
    /// 401 `invalid_identity`.
    pub fn verify(
        &self,
        jwt: &str,
        room: &str,
        now_unix_s: u64,
    ) -> Result<Identity, IdentityError> {
        if jwt.len() > MAX_IDENTITY_TOKEN_LEN {
            return Err(IdentityError::TooLong);
        }
        let header = jsonwebtoken::decode_header(jwt).map_err(|_| header_error(jwt))?;
        if !matches!(header.alg, Algorithm::HS256 | Algorithm::EdDSA) {
            return Err(IdentityError::AlgorithmNotAllowed);
        }
        if header.crit.is_some() {
            return Err(IdentityError::Malformed);
        }
        let kid = header.kid.as_deref().ok_or(IdentityError::MissingKid)?;
        // Kids are public (they travel in the clear): a plain lookup.
        let key = self
            .inner
            .keys
            .iter()
            .find(|k| k.kid == kid)
            .ok_or(IdentityError::UnknownKid)?;
        if key.alg != header.alg {
            return Err(IdentityError::AlgorithmNotAllowed);
        }
        // The signature over `header.payload`, by the JWT library's own
        // check; the claims are then read once, here. (`jsonwebtoken::decode`
        // read the header three times and the claims twice: 3.3 µs a join.)
        let (message, signature) = jwt.rsplit_once('.').ok_or(IdentityError::Malformed)?;
        let (_, payload) = message.split_once('.').ok_or(IdentityError::Malformed)?;
        if payload.contains('.') {
            return Err(IdentityError::Malformed);
        }
        match jsonwebtoken::crypto::verify(signature, message.as_bytes(), &key.key, key.alg) {
            Ok(true) => {}
            Ok(false) => return Err(IdentityError::BadSignature),
            Err(_) => return Err(IdentityError::Malformed),
        }
        let json = URL_SAFE_NO_PAD
            .decode(payload)
            .map_err(|_| IdentityError::Malformed)?;
        // An object only: a derived struct would also read a JSON array.
        if json.trim_ascii_start().first() != Some(&b'{') {
            return Err(IdentityError::Malformed);
        }
        let claims: Registered =
            serde_json::from_slice(&json).map_err(|_| IdentityError::Malformed)?;
        check_claims(&claims, room, now_unix_s)
    }
}

/// Decodes an operator's Ed25519 public key, or says what is wrong with it.
fn parse_ed25519_key(text: &str) -> Result<[u8; ED25519_KEY_LEN], &'static str> {
    let bytes = URL_SAFE_ANY_PAD.decode(text).map_err(|_| "not base64url")?;
    let raw: [u8; ED25519_KEY_LEN] = bytes
        .as_slice()
        .try_into()
        .map_err(|_| "not 32 bytes (a raw Ed25519 public key)")?;
    let key =
        ed25519_dalek::VerifyingKey::from_bytes(&raw).map_err(|_| "not a point of the curve")?;
    if key.is_weak() {
        return Err("a weak (small-order) key, which any signature matches");
    }
    Ok(raw)
}

/// Why the JWT library refused a header: an `alg` it does not know (such
/// as `none`) is named as such, anything else is malformed. Only the `alg`
/// member is read, and only on this failure path.
fn header_error(jwt: &str) -> IdentityError {
    let unknown_alg = jwt
        .split('.')
        .next()
        .and_then(|h| URL_SAFE_NO_PAD.decode(h).ok())
        .and_then(|json| serde_json::from_slice::<Map<String, Value>>(&json).ok())
        .and_then(|header| {
            header
                .get("alg")
                .and_then(Value::as_str)
                .map(|alg| alg.parse::<Algorithm>().is_err())
        })
        .unwrap_or(false);
    if unknown_alg {
        IdentityError::AlgorithmNotAllowed
    } else {
        IdentityError::Malformed
    }
}

/// A NumericDate (RFC 7519): a non-negative JSON number of unix seconds.
/// A fraction is rounded up when `round_up`, down otherwise.
fn numeric_date(value: &Value, round_up: bool) -> Option<u64> {
    if let Some(n) = value.as_u64() {
        return Some(n);
    }
    let f = value.as_f64()?;
    // Below 2^64 (which also leaves out NaN and infinities), a value rounds
    // into u64; `as` saturates the one case, ceil to exactly 2^64.
    if !(0.0..18_446_744_073_709_551_616.0).contains(&f) {
        return None;
    }
    let rounded = if round_up { f.ceil() } else { f.floor() };
    Some(rounded as u64)
}

/// The claims this module reads, each `null` when absent; any other claim
/// is skipped unread (read into a map, every claim cost an allocation or
/// two). A claim named twice is malformed.
#[derive(serde::Deserialize)]
struct Registered {
    #[serde(default)]
    sub: Value,
    #[serde(default)]
    aud: Value,
    #[serde(default)]
    exp: Value,
    #[serde(default)]
    nbf: Value,
    #[serde(default)]
    iat: Value,
}

/// A claim as a date, `Ok(None)` when absent (or `null`).
fn date_claim(
    value: &Value,
    name: &'static str,
    round_up: bool,
) -> Result<Option<u64>, IdentityError> {
    match value {
        Value::Null => Ok(None),
        v => numeric_date(v, round_up)
            .map(Some)
            .ok_or(IdentityError::InvalidClaim(name)),
    }
}

/// The claims' rules, on claims whose signature has been checked.
fn check_claims(claims: &Registered, room: &str, now: u64) -> Result<Identity, IdentityError> {
    let sub = match &claims.sub {
        Value::Null => return Err(IdentityError::MissingClaim("sub")),
        Value::String(s) if !s.is_empty() && s.chars().count() <= MAX_SUB_CHARS => s,
        _ => return Err(IdentityError::InvalidClaim("sub")),
    };
    let exp = date_claim(&claims.exp, "exp", false)?.ok_or(IdentityError::MissingClaim("exp"))?;
    let nbf = date_claim(&claims.nbf, "nbf", true)?;
    date_claim(&claims.iat, "iat", false)?;
    let for_room = match &claims.aud {
        Value::Null => return Err(IdentityError::MissingClaim("aud")),
        Value::String(aud) => aud == room,
        Value::Array(list) => {
            let mut found = false;
            for item in list {
                let aud = item.as_str().ok_or(IdentityError::InvalidClaim("aud"))?;
                found |= aud == room;
            }
            found
        }
        _ => return Err(IdentityError::InvalidClaim("aud")),
    };

    if now >= exp {
        return Err(IdentityError::Expired);
    }
    if nbf.is_some_and(|nbf| now < nbf) {
        return Err(IdentityError::NotYetValid);
    }
    if !for_room {
        return Err(IdentityError::WrongAudience);
    }
    Ok(Identity { sub: sub.clone() })
}
