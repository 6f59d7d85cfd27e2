//! The pre-queue draw, auditable: who joins before a room's opening is let
//! in by a draw anyone can recompute once the opening has come.
//!
//! Each room with an opening holds a secret seed (32 random bytes), created
//! when its `opens_at` is set (or at the first pre-queue join at the latest)
//! and kept with the room in the store. Its commitment, SHA-256 of the seed,
//! is public from then on; the seed itself once the opening has come. A
//! pre-queue place's draw value is HMAC-SHA256(key = seed, message = the
//! ticket's seq as decimal ASCII); the pre-queue is let in by draw value
//! ascending (bytes compared as unsigned), ties by seq ([`draw_order`]).
//!
//! The line's scores (both stores):
//! - a place taken after the opening: [`PREQUEUE_SPAN`] + member, behind
//!   every pre-queue place;
//! - a pre-queue place before the draw is applied: [`AWAITING_DRAW`] +
//!   member (its order means nothing; nobody is let in, and no position is
//!   told, while one waits so);
//! - a pre-queue place once drawn: `lo + rank`, where `lo` is the first
//!   member of the pre-queue and `rank` the place's rank in the draw order
//!   of every member from `lo` to `hi` (the last pre-queue member), those
//!   who left included: a score that depends on the seed and the member
//!   only, so any instance may apply the draw, in any number of steps, any
//!   number of times, and always writes the same scores.
//!
//! The first tick after the opening applies the draw, and nobody is let in
//! until it is applied: the members' draw values are computed in Rust
//! (Redis's Lua has no HMAC), off the tick's path when there are many, and
//! the scores written in chunks. On Redis one instance at a time applies a
//! draw (a claim in the room hash, taken over after a minute).

use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};

use crate::store::PREQUEUE_SPAN;

/// A room's secret draw seed.
pub type Seed = [u8; 32];

/// A pre-queue place waits for the draw with the score `AWAITING_DRAW +
/// member`; a drawn one has a score below it.
pub const AWAITING_DRAW: u64 = PREQUEUE_SPAN / 2;

/// Scores written per Redis command while applying a draw: a command holds
/// Redis a few ms.
pub const DRAW_CHUNK: usize = 2_000;

/// What anyone may know of a room's draw ([`QueueStore::draw`](crate::QueueStore::draw)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DrawView {
    /// SHA-256 of the seed: fixed before the room's first pre-queue join.
    pub commitment: [u8; 32],
    /// The seed, once the opening has come; `None` before.
    pub seed: Option<Seed>,
    /// When the seed is (or was) revealed: the room's opening (unix ms).
    pub opens_at_ms: u64,
}

impl DrawView {
    /// The public view of `seed`, whose opening is `opens_at_ms`, at `now_ms`.
    pub fn of(seed: &Seed, opens_at_ms: u64, now_ms: u64) -> DrawView {
        DrawView {
            commitment: commitment(seed),
            seed: (now_ms >= opens_at_ms).then_some(*seed),
            opens_at_ms,
        }
    }
}

/// A fresh random seed.
pub fn new_seed() -> Seed {
    rand::random()
}

/// The seed's commitment: SHA-256 of its 32 bytes.
pub fn commitment(seed: &Seed) -> [u8; 32] {
    Sha256::digest(seed).into()
}

/// HMAC-SHA256 keyed with the seed, ready for many messages.
fn keyed(seed: &Seed) -> Hmac<Sha256> {
    // HMAC takes a key of any length: this never fails.
    <Hmac<Sha256> as KeyInit>::new_from_slice(seed).unwrap_or_else(|_| unreachable!())
}

fn value_with(mac: &Hmac<Sha256>, seq: u64) -> [u8; 32] {
    let mut mac = mac.clone();
    mac.update(itoa::Buffer::new().format(seq).as_bytes());
    mac.finalize().into_bytes().into()
}

/// The draw value of the place whose ticket carries `seq`.
pub fn draw_value(seed: &Seed, seq: u64) -> [u8; 32] {
    value_with(&keyed(seed), seq)
}

/// `seqs` in the order the draw lets them in: by draw value ascending,
/// ties by seq.
pub fn draw_order(seed: &Seed, seqs: impl IntoIterator<Item = u64>) -> Vec<u64> {
    let mac = keyed(seed);
    let mut valued: Vec<([u8; 32], u64)> = seqs
        .into_iter()
        .map(|seq| (value_with(&mac, seq), seq))
        .collect();
    valued.sort_unstable();
    valued.into_iter().map(|(_, seq)| seq).collect()
}

/// The drawn scores of the pre-queue members `lo..=hi` of a room whose
/// seqs are `base + member`: (member, score) in draw order, the scores
/// `lo, lo + 1, ...`.
pub(crate) fn drawn_scores(seed: &Seed, base: u64, lo: u64, hi: u64) -> Vec<(u64, u64)> {
    draw_order(seed, (lo..=hi).map(|m| base + m))
        .into_iter()
        .zip(lo..)
        .map(|(seq, score)| (seq - base, score))
        .collect()
}

/// A room's draw as the stores keep it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DrawState {
    pub seed: Seed,
    /// The opening that reveals the seed (unix ms).
    pub at_ms: u64,
    /// The first and last member of the pre-queue; `None` while nobody
    /// joined it.
    pub members: Option<(u64, u64)>,
    /// The last member `hi` whose draw has been applied.
    pub done: Option<u64>,
}

impl DrawState {
    /// Whether, at `now_ms`, the opening has come and the pre-queue is not
    /// drawn yet: nobody is let in meanwhile.
    pub fn pending(&self, now_ms: u64) -> Option<(u64, u64)> {
        let (lo, hi) = self.members?;
        (now_ms >= self.at_ms && self.done != Some(hi)).then_some((lo, hi))
    }

    /// The draw after the room's opening is set to `opens_at_ms` at
    /// `now_ms` (put_room.lua does the same). The seed stays while it is
    /// secret, whatever the opening becomes; a revealed seed is replaced
    /// (with `fresh`) only when a new opening is set in the future, so a
    /// new pre-queue is drawn with a seed nobody knows (a pre-queue not yet
    /// drawn then is drawn with it too). A room without an opening needs no
    /// seed; one that loses its opening reveals its seed now.
    pub fn put(
        old: Option<DrawState>,
        opens_at_ms: Option<u64>,
        now_ms: u64,
        fresh: Seed,
    ) -> Option<DrawState> {
        let new = |at_ms| DrawState {
            seed: fresh,
            at_ms,
            members: None,
            done: None,
        };
        match (old, opens_at_ms) {
            (None, None) => None,
            (None, Some(at)) => Some(new(at)),
            (Some(d), Some(at)) if now_ms < d.at_ms => Some(DrawState { at_ms: at, ..d }),
            (Some(d), Some(at)) if at > now_ms => {
                // A pre-queue the opening came for but no tick has drawn yet
                // is drawn with the new seed, with those who join before the
                // new opening.
                let undrawn = d.members.filter(|&(_, hi)| d.done != Some(hi));
                Some(DrawState {
                    members: undrawn,
                    ..new(at)
                })
            }
            (Some(d), None) if now_ms < d.at_ms => Some(DrawState { at_ms: now_ms, ..d }),
            (Some(d), _) => Some(d),
        }
    }
}

/// Lowercase hex of `bytes`.
pub fn to_hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

/// The 32 bytes a 64-digit hex text spells, or `None`.
pub fn seed_from_hex(text: &str) -> Option<Seed> {
    let bytes = text.as_bytes();
    if bytes.len() != 64 {
        return None;
    }
    let mut seed = [0u8; 32];
    for (out, pair) in seed.iter_mut().zip(bytes.chunks_exact(2)) {
        let digit = |c: u8| (c as char).to_digit(16);
        *out = u8::try_from(digit(*pair.first()?)? * 16 + digit(*pair.get(1)?)?).ok()?;
    }
    Some(seed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Seed {
        seed_from_hex(s).unwrap()
    }

    #[test]
    fn draw_values_match_known_vectors() {
        // Computed independently: python3 -c "import hmac,hashlib;
        // print(hmac.new(bytes(32), b'1', hashlib.sha256).hexdigest())"
        let zero = [0u8; 32];
        assert_eq!(
            to_hex(&draw_value(&zero, 1)),
            "41e0a9448f91edba4b05c6c2fc0edb1d6418aa292b5b2942637bec43a29b9523"
        );
        let seed = hex("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f");
        assert_eq!(
            to_hex(&draw_value(&seed, 1_764_000_000_000_042)),
            "67cb5784e9ea1554ef891a6c8ff85582864b315817d0f1c60c8e619bbf2888f9"
        );
        assert_eq!(
            to_hex(&commitment(&seed)),
            "630dcd2966c4336691125448bbb25b4ff412a49c732db2c8abc1b8581bd710dd"
        );
    }

    #[test]
    fn the_order_is_by_value_then_seq() {
        let seed = new_seed();
        let seqs: Vec<u64> = (1000..1300).collect();
        let order = draw_order(&seed, seqs.iter().copied());
        let values: Vec<[u8; 32]> = order.iter().map(|&s| draw_value(&seed, s)).collect();
        assert!(values.windows(2).all(|w| w[0] < w[1]));
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, seqs);
        // The same seq twice ties on its value and stays in seq order.
        assert_eq!(draw_order(&seed, [7, 7]), vec![7, 7]);
    }

    #[test]
    fn drawn_scores_rank_every_member_from_lo() {
        let seed = new_seed();
        let scores = drawn_scores(&seed, 5_000, 11, 40);
        assert_eq!(scores.len(), 30);
        let order: Vec<u64> = scores.iter().map(|&(m, _)| 5_000 + m).collect();
        assert_eq!(order, draw_order(&seed, 5_011..=5_040));
        assert!(scores.iter().map(|&(_, s)| s).eq(11..=40));
        assert!(scores.iter().all(|&(_, s)| s < AWAITING_DRAW));
    }

    #[test]
    fn a_secret_seed_stays_and_a_revealed_one_is_renewed_for_a_new_opening() {
        let (a, b) = ([1u8; 32], [2u8; 32]);
        assert_eq!(DrawState::put(None, None, 100, a), None);
        let d = DrawState::put(None, Some(500), 100, a).unwrap();
        assert_eq!((d.seed, d.at_ms), (a, 500));
        let joined = DrawState {
            members: Some((1, 9)),
            ..d
        };
        // Moved while secret: the same seed, the new opening.
        let moved = DrawState::put(Some(joined), Some(900), 200, b).unwrap();
        assert_eq!(
            (moved.seed, moved.at_ms, moved.members),
            (a, 900, Some((1, 9)))
        );
        // The opening removed: the seed is revealed now.
        let now = DrawState::put(Some(joined), None, 200, b).unwrap();
        assert_eq!((now.seed, now.at_ms), (a, 200));
        // Revealed and drawn, then a new opening ahead: a new seed, a new
        // pre-queue.
        let applied = DrawState {
            done: Some(9),
            ..joined
        };
        let again = DrawState::put(Some(applied), Some(2_000), 600, b).unwrap();
        assert_eq!((again.seed, again.at_ms, again.members), (b, 2_000, None));
        // The same, the opening past but the pre-queue not drawn yet: it is
        // drawn with the new seed.
        let undrawn = DrawState::put(Some(joined), Some(2_000), 600, b).unwrap();
        assert_eq!((undrawn.seed, undrawn.members), (b, Some((1, 9))));
        assert_eq!(undrawn.pending(2_000), Some((1, 9)));
        // Revealed, and the opening set to another past instant: kept.
        assert_eq!(
            DrawState::put(Some(joined), Some(550), 600, b),
            Some(joined)
        );
        assert_eq!(DrawState::put(Some(joined), None, 600, b), Some(joined));
    }

    #[test]
    fn the_seed_is_told_from_the_opening_on() {
        let seed = [3u8; 32];
        assert_eq!(DrawView::of(&seed, 500, 499).seed, None);
        assert_eq!(DrawView::of(&seed, 500, 500).seed, Some(seed));
        assert_eq!(DrawView::of(&seed, 500, 0).commitment, commitment(&seed));
        assert_eq!(seed_from_hex(&to_hex(&seed)), Some(seed));
        assert_eq!(seed_from_hex("zz"), None);
    }
}
