//! Cloudflare Turnstile: the widget's tokens checked at the siteverify URL
//! (`--turnstile-verify-url`) with the operator's secret, and a memory of
//! the tokens that passed, so a token sent again (a retried join) passes
//! without a second call, which Cloudflare would refuse as a duplicate.
//! Knows HTTP as a client only; of the join, only what a token proves
//! ([`Turnstile::join_proof`]).

use std::collections::{HashMap, VecDeque};
use std::fmt::Write as _;
use std::net::IpAddr;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::challenge::{Ask, Refusal};
use queue::Proof;
use room::ChallengeFail;

/// Cloudflare's siteverify, the default `--turnstile-verify-url`.
pub const DEFAULT_VERIFY_URL: &str = "https://challenges.cloudflare.com/turnstile/v0/siteverify";

/// The longest wait for siteverify, connection included: a join waits on
/// it, and a visitor's retry is better than a join hanging on Cloudflare.
pub const VERIFY_TIMEOUT: Duration = Duration::from_secs(3);

/// The longest token Cloudflare issues; longer ones are refused unasked.
pub const MAX_TOKEN_LEN: usize = 2048;

/// How long a token lives at Cloudflare, and so how long one that passed is
/// remembered here.
pub const TOKEN_LIFE: Duration = Duration::from_secs(300);

/// Most tokens remembered at once (16 bytes of key and time each, plus the
/// maps' overhead: a few MB); past it the oldest are forgotten first.
pub const MAX_REMEMBERED: usize = 100_000;

/// The largest siteverify answer read; real ones are a few hundred bytes.
const MAX_ANSWER: usize = 16 * 1024;

/// What a token is worth.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Cloudflare passed it (now, or within its life on this instance).
    Passed,
    /// Cloudflare refused it, or it cannot be a token at all.
    Refused,
    /// No answer could be had: unreachable, too slow, an error status, an
    /// unreadable answer, or an origin without a secret. The room's
    /// `challenge_fail` decides what the join does.
    Unavailable,
}

/// The key a token is remembered by: the first 8 bytes of its SHA-256.
/// The join keys "one solution, one place" on it too.
pub fn key(token: &str) -> [u8; 8] {
    let digest = Sha256::digest(token.as_bytes());
    let mut key = [0u8; 8];
    key.copy_from_slice(digest.get(..8).unwrap_or(&[0u8; 8]));
    key
}

/// The idempotency key sent with a token: a UUID made of the token's hash,
/// so a retry after a timeout (here or on another instance) is answered as
/// the first call was rather than as a duplicate.
fn idempotency_key(token: &str) -> String {
    let digest = Sha256::digest(format!("idempotency:{token}").as_bytes());
    let mut b = [0u8; 16];
    b.copy_from_slice(digest.get(..16).unwrap_or(&[0u8; 16]));
    // Version 4 and the RFC 4122 variant, so it reads as any random UUID.
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let mut uuid = String::with_capacity(36);
    for (i, byte) in b.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            uuid.push('-');
        }
        let _ = write!(uuid, "{byte:02x}");
    }
    uuid
}

/// The verifier: the operator's keys, the URL, one HTTP client, and the
/// memory of passed tokens. Its `Debug` shows no secret.
pub struct Turnstile {
    secret: Option<String>,
    site_key: Option<String>,
    verify_url: String,
    /// The longest wait for one verdict ([`VERIFY_TIMEOUT`]).
    timeout: Duration,
    /// Built only with a secret: an origin without one never calls out.
    client: Option<reqwest::Client>,
    passed: Mutex<Memory>,
    /// The second (since start) a failure was last logged, so an outage
    /// logs once a second, not once a join.
    last_logged: AtomicU64,
    started: Instant,
}

impl std::fmt::Debug for Turnstile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Turnstile")
            .field("secret", &self.secret.as_ref().map(|_| "<redacted>"))
            .field("site_key", &self.site_key)
            .field("verify_url", &self.verify_url)
            .finish_non_exhaustive()
    }
}

/// The part of siteverify's answer read.
#[derive(Deserialize)]
struct Answer {
    success: bool,
    #[serde(rename = "error-codes", default)]
    error_codes: Vec<String>,
}

impl Turnstile {
    /// A verifier with these keys (empty ones count as unset) checking at
    /// `verify_url`.
    pub fn new(secret: Option<String>, site_key: Option<String>, verify_url: String) -> Turnstile {
        let secret = secret.filter(|s| !s.trim().is_empty());
        let site_key = site_key.filter(|s| !s.trim().is_empty());
        let client = secret.as_ref().and_then(|_| {
            reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .map_err(|e| tracing::error!(error = %e, "Turnstile: no HTTP client"))
                .ok()
        });
        Turnstile {
            secret,
            site_key,
            verify_url,
            timeout: VERIFY_TIMEOUT,
            client,
            passed: Mutex::new(Memory::new(MAX_REMEMBERED, TOKEN_LIFE)),
            last_logged: AtomicU64::new(u64::MAX),
            started: Instant::now(),
        }
    }

    /// A verifier with no keys: Turnstile rooms are refused.
    pub fn unconfigured() -> Turnstile {
        Turnstile::new(None, None, DEFAULT_VERIFY_URL.to_owned())
    }

    /// Waits at most `timeout` for siteverify rather than
    /// [`VERIFY_TIMEOUT`] (tests shorten it).
    pub fn with_timeout(mut self, timeout: Duration) -> Turnstile {
        self.timeout = timeout;
        self
    }

    /// The public key the widget is rendered with.
    pub fn site_key(&self) -> Option<&str> {
        self.site_key.as_deref()
    }

    /// Whether Turnstile rooms can work here: a secret to check tokens with
    /// and a site key for the widget.
    pub fn is_configured(&self) -> bool {
        self.secret.is_some() && self.site_key.is_some()
    }

    /// Checks `token` (the widget's response) from a visitor at `remote_ip`.
    /// A token that passed on this instance within its life passes again
    /// without a call.
    pub async fn verify(&self, token: &str, remote_ip: Option<IpAddr>) -> Verdict {
        if token.is_empty() || token.len() > MAX_TOKEN_LEN {
            return Verdict::Refused;
        }
        let key = key(token);
        if self.memory().seen(&key, Instant::now()) {
            return Verdict::Passed;
        }
        let (Some(secret), Some(client)) = (&self.secret, &self.client) else {
            self.log_failure("no --turnstile-secret");
            return Verdict::Unavailable;
        };
        let verdict = match self.siteverify(client, secret, token, remote_ip).await {
            Ok(verdict) => verdict,
            Err(why) => {
                self.log_failure(&why);
                Verdict::Unavailable
            }
        };
        if verdict == Verdict::Passed {
            self.memory().remember(key, Instant::now());
        }
        verdict
    }

    /// What a Turnstile room's join shows the store: with a token, its
    /// verdict (passed: the token names the place, one token one place;
    /// refused: 403; unavailable: the room's `fail` decides, 503 or a place
    /// unchecked); without one, [`Proof::Missing`] when the join may have a
    /// standing place to get back (`standing`), else the ask (428).
    pub async fn join_proof(
        &self,
        fail: ChallengeFail,
        answer: Option<&str>,
        standing: bool,
        remote_ip: Option<IpAddr>,
        now_ms: u64,
    ) -> Result<Proof, Refusal> {
        let Some(token) = answer else {
            if standing {
                return Ok(Proof::Missing);
            }
            return Err(self.ask());
        };
        match self.verify(token, remote_ip).await {
            Verdict::Passed => Ok(Proof::Solved {
                key: key(token),
                expires_at_ms: now_ms.saturating_add(TOKEN_LIFE.as_millis() as u64),
            }),
            Verdict::Refused => Err(Refusal::Failed("Turnstile refused the token")),
            Verdict::Unavailable => match fail {
                ChallengeFail::Open => Ok(Proof::NotAsked),
                ChallengeFail::Closed => Err(Refusal::Unavailable),
            },
        }
    }

    /// The 428 of a Turnstile room: the widget's site key. Without one (a
    /// room made on another instance), nothing can be solved here: 503.
    pub fn ask(&self) -> Refusal {
        match &self.site_key {
            Some(site_key) => Refusal::Required(Box::new(Ask::Turnstile {
                site_key: site_key.clone(),
            })),
            None => Refusal::Unavailable,
        }
    }

    /// One call to siteverify; `Err` says why there is no verdict (never
    /// with the secret or the token in it).
    async fn siteverify(
        &self,
        client: &reqwest::Client,
        secret: &str,
        token: &str,
        remote_ip: Option<IpAddr>,
    ) -> Result<Verdict, String> {
        let idempotency = idempotency_key(token);
        let ip = remote_ip.map(|ip| ip.to_string());
        let mut form = vec![
            ("secret", secret),
            ("response", token),
            ("idempotency_key", idempotency.as_str()),
        ];
        if let Some(ip) = &ip {
            form.push(("remoteip", ip.as_str()));
        }
        let mut response = client
            .post(&self.verify_url)
            .timeout(self.timeout)
            .form(&form)
            .send()
            .await
            .map_err(|e| describe(e, self.timeout))?;
        if !response.status().is_success() {
            return Err(format!("siteverify answered {}", response.status()));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| describe(e, self.timeout))?
        {
            if body.len() + chunk.len() > MAX_ANSWER {
                return Err(format!("siteverify's answer is over {MAX_ANSWER} bytes"));
            }
            body.extend_from_slice(&chunk);
        }
        let answer: Answer = serde_json::from_slice(&body)
            .map_err(|e| format!("siteverify's answer is not its JSON: {e}"))?;
        if answer.success {
            return Ok(Verdict::Passed);
        }
        // Cloudflare's own trouble, or the operator's secret refused: not
        // the visitor's fault, so not a refusal of the visitor.
        for code in &answer.error_codes {
            if matches!(
                code.as_str(),
                "internal-error" | "missing-input-secret" | "invalid-input-secret"
            ) {
                return Err(format!("siteverify answered error code {code}"));
            }
        }
        Ok(Verdict::Refused)
    }

    fn memory(&self) -> std::sync::MutexGuard<'_, Memory> {
        self.passed.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Logs why a verdict could not be had, at most once a second.
    fn log_failure(&self, why: &str) {
        let now = self.started.elapsed().as_secs();
        if self.last_logged.swap(now, Ordering::Relaxed) != now {
            tracing::warn!(url = %self.verify_url, "Turnstile unavailable: {why}");
        }
    }
}

/// A reqwest error in a few words, without the URL's query (there is none
/// with a secret in it: the secret travels in the body).
fn describe(e: reqwest::Error, timeout: Duration) -> String {
    if e.is_timeout() {
        format!("no answer within {} ms", timeout.as_millis())
    } else if e.is_connect() {
        "cannot connect".to_owned()
    } else {
        format!("request failed: {}", e.without_url())
    }
}

/// Keys of tokens that passed, with when, oldest first; forgotten after
/// `life` or, past `cap`, oldest first.
#[derive(Debug)]
struct Memory {
    at: HashMap<[u8; 8], Instant>,
    order: VecDeque<([u8; 8], Instant)>,
    cap: usize,
    life: Duration,
}

impl Memory {
    fn new(cap: usize, life: Duration) -> Memory {
        Memory {
            at: HashMap::new(),
            order: VecDeque::new(),
            cap: cap.max(1),
            life,
        }
    }

    /// Whether `key` passed within `life` before `now`.
    fn seen(&mut self, key: &[u8; 8], now: Instant) -> bool {
        self.prune(now);
        self.at.contains_key(key)
    }

    /// Notes that `key` passed at `now` (a key already known keeps its
    /// first time: the token's life runs from its issue, not its reuse).
    fn remember(&mut self, key: [u8; 8], now: Instant) {
        self.prune(now);
        if self.at.contains_key(&key) {
            return;
        }
        while self.order.len() >= self.cap {
            self.forget_oldest();
        }
        self.at.insert(key, now);
        self.order.push_back((key, now));
    }

    fn prune(&mut self, now: Instant) {
        while let Some(&(_, at)) = self.order.front() {
            if now.saturating_duration_since(at) < self.life {
                break;
            }
            self.forget_oldest();
        }
    }

    fn forget_oldest(&mut self) {
        if let Some((key, _)) = self.order.pop_front() {
            self.at.remove(&key);
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.order.len()
    }
}

#[cfg(test)]
mod tests;
