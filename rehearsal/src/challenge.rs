//! The join challenge as a client meets it: a 428 carries a proof-of-work
//! seed, the client finds a nonce and joins again with
//! `Waiting-Room-Challenge: <seed>.<nonce>`. People solve as the waiting
//! page does, one thread each (here a blocking task, off the runtime);
//! solving bots split the nonce space over threads of their own and count
//! the CPU time they spent.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::Instant;

use serde_json::Value;
use sha2::{Digest, Sha256};

/// A proof-of-work challenge as a 428 gives it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pow {
    /// The origin's seed.
    pub seed: String,
    /// Leading zero bits the hash needs.
    pub bits: u8,
}

impl Pow {
    /// The challenge in a 428's body (`{"challenge": {"kind": "pow", ...}}`);
    /// `None` for another kind or a body without one.
    pub fn from_body(body: &Value) -> Option<Pow> {
        let c = body.get("challenge")?;
        if c.get("kind").and_then(Value::as_str) != Some("pow") {
            return None;
        }
        let seed = c.get("seed").and_then(Value::as_str)?;
        let bits = c.get("bits").and_then(Value::as_u64)?;
        Some(Pow {
            seed: seed.to_owned(),
            bits: u8::try_from(bits).ok().filter(|b| *b <= 64)?,
        })
    }
}

/// What one solve cost.
#[derive(Clone, Debug, PartialEq)]
pub struct Solution {
    /// The header's value, `<seed>.<nonce>`.
    pub header: String,
    /// Hashes tried, over all threads.
    pub tries: u64,
    /// CPU seconds the solving threads spent (each thread's own clock).
    pub cpu_s: f64,
    /// Wall-clock seconds from start to answer.
    pub wall_s: f64,
}

/// Solves `pow` as the waiting page does: one thread counting up from 0,
/// on the runtime's blocking pool so no visitor's task is held up.
pub async fn solve_as_page(pow: Pow) -> Option<Solution> {
    tokio::task::spawn_blocking(move || {
        let (start, cpu0) = (Instant::now(), thread_cpu_s());
        let (nonce, tries) = token::solve(&pow.seed, pow.bits, 0)?;
        Some(Solution {
            header: format!("{}.{nonce}", pow.seed),
            tries,
            cpu_s: thread_cpu_s() - cpu0,
            wall_s: start.elapsed().as_secs_f64(),
        })
    })
    .await
    .ok()
    .flatten()
}

/// Solves `pow` at full speed on `threads` threads of its own, each
/// searching its own stretch of the nonce space until one finds a nonce.
/// The CPU time is the sum of the threads' own clocks
/// (`CLOCK_THREAD_CPUTIME_ID`), so other work on the machine does not
/// count. Blocking: call it from a blocking task.
pub fn solve_with_threads(pow: &Pow, threads: usize) -> Option<Solution> {
    let threads = threads.clamp(1, 64);
    let found = AtomicBool::new(false);
    let start = Instant::now();
    let stretch = u64::MAX / threads as u64;
    let results: Vec<(Option<u64>, u64, f64)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads as u64)
            .map(|k| {
                let found = &found;
                s.spawn(move || {
                    let cpu0 = thread_cpu_s();
                    let (nonce, tries) = search(pow, k * stretch, stretch, found);
                    (nonce, tries, thread_cpu_s() - cpu0)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or((None, 0, 0.0)))
            .collect()
    });
    let nonce = results.iter().find_map(|r| r.0)?;
    Some(Solution {
        header: format!("{}.{nonce}", pow.seed),
        tries: results.iter().map(|r| r.1).sum(),
        cpu_s: results.iter().map(|r| r.2).sum(),
        wall_s: start.elapsed().as_secs_f64(),
    })
}

/// Hashes tried between looks at whether another thread has found one.
const CHECK_EVERY: u64 = 4_096;

/// Tries nonces `from`, `from + 1`, ... (`len` of them) until one solves
/// `pow` or `found` is set; sets `found` when it finds one.
fn search(pow: &Pow, from: u64, len: u64, found: &AtomicBool) -> (Option<u64>, u64) {
    let mut prefix = Sha256::new();
    prefix.update(pow.seed.as_bytes());
    prefix.update(b".");
    let mut tries = 0;
    let mut digits = [0u8; 20];
    for nonce in from..from.saturating_add(len) {
        if tries % CHECK_EVERY == 0 && found.load(Relaxed) {
            break;
        }
        tries += 1;
        let hash = prefix
            .clone()
            .chain_update(decimal(nonce, &mut digits))
            .finalize();
        if token::zero_bits(&hash) >= u32::from(pow.bits) {
            found.store(true, Relaxed);
            return (Some(nonce), tries);
        }
    }
    (None, tries)
}

/// `n` in decimal ASCII, written into `buf` (no allocation per try).
fn decimal(mut n: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        if let Some(d) = buf.get_mut(i) {
            *d = b'0' + (n % 10) as u8;
        }
        n /= 10;
        if n == 0 || i == 0 {
            break;
        }
    }
    buf.get(i..).unwrap_or_default()
}

/// This thread's CPU time so far, in seconds.
pub fn thread_cpu_s() -> f64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    t.tv_sec as f64 + t.tv_nsec as f64 / 1e9
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: u64 = 1_700_000_000;

    fn seed(keys: &token::Keyring) -> String {
        keys.sign_seed("r", NOW + 300, [1; token::SEED_RANDOM_LEN])
    }

    #[test]
    fn nonces_are_written_in_decimal() {
        let mut buf = [0u8; 20];
        for n in [0, 7, 10, 1_234_567, u64::MAX] {
            assert_eq!(decimal(n, &mut buf), n.to_string().as_bytes());
        }
    }

    #[test]
    fn a_428_body_gives_its_pow_challenge() {
        let body = serde_json::json!({
            "error": {"code": "challenge_required", "message": "solve it"},
            "challenge": {"kind": "pow", "seed": "abc", "bits": 20, "expires_at": "2026-11-27T17:00:00Z"}
        });
        assert_eq!(
            Pow::from_body(&body),
            Some(Pow {
                seed: "abc".into(),
                bits: 20
            })
        );
        let turnstile = serde_json::json!({"challenge": {"kind": "turnstile", "site_key": "x"}});
        assert_eq!(Pow::from_body(&turnstile), None);
        assert_eq!(Pow::from_body(&Value::Null), None);
        let bad_bits = serde_json::json!({"challenge": {"kind": "pow", "seed": "a", "bits": 900}});
        assert_eq!(Pow::from_body(&bad_bits), None);
    }

    #[test]
    fn threads_find_a_solution_the_origin_accepts_and_count_their_cpu() {
        let keys = token::Keyring::parse("k1:rehearsal-test-secret-0123456789").unwrap();
        let pow = Pow {
            seed: seed(&keys),
            bits: 12,
        };
        for threads in [1, 2, 3] {
            let s = solve_with_threads(&pow, threads).expect("solved");
            assert!(s.header.starts_with(&pow.seed), "{}", s.header);
            assert!(keys.check_solution(&s.header, "r", 12, NOW).is_ok());
            assert!(s.tries >= 1 && s.cpu_s >= 0.0 && s.wall_s >= 0.0);
        }
        // Harder: the threads' clocks add up to real work.
        let hard = Pow { bits: 18, ..pow };
        let s = solve_with_threads(&hard, 2).expect("solved");
        assert!(keys.check_solution(&s.header, "r", 18, NOW).is_ok());
        assert!(s.cpu_s > 0.0, "{s:?}");
    }

    #[tokio::test]
    async fn a_person_solves_as_the_page_does() {
        let keys = token::Keyring::parse("k1:rehearsal-test-secret-0123456789").unwrap();
        let pow = Pow {
            seed: seed(&keys),
            bits: 10,
        };
        let s = solve_as_page(pow).await.expect("solved");
        assert!(keys.check_solution(&s.header, "r", 10, NOW).is_ok());
    }
}
