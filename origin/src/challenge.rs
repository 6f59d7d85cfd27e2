//! The join challenge as the origin runs it (the room's `challenge`): the
//! proof-of-work seed a 428 asks a client to solve, and what a join's
//! answer, the `Waiting-Room-Challenge` header, proves to the store. The
//! seed and solution format is the token crate's (`token::Keyring::
//! check_solution`); the store keeps one place per solution
//! ([`queue::Proof`]).

use serde::Serialize;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use token::{ChallengeError, Keyring, SEED_RANDOM_LEN};
use utoipa::ToSchema;

use queue::Proof;
use room::{Challenge, ChallengeKind, RoomId};

/// How long a seed stays good, seconds: minutes, so a slow phone at the
/// highest difficulty still finishes, and a solution cannot be stockpiled
/// long before an on-sale.
pub const SEED_SECONDS: u64 = 300;

/// Longest answer read from the header: a Turnstile token is at most 2048
/// characters, a proof of work far less.
pub const MAX_ANSWER_LEN: usize = 2048;

/// What a 428 asks the client to do (the contract's `challenge` object).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Ask {
    /// Find a nonce such that SHA-256 of `seed.nonce` starts with `bits`
    /// zero bits, and join again with `Waiting-Room-Challenge: seed.nonce`.
    Pow {
        /// Issued by the origin, bound to the room, good until `expires_at`.
        seed: String,
        /// Leading zero bits the hash must have.
        bits: u8,
        /// When the seed stops being accepted (RFC 3339).
        #[schema(format = DateTime)]
        expires_at: String,
    },
    /// Solve Cloudflare's Turnstile widget with `site_key` and join again
    /// with its token in `Waiting-Room-Challenge`.
    Turnstile {
        /// The operator's Turnstile site key.
        site_key: String,
    },
}

/// Why a join's challenge did not pass.
#[derive(Debug)]
pub enum Refusal {
    /// No answer, and no standing place to give back: 428 with this ask.
    Required(Box<Ask>),
    /// A wrong answer: 403 `challenge_failed`, with why (for the message).
    Failed(&'static str),
    /// The check itself cannot be made (Turnstile's verify URL is down and
    /// the room fails closed): 503.
    Unavailable,
}

impl From<ChallengeError> for Refusal {
    fn from(e: ChallengeError) -> Refusal {
        Refusal::Failed(match e {
            ChallengeError::Malformed => "the answer is not a seed and a nonce",
            ChallengeError::UnknownKey | ChallengeError::BadSignature => {
                "the seed was not issued for this room"
            }
            ChallengeError::Expired => "the seed has expired: ask for a new one",
            ChallengeError::TooFewBits => "the hash has too few leading zero bits",
        })
    }
}

/// A fresh proof-of-work ask for `room` at `bits`, issued at `now`.
pub fn ask_pow(keys: &Keyring, room: &RoomId, bits: u8, now: u64) -> Ask {
    let expires = now + SEED_SECONDS;
    let random: [u8; SEED_RANDOM_LEN] = rand::random();
    Ask::Pow {
        seed: keys.sign_seed(room.as_str(), expires, random),
        bits,
        expires_at: rfc3339(expires),
    }
}

fn rfc3339(secs: u64) -> String {
    i64::try_from(secs)
        .ok()
        .and_then(|s| OffsetDateTime::from_unix_timestamp(s).ok())
        .and_then(|t| t.format(&Rfc3339).ok())
        .unwrap_or_default()
}

/// What a proof-of-work room's join shows: `answer` checked against the
/// room's difficulty, or, without one, [`Proof::Missing`] when the join may
/// have a standing place to get back (`standing`: it carries a ticket or an
/// account), else the ask.
pub fn pow_proof(
    keys: &Keyring,
    room: &RoomId,
    challenge: Challenge,
    answer: Option<&str>,
    standing: bool,
    now: u64,
) -> Result<Proof, Refusal> {
    debug_assert_eq!(challenge.kind, ChallengeKind::Pow);
    let Some(answer) = answer else {
        if standing {
            return Ok(Proof::Missing);
        }
        return Err(Refusal::Required(Box::new(ask_pow(
            keys,
            room,
            challenge.bits,
            now,
        ))));
    };
    let solved = keys.check_solution(answer, room.as_str(), challenge.bits, now)?;
    Ok(Proof::Solved {
        key: solved.key,
        expires_at_ms: solved.expires_at.saturating_mul(1000),
    })
}
