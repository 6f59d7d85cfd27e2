//! The join challenge's proof of work: seeds the origin issues and the
//! solutions clients send back. Both are checked with no store and in
//! bounded work (two SHA-256 blocks for the MAC, two for the solution).
//!
//! ```text
//! seed     = base64url_nopad(body || tag)
//! body     = version u8 (1) | kid_len u8 (1..=16) | kid | expires_at u64 | random [u8; 12]
//! tag      = HMAC-SHA256(key[kid], "wr-seed" 0x00 | room_len u8 | room | body)[..16]
//! solution = seed "." nonce            nonce: 1..=32 of [A-Za-z0-9_-]
//! solved   = SHA-256(solution, UTF-8) starts with `bits` zero bits
//! ```
//!
//! The room is under the MAC but not in the seed, so a seed for another
//! room fails as a forgery does. A seed's first 8 tag bytes name it
//! ([`Solved::key`]): one seed, one place.

use alloc::string::String;
use alloc::vec::Vec;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::Mac;
use sha2::{Digest, Sha256};

use crate::keyring::{HmacSha256, Keyring};
use crate::wire::MAX_KID_LEN;

/// Seed format version.
const VERSION: u8 = 1;
/// Bytes of randomness in a seed.
pub const SEED_RANDOM_LEN: usize = 12;
/// Bytes of the MAC kept in a seed.
const TAG_LEN: usize = 16;
/// Longest nonce accepted.
pub const MAX_NONCE_LEN: usize = 32;
/// Longest seed this crate issues: 1 + 1 + 16 + 8 + 12 + 16 bytes.
const MAX_SEED_BYTES: usize = 2 + MAX_KID_LEN + 8 + SEED_RANDOM_LEN + TAG_LEN;
/// Longest solution accepted (seed, `.`, nonce); longer is malformed
/// before any decoding.
pub const MAX_SOLUTION_LEN: usize = MAX_SEED_BYTES.div_ceil(3) * 4 + 1 + MAX_NONCE_LEN;

/// Why a solution was refused. Every one is the contract's 403
/// `challenge_failed`; the variants are for logs.
#[derive(thiserror::Error, Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChallengeError {
    /// Not `seed.nonce`, bad base64, bad lengths or an unknown version.
    #[error("the solution is not a seed and a nonce")]
    Malformed,
    /// The seed names a key this origin does not hold.
    #[error("the seed was signed with an unknown key")]
    UnknownKey,
    /// The MAC does not match: forged, or issued for another room.
    #[error("the seed is forged or for another room")]
    BadSignature,
    /// The seed's time is up.
    #[error("the seed has expired")]
    Expired,
    /// The hash has fewer leading zero bits than the room asks.
    #[error("the solution has too few zero bits")]
    TooFewBits,
}

/// A solution that passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Solved {
    /// Names the seed (its tag's first bytes): one seed, one place.
    pub key: [u8; 8],
    /// When the seed expires (unix seconds).
    pub expires_at: u64,
}

/// The seed's MAC input after the key: domain, room, body.
fn tag(mut mac: HmacSha256, room: &str, body: &[u8]) -> [u8; TAG_LEN] {
    mac.update(b"wr-seed\0");
    mac.update(&[u8::try_from(room.len()).unwrap_or(u8::MAX)]);
    mac.update(room.as_bytes());
    mac.update(body);
    let full = mac.finalize().into_bytes();
    let mut out = [0u8; TAG_LEN];
    for (o, f) in out.iter_mut().zip(full.iter()) {
        *o = *f;
    }
    out
}

impl Keyring {
    /// A seed for `room` that expires at `expires_at` (unix seconds),
    /// signed with the first key; `random` comes from the caller (this
    /// crate draws no randomness).
    #[must_use]
    pub fn sign_seed(&self, room: &str, expires_at: u64, random: [u8; SEED_RANDOM_LEN]) -> String {
        let Some((kid, mac)) = self.signing_mac() else {
            return String::new();
        };
        let mut bytes = Vec::with_capacity(MAX_SEED_BYTES);
        bytes.push(VERSION);
        bytes.push(u8::try_from(kid.len()).unwrap_or(0));
        bytes.extend_from_slice(kid.as_bytes());
        bytes.extend_from_slice(&expires_at.to_be_bytes());
        bytes.extend_from_slice(&random);
        let t = tag(mac, room, &bytes);
        bytes.extend_from_slice(&t);
        URL_SAFE_NO_PAD.encode(bytes)
    }

    /// Checks `solution` (`seed.nonce`) for `room` at `now` against `bits`
    /// leading zero bits. The seed's MAC is checked first (constant time),
    /// then its expiry, then the hash.
    ///
    /// # Errors
    ///
    /// The [`ChallengeError`] of the first check that fails.
    pub fn check_solution(
        &self,
        solution: &str,
        room: &str,
        bits: u8,
        now: u64,
    ) -> Result<Solved, ChallengeError> {
        if solution.len() > MAX_SOLUTION_LEN {
            return Err(ChallengeError::Malformed);
        }
        let (seed, nonce) = solution.split_once('.').ok_or(ChallengeError::Malformed)?;
        if nonce.is_empty()
            || nonce.len() > MAX_NONCE_LEN
            || !nonce
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err(ChallengeError::Malformed);
        }
        let mut buf = [0u8; MAX_SEED_BYTES];
        let len = URL_SAFE_NO_PAD
            .decode_slice(seed, &mut buf)
            .map_err(|_| ChallengeError::Malformed)?;
        let bytes = buf.get(..len).ok_or(ChallengeError::Malformed)?;
        let (&version, rest) = bytes.split_first().ok_or(ChallengeError::Malformed)?;
        let (&kid_len, rest) = rest.split_first().ok_or(ChallengeError::Malformed)?;
        let kid_len = usize::from(kid_len);
        if version != VERSION
            || kid_len == 0
            || kid_len > MAX_KID_LEN
            || rest.len() != kid_len + 8 + SEED_RANDOM_LEN + TAG_LEN
        {
            return Err(ChallengeError::Malformed);
        }
        let malformed = || ChallengeError::Malformed;
        let (kid, rest) = rest.split_at_checked(kid_len).ok_or_else(malformed)?;
        let (expiry, rest) = rest.split_first_chunk::<8>().ok_or_else(malformed)?;
        let given = rest.get(SEED_RANDOM_LEN..).ok_or_else(malformed)?;
        let body = bytes.get(..len - TAG_LEN).ok_or_else(malformed)?;
        let mac = self.mac_of(kid).ok_or(ChallengeError::UnknownKey)?;
        let want = tag(mac, room, body);
        if !bool::from(subtle::ConstantTimeEq::ct_eq(&want[..], given)) {
            return Err(ChallengeError::BadSignature);
        }
        let expires_at = u64::from_be_bytes(*expiry);
        if now >= expires_at {
            return Err(ChallengeError::Expired);
        }
        if zero_bits(&Sha256::digest(solution.as_bytes())) < u32::from(bits) {
            return Err(ChallengeError::TooFewBits);
        }
        let (key, _) = want.split_first_chunk::<8>().ok_or_else(malformed)?;
        Ok(Solved {
            key: *key,
            expires_at,
        })
    }
}

/// Leading zero bits of `hash`.
#[must_use]
pub fn zero_bits(hash: &[u8]) -> u32 {
    let mut n = 0;
    for &b in hash {
        if b == 0 {
            n += 8;
        } else {
            return n + b.leading_zeros();
        }
    }
    n
}

/// Solves `seed` for `bits`: the first nonce (decimal, counting from
/// `start`) whose solution has enough zero bits, and how many hashes it
/// took. What a client does; here for tests, the rehearsal's bots and the
/// benchmarks. `None` when the count runs out (never, for bits ≤ 32 in
/// practice).
#[must_use]
pub fn solve(seed: &str, bits: u8, start: u64) -> Option<(String, u64)> {
    let mut prefix = Sha256::new();
    prefix.update(seed.as_bytes());
    prefix.update(b".");
    let mut digits = [0u8; 20];
    let mut tries = 0;
    for nonce in start..u64::MAX {
        tries += 1;
        let text = decimal(nonce, &mut digits);
        let hash = prefix.clone().chain_update(text.as_bytes()).finalize();
        if zero_bits(&hash) >= u32::from(bits) {
            return Some((String::from(text), tries));
        }
    }
    None
}

/// `n` in decimal, written into `buf` (a nonce a hash: no allocation).
fn decimal(mut n: u64, buf: &mut [u8; 20]) -> &str {
    let mut start = buf.len();
    for slot in buf.iter_mut().rev() {
        *slot = b'0' + (n % 10) as u8;
        n /= 10;
        start -= 1;
        if n == 0 {
            break;
        }
    }
    buf.get(start..)
        .and_then(|d| core::str::from_utf8(d).ok())
        .unwrap_or("0")
}
