//! The pre-queue draw, checked from outside as anyone can: the room's
//! commitment read before the first pre-queue join, its seed read after the
//! opening (`GET /queue/{room}/draw`), the order recomputed here from the
//! seed and the tickets' sequence numbers (HMAC-SHA256, key = seed, message
//! = the seq in decimal ASCII; by value ascending, ties by seq) with this
//! tool's own HMAC, not the origin's code.
//!
//! Two uses: the rehearsal with `--opens-in` judges the pre-queue's
//! admissions against the recomputed order (the report's fairness, order
//! `draw`, and its `draw` section), and `--check-draw FILE` compares any
//! list of admitted seqs (one a line, in the order they were let in) with
//! it.

use hmac::{Hmac, KeyInit, Mac};
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::error::Error;
use crate::stats;

/// What the draw route said at one moment.
#[derive(Clone, Debug, Serialize)]
pub struct Published {
    /// SHA-256 of the seed, hex.
    pub commitment: String,
    /// The seed, hex; `None` before the opening.
    pub seed: Option<String>,
    /// The opening (RFC 3339).
    pub opens_at: String,
}

/// Reads `GET {url}/queue/{room}/draw`.
pub async fn fetch(url: &str, room: &str) -> Result<Published, Error> {
    let uri = format!("{}/queue/{room}/draw", url.trim_end_matches('/'));
    let failed = |e: String| Error::Config(format!("GET {uri}: {e}"));
    let response = reqwest::get(&uri)
        .await
        .map_err(|e| failed(e.to_string()))?;
    let status = response.status();
    let body: Value = response.json().await.map_err(|e| failed(e.to_string()))?;
    if !status.is_success() {
        return Err(failed(format!("{status}: {body}")));
    }
    let text = |k: &str| body.get(k).and_then(Value::as_str).map(str::to_owned);
    Ok(Published {
        commitment: text("commitment").ok_or_else(|| failed("no commitment".into()))?,
        seed: text("seed"),
        opens_at: text("opens_at").unwrap_or_default(),
    })
}

/// The bytes a hex text spells, or `None`.
pub fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether `seed` (hex) hashes to `commitment` (hex).
pub fn opens(commitment: &str, seed: &str) -> bool {
    unhex(seed).is_some_and(|s| hex(&Sha256::digest(&s)) == commitment)
}

/// `seqs` in the draw's order: HMAC-SHA256(seed, seq) ascending, ties by seq.
pub fn order(seed: &[u8], seqs: &[u64]) -> Result<Vec<u64>, Error> {
    let mac = <Hmac<Sha256> as KeyInit>::new_from_slice(seed)
        .map_err(|e| Error::Config(format!("the draw's seed: {e}")))?;
    let mut valued: Vec<(Vec<u8>, u64)> = seqs
        .iter()
        .map(|&seq| {
            let mut m = mac.clone();
            m.update(seq.to_string().as_bytes());
            (m.finalize().into_bytes().to_vec(), seq)
        })
        .collect();
    valued.sort();
    Ok(valued.into_iter().map(|(_, seq)| seq).collect())
}

/// The draw as the rehearsal checked it.
#[derive(Debug, Serialize)]
pub struct DrawReport {
    /// The commitment read before the first visitor arrived.
    pub commitment_before: String,
    /// What the route said after the run (the seed told).
    pub after: Published,
    /// The seed hashes to the commitment read before, which did not change.
    pub commitment_kept: bool,
    /// Pre-queue visitors (joined before the opening) with a known seq.
    pub prequeue: usize,
}

/// Compares `admitted` (seqs in the order they were let in) with the order
/// the seed gives them.
#[derive(Debug, Serialize)]
pub struct Comparison {
    /// Seqs compared.
    pub admitted: usize,
    /// Kendall's tau between the recomputed order and the admitted one
    /// (1.0: the same order).
    pub kendall_tau: f64,
    /// The first place (0-based) where the two differ, if any.
    pub first_difference: Option<usize>,
}

/// `admitted` against the draw of `seed` over the same seqs.
pub fn compare(seed: &[u8], admitted: &[u64]) -> Result<Comparison, Error> {
    let drawn = order(seed, admitted)?;
    let rank: std::collections::HashMap<u64, usize> =
        drawn.iter().enumerate().map(|(i, &s)| (s, i)).collect();
    let pairs: Vec<(f64, f64)> = admitted
        .iter()
        .enumerate()
        .filter_map(|(i, s)| rank.get(s).map(|&r| (r as f64, i as f64)))
        .collect();
    Ok(Comparison {
        admitted: admitted.len(),
        kendall_tau: stats::kendall_tau(&pairs),
        first_difference: drawn.iter().zip(admitted).position(|(a, b)| a != b),
    })
}

/// `--check-draw FILE`: the seqs in FILE (one a line, in the order let
/// in) against the draw of `seed` (hex), or of the seed the route tells.
pub async fn check_file(
    path: &std::path::Path,
    seed: Option<&str>,
    url: &str,
    room: Option<&str>,
) -> Result<Value, Error> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::Config(format!("{}: {e}", path.display())))?;
    let admitted: Vec<u64> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|l| {
            l.parse()
                .map_err(|_| Error::Config(format!("not a sequence number: {l:?}")))
        })
        .collect::<Result<_, _>>()?;
    let published = match (seed, room) {
        (Some(_), _) => None,
        (None, Some(room)) => Some(fetch(url, room).await?),
        (None, None) => {
            return Err(Error::Config(
                "--check-draw needs --draw-seed, or --room to read the seed from".into(),
            ));
        }
    };
    let seed_hex = seed
        .map(str::to_owned)
        .or_else(|| published.as_ref().and_then(|p| p.seed.clone()))
        .ok_or_else(|| Error::Config("the room has not told its seed yet".into()))?;
    let seed = unhex(&seed_hex).ok_or_else(|| Error::Config("the seed is not hex".into()))?;
    let c = compare(&seed, &admitted)?;
    Ok(serde_json::json!({
        "seed": seed_hex,
        "commitment": published.as_ref().map(|p| p.commitment.clone()),
        "seed_matches_commitment": published.as_ref().map(|p| opens(&p.commitment, &seed_hex)),
        "admitted": c.admitted,
        "kendall_tau": c.kendall_tau,
        "same_order": c.first_difference.is_none(),
        "first_difference": c.first_difference,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_order_matches_known_draw_values() {
        // HMAC-SHA256 with 32 zero bytes (python3's hmac): "4" 3f472ae2...,
        // "1" 41e0a944..., "2" b18d08c0..., "3" bf2fe4cd..., "5" efc57828...
        let zero = [0u8; 32];
        assert_eq!(order(&zero, &[1, 2, 3, 4, 5]).unwrap(), vec![4, 1, 2, 3, 5]);
        let seed: Vec<u8> = (0u8..32).collect();
        assert!(opens(
            "630dcd2966c4336691125448bbb25b4ff412a49c732db2c8abc1b8581bd710dd",
            &hex(&seed)
        ));
    }

    #[test]
    fn a_list_in_the_draws_order_compares_as_one() {
        let seed = [7u8; 32];
        let seqs: Vec<u64> = (100..160).collect();
        let drawn = order(&seed, &seqs).unwrap();
        let same = compare(&seed, &drawn).unwrap();
        assert_eq!(same.kendall_tau, 1.0);
        assert_eq!(same.first_difference, None);
        let mut swapped = drawn.clone();
        swapped.swap(3, 4);
        let c = compare(&seed, &swapped).unwrap();
        assert!(c.kendall_tau < 1.0);
        assert_eq!(c.first_difference, Some(3));
    }
}
