//! Bots (`--bots`): clients that want places in a room with a join
//! challenge without paying for them as people do. Each joins like a person
//! (a ticket cookie jar of its own, an arrival on the curve) and then, by
//! its kind:
//!
//! - `never`: never solves; meets the 428 and tries again a few times;
//! - `reuse`: sends the one solution the first bot to meet a seed solved,
//!   as a farm would share one answer;
//! - `solve`: solves a seed of its own at full speed on `--bot-threads`
//!   threads, one bot at a time (one attacker's machine), and counts the
//!   CPU time spent.
//!
//! A bot that gets a place polls to keep it as the page does; admitted, it
//! leaves at once and never books, so what bots cost people is the places
//! ahead of them in line, not seats. Everything seen goes into its
//! [`BotLog`]; the report judges it.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use reqwest::Method;
use serde_json::Value;
use tokio::sync::{Mutex, Semaphore};

use crate::challenge::{self, Pow, Solution};
use crate::client::{Jar, Reply};
use crate::rng::Rng;
use crate::visitor::Ctx;

/// Joins a never-solving bot sends before it gives up.
pub const NEVER_TRIES: u32 = 5;
/// Rounds of seed, solve, join a solving bot makes before it gives up.
const SOLVE_TRIES: u32 = 3;
/// Failed polls in a row after which a bot gives its place up.
const MAX_FAILURES: u32 = 10;

/// How the bots treat the challenge.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BotKind {
    /// Never solves.
    Never,
    /// All send one solution, solved once.
    Reuse,
    /// Each solves its own seed on threads of its own.
    Solve,
}

/// What the bots share.
pub struct Bots {
    /// Their kind.
    pub kind: BotKind,
    /// Threads a solving bot uses.
    pub threads: usize,
    /// The one solution `reuse` bots send, once the first has solved it.
    shared: Mutex<Option<String>>,
    /// One solving bot at a time: the attacker's machine.
    machine: Semaphore,
}

impl Bots {
    /// Bots of `kind`, solving (if they do) on `threads` threads.
    pub fn new(kind: BotKind, threads: usize) -> Bots {
        Bots {
            kind,
            threads: threads.max(1),
            shared: Mutex::new(None),
            machine: Semaphore::new(1),
        }
    }
}

/// One bot's arrival and random stream.
#[derive(Clone, Debug)]
pub struct BotPlan {
    /// When it arrives, ms after the run's zero.
    pub arrive_ms: u64,
    /// Its own random stream.
    pub seed: u64,
}

/// A place a bot held (its ticket's seq), as its answers showed it.
#[derive(Clone, Debug, PartialEq)]
pub struct BotPlace {
    /// The place's seq.
    pub seq: u64,
    /// When the first answer showing it came back, ms after zero.
    pub first_ms: u64,
    /// When the last request answered with it alive was sent.
    pub last_ms: u64,
    /// Whether an answer said it was admitted.
    pub admitted: bool,
}

/// Everything one bot saw.
#[derive(Clone, Debug, Default)]
pub struct BotLog {
    /// Joins sent.
    pub joins: u64,
    /// Joins answered 428 `challenge_required`.
    pub answered_428: u64,
    /// Joins answered 403 `challenge_failed`.
    pub answered_403: u64,
    /// Joins answered 200 (a place, or an answer about one).
    pub answered_200: u64,
    /// Places held, by seq (read off the tickets with the origin's keys).
    pub places: Vec<BotPlace>,
    /// An answer said admitted.
    pub admitted: bool,
    /// Proofs of work solved by this bot.
    pub solves: u64,
    /// Hashes tried for them.
    pub hashes: u64,
    /// CPU seconds its solving threads spent.
    pub cpu_s: f64,
    /// Wall seconds its solves took.
    pub solve_wall_s: f64,
    /// Other answers by kind (`"429 rate_limited"`, `"timeout"`, ...).
    pub errors: BTreeMap<String, u64>,
}

struct Bot<'a> {
    ctx: &'a Ctx,
    bots: &'a Bots,
    jar: Jar,
    rng: Rng,
    log: BotLog,
}

/// Plays one bot to its end.
pub async fn play(ctx: Arc<Ctx>, bots: Arc<Bots>, plan: BotPlan) -> BotLog {
    tokio::time::sleep_until((ctx.start + Duration::from_millis(plan.arrive_ms)).into()).await;
    let mut bot = Bot {
        ctx: &ctx,
        bots: &bots,
        jar: Jar::default(),
        rng: Rng::new(plan.seed),
        log: BotLog::default(),
    };
    match bots.kind {
        BotKind::Never => bot.never().await,
        BotKind::Reuse => bot.reuse().await,
        BotKind::Solve => bot.solve().await,
    }
    bot.log
}

/// What a join's answer means to a bot.
enum Joined {
    /// A place (waiting or admitted): keep it.
    Place(Value),
    /// 428: the challenge to solve, if it is proof of work.
    Challenge(Option<Pow>),
    /// Anything else (403 included): counted.
    Other,
}

impl Bot<'_> {
    fn error(&mut self, kind: String) {
        *self.log.errors.entry(kind).or_insert(0) += 1;
    }

    async fn send(
        &mut self,
        method: Method,
        path: &str,
        headers: &[(&str, &str)],
    ) -> Result<Reply, String> {
        self.ctx.counters.requests.fetch_add(1, Relaxed);
        let r = self
            .ctx
            .http
            .send(method, path, &mut self.jar, None, headers)
            .await;
        if let Err(kind) = &r {
            self.error(kind.clone());
        }
        r
    }

    /// One join, with `solution` in the challenge header if given.
    async fn join(&mut self, solution: Option<&str>) -> Joined {
        let path = format!("/queue/{}/join", self.ctx.room);
        let header = solution.map(|s| [(token::CHALLENGE_HEADER, s)]);
        self.log.joins += 1;
        let sent = self.ctx.now_ms();
        let Ok(r) = self
            .send(Method::POST, &path, header.as_ref().map_or(&[], |h| &h[..]))
            .await
        else {
            return Joined::Other;
        };
        match (r.status, r.code()) {
            (200, _) if r.body.get("state").is_some_and(Value::is_string) => {
                self.log.answered_200 += 1;
                self.saw_place(sent, &r.body);
                Joined::Place(r.body)
            }
            (428, "challenge_required") => {
                self.log.answered_428 += 1;
                Joined::Challenge(Pow::from_body(&r.body))
            }
            (403, "challenge_failed") => {
                self.log.answered_403 += 1;
                Joined::Other
            }
            _ => {
                self.error(r.kind());
                Joined::Other
            }
        }
    }

    /// Notes the place an answer (to a request sent at `sent`) showed.
    fn saw_place(&mut self, sent: u64, body: &Value) {
        let state = body.get("state").and_then(Value::as_str).unwrap_or("");
        if !matches!(state, "waiting" | "admitted") {
            return;
        }
        let admitted = state == "admitted";
        self.log.admitted |= admitted;
        let Some(seq) = self.seq() else { return };
        let got = self.ctx.now_ms();
        match self.log.places.iter_mut().find(|p| p.seq == seq) {
            Some(p) => {
                p.first_ms = p.first_ms.min(got);
                p.last_ms = p.last_ms.max(sent);
                p.admitted |= admitted;
            }
            None => self.log.places.push(BotPlace {
                seq,
                first_ms: got,
                last_ms: sent,
                admitted,
            }),
        }
    }

    /// The join order on the bot's ticket, read with the origin's keys.
    fn seq(&self) -> Option<u64> {
        let keys = self.ctx.keys.as_ref()?;
        let ticket = self.jar.ticket.as_ref()?;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .ok()?
            .as_secs();
        keys.verify(ticket, token::Kind::Ticket, &self.ctx.room, now)
            .ok()
            .map(|c| c.seq)
    }

    /// Joins without ever solving, a few times, a few seconds apart.
    async fn never(&mut self) {
        for _ in 0..NEVER_TRIES {
            if self.ctx.past_deadline() {
                return;
            }
            if let Joined::Place(body) = self.join(None).await {
                // A room without a challenge: keep what it gave.
                return self.keep(body).await;
            }
            let d = self.rng.jitter(3_000.0, 0.5);
            self.ctx.sleep_ms(d).await;
        }
    }

    /// Sends the one shared solution, solving it first if nobody has.
    async fn reuse(&mut self) {
        for _ in 0..SOLVE_TRIES {
            if self.ctx.past_deadline() {
                return;
            }
            let bots = self.bots;
            let shared = bots.shared.lock().await.clone();
            let solution = match shared {
                Some(s) => s,
                None => match self.join(None).await {
                    Joined::Place(body) => return self.keep(body).await,
                    Joined::Challenge(Some(pow)) => {
                        let mut slot = bots.shared.lock().await;
                        match slot.clone() {
                            Some(s) => s,
                            None => {
                                let Some(s) = challenge::solve_as_page(pow).await else {
                                    return;
                                };
                                self.count(&s);
                                *slot = Some(s.header.clone());
                                s.header
                            }
                        }
                    }
                    _ => {
                        let d = self.rng.jitter(3_000.0, 0.5);
                        self.ctx.sleep_ms(d).await;
                        continue;
                    }
                },
            };
            if let Joined::Place(body) = self.join(Some(&solution)).await {
                return self.keep(body).await;
            }
            let d = self.rng.jitter(3_000.0, 0.5);
            self.ctx.sleep_ms(d).await;
        }
    }

    /// Asks for a seed, solves it on the bot's threads, joins with it.
    async fn solve(&mut self) {
        for _ in 0..SOLVE_TRIES {
            if self.ctx.past_deadline() {
                return;
            }
            let bots = self.bots;
            let solved = {
                // Held from the seed to the solution, so seeds are fresh.
                let Ok(_machine) = bots.machine.acquire().await else {
                    return;
                };
                match self.join(None).await {
                    Joined::Place(body) => return self.keep(body).await,
                    Joined::Challenge(Some(pow)) => {
                        let threads = self.bots.threads;
                        tokio::task::spawn_blocking(move || {
                            challenge::solve_with_threads(&pow, threads)
                        })
                        .await
                        .ok()
                        .flatten()
                    }
                    _ => None,
                }
            };
            if let Some(s) = solved {
                self.count(&s);
                if let Joined::Place(body) = self.join(Some(&s.header)).await {
                    return self.keep(body).await;
                }
            }
            let d = self.rng.jitter(3_000.0, 0.5);
            self.ctx.sleep_ms(d).await;
        }
    }

    fn count(&mut self, s: &Solution) {
        self.log.solves += 1;
        self.log.hashes += s.tries;
        self.log.cpu_s += s.cpu_s;
        self.log.solve_wall_s += s.wall_s;
    }

    /// Polls as the page does to keep the place; admitted, leaves.
    async fn keep(&mut self, mut body: Value) {
        let status = format!("/queue/{}/status", self.ctx.room);
        let mut failures = 0;
        loop {
            match body.get("state").and_then(Value::as_str).unwrap_or("") {
                "admitted" => return self.leave().await,
                "waiting" => {}
                // expired, sold out, closed: nothing more to keep.
                _ => return,
            }
            let after = body
                .get("poll_after_ms")
                .and_then(Value::as_f64)
                .filter(|v| *v > 0.0)
                .unwrap_or(5_000.0);
            let d = self.rng.jitter(after, 0.2).max(1_000.0);
            self.ctx.sleep_ms(d).await;
            loop {
                if self.ctx.past_deadline() || failures >= MAX_FAILURES {
                    return;
                }
                let sent = self.ctx.now_ms();
                match self
                    .send(Method::GET, &status, &[("Prefer", "wait=20")])
                    .await
                {
                    Ok(r) if r.status == 200 => {
                        failures = 0;
                        self.saw_place(sent, &r.body);
                        body = r.body;
                        break;
                    }
                    Ok(r) if r.status == 401 => {
                        self.error(r.kind());
                        return;
                    }
                    other => {
                        if let Ok(r) = &other {
                            self.error(r.kind());
                        }
                        failures += 1;
                        let d = 1_000.0 + self.rng.unit() * 4_000.0;
                        self.ctx.sleep_ms(d).await;
                    }
                }
            }
        }
    }

    async fn leave(&mut self) {
        let path = format!("/queue/{}/leave", self.ctx.room);
        if let Ok(r) = self.send(Method::POST, &path, &[]).await
            && r.status != 204
        {
            self.error(r.kind());
        }
    }
}

#[cfg(test)]
mod tests;
