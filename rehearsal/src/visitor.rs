//! One virtual visitor, as one tokio task: it arrives, joins and polls
//! exactly as the waiting page (`pages/src/waiting/page.js`) does, may
//! abandon, and once admitted lists the seats, holds some, pays (perhaps
//! declined first) and confirms, or walks away and lets the hold run out.
//! Everything it saw goes into its [`VisitorLog`]; nothing here judges it.
//!
//! A visitor of an account (`--accounts`) is one of that account's
//! browsers: it joins with the account's identity token and shares the
//! account's one place with its other browsers, each with a ticket of its
//! own. It plays as any other; what its place's sharing causes (the place
//! ending when another browser of the account books, the account's seat
//! limit) is logged for the report to judge.
//!
//! In a room with a proof-of-work challenge a join is answered 428 with a
//! seed: the visitor solves it as the page does (off its task, on the
//! blocking pool) and joins again with the solution.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{Value, json};

use crate::challenge;
use crate::client::{Http, Jar, Reply};
use crate::rng::Rng;

/// The page's floor between polls, whatever a response says.
const MIN_POLL_MS: f64 = 1_000.0;
/// The page's backoff ceiling.
const MAX_BACKOFF_MS: f64 = 30_000.0;
/// What the page sends on status polls: the origin may hold them (up to
/// its own cap) while the sale's last seats are held.
const PREFER_WAIT: (&str, &str) = ("Prefer", "wait=20");
/// How often an admitted visitor looks again when every seat is held.
const SEAT_RETRY: Duration = Duration::from_secs(2);
/// Hold attempts on one seat list before listing again.
const HOLD_TRIES: u32 = 4;

/// What every visitor task shares.
pub struct Ctx {
    /// The visitors' HTTP client.
    pub http: Http,
    /// The room.
    pub room: String,
    /// The performance on sale.
    pub performance: String,
    /// The run's zero.
    pub start: Instant,
    /// Nobody acts past this.
    pub deadline: Instant,
    /// Live counts for the progress display.
    pub counters: Counters,
    /// The origin's keys, to read the seq off a ticket; `None`: join order
    /// is taken from the order the joins were answered.
    pub keys: Option<token::Keyring>,
}

impl Ctx {
    /// Milliseconds since the run's zero.
    pub fn now_ms(&self) -> u64 {
        self.start.elapsed().as_millis() as u64
    }

    /// Whether the run's time is up.
    pub fn past_deadline(&self) -> bool {
        Instant::now() >= self.deadline
    }

    /// Sleeps `ms`, never past the run's deadline.
    pub async fn sleep_ms(&self, ms: f64) {
        let until = (Instant::now() + Duration::from_millis(ms.max(0.0) as u64)).min(self.deadline);
        tokio::time::sleep_until(until.into()).await;
    }
}

/// Live counts, read by the progress display.
#[derive(Default)]
pub struct Counters {
    /// Visitors who have arrived.
    pub arrived: AtomicU64,
    /// In line now.
    pub waiting: AtomicU64,
    /// Admitted and still busy inside.
    pub inside: AtomicU64,
    /// Bookings confirmed.
    pub booked: AtomicU64,
    /// Failed answers, scenario-caused ones included.
    pub errors: AtomicU64,
    /// Every request the visitors sent.
    pub requests: AtomicU64,
    /// Seats in confirmed bookings.
    pub seats_sold: AtomicU64,
}

/// What one visitor is going to do, drawn before the run.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Its index (arrival order).
    pub index: usize,
    /// When it arrives, ms after the run's zero.
    pub arrive_ms: u64,
    /// Closes the tab after this long in line (no leave call), if still waiting.
    pub abandon_after_ms: Option<u64>,
    /// Seats it wants (1 to the hold maximum).
    pub seats: usize,
    /// Pays with a card that is declined first, then with a good one.
    pub declined_first: bool,
    /// Walks away once it holds seats: the hold runs out.
    pub lets_hold_expire: bool,
    /// Its own random stream.
    pub seed: u64,
    /// The account it is a browser of (`--accounts`), and that account's
    /// identity token.
    pub account: Option<(usize, Arc<str>)>,
}

/// How a visitor's visit ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Still going when the run's time ran out.
    #[default]
    TimedOut,
    /// Closed the tab while waiting.
    Abandoned,
    /// Read `sold_out` while waiting (or at the join).
    SoldOut,
    /// Read `closed`.
    Closed,
    /// Admitted, booked.
    Booked,
    /// Admitted, found nothing left to buy, left.
    NoSeat,
    /// Admitted, held seats and walked away.
    LetHoldExpire,
    /// Admitted, but the hold ended before the confirm.
    HoldExpired,
    /// Admitted, but the session ended before it could book.
    SessionEnded,
    /// Admitted, but its account's seat limit left it nothing to hold.
    AccountLimit,
    /// Gave up after failed answers.
    Failed,
}

/// What a status answer said of the seats at the visitor's turn
/// (`outlook`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outlook {
    /// Seats will probably be left.
    Likely,
    /// Too close to tell.
    Uncertain,
    /// The seats will probably be gone.
    Unlikely,
}

impl Outlook {
    /// The outlook a status body names; `None` for null or anything else.
    pub fn of(body: &Value) -> Option<Outlook> {
        match body.get("outlook").and_then(Value::as_str)? {
            "likely" => Some(Outlook::Likely),
            "uncertain" => Some(Outlook::Uncertain),
            "unlikely" => Some(Outlook::Unlikely),
            _ => None,
        }
    }
}

/// One place in line as a visitor's answers showed it (its ticket's seq),
/// ms after the run's zero. The place existed at some moment of every
/// answer that showed it alive, so at least from `first_ms` to `last_ms`.
#[derive(Clone, Debug, PartialEq)]
pub struct PlaceSeen {
    /// The place's seq.
    pub seq: u64,
    /// When the first answer that showed it alive came back.
    pub first_ms: u64,
    /// When the last request answered with it alive was sent.
    pub last_ms: u64,
    /// When the last request answered with it waiting was sent.
    pub waiting_sent_ms: Option<u64>,
    /// When the first answer saying it was admitted came back.
    pub admitted_ms: Option<u64>,
}

/// How soon a visitor heard of a change the origin dates (its admission).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Heard {
    /// From the change to the answer that told it, ms.
    pub delay_ms: u64,
    /// The answer came from a held poll.
    pub held: bool,
    /// The poll that told it was sent before the change (it was waiting
    /// for it, held or on its way); else it came between two polls.
    pub asked_before: bool,
}

impl Heard {
    /// Heard now of a change at `at_unix_ms`, by a poll sent `sent_ago_ms`
    /// ago.
    pub fn now(at_unix_ms: u64, sent_ago_ms: u64, held: bool) -> Heard {
        let now = unix_now_ms();
        Heard {
            delay_ms: now.saturating_sub(at_unix_ms),
            held,
            asked_before: now.saturating_sub(sent_ago_ms) < at_unix_ms,
        }
    }
}

/// The wall clock, unix ms (the origin's clock on a loopback run: the
/// same machine's).
fn unix_now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// An answer that said a browser's place or session had ended.
#[derive(Clone, Debug, PartialEq)]
pub struct PlaceEnd {
    /// When it came back, ms after the run's zero.
    pub at_ms: u64,
    /// The place the browser was on (its ticket's seq).
    pub seq: Option<u64>,
    /// `"200 expired"`, `"401 invalid_entry"`, `"409 hold_expired"`.
    pub kind: String,
}

/// Everything one visitor saw. Times are ms after the run's zero.
#[derive(Clone, Debug, Default)]
pub struct VisitorLog {
    /// Arrival order.
    pub index: usize,
    /// The account it is a browser of.
    pub account: Option<usize>,
    /// The seq (join order) of its current ticket, when the keys were given.
    pub seq: Option<u64>,
    /// Every place it held, in order (with the keys).
    pub places: Vec<PlaceSeen>,
    /// When the first answered join came back.
    pub joined_ms: Option<u64>,
    /// When the last request that still found it waiting (or the join) was sent.
    pub last_waiting_sent_ms: Option<u64>,
    /// When the first answer saying admitted came back.
    pub admitted_ms: Option<u64>,
    /// How soon a status poll told it it was let in, when the answer said
    /// when the store let it in (a join admitted at once is not a tick's).
    pub admission_heard: Option<Heard>,
    /// Its join's answer let it in (nobody waited, a slot was free).
    pub admitted_at_join: bool,
    /// When the last answer that said the room was paused came back.
    pub paused_read_ms: Option<u64>,
    /// The first answer after those that said the room was open again:
    /// when its request was sent, and when it came back.
    pub resume_read: Option<(u64, u64)>,
    /// Every ETA shown: (when, eta seconds).
    pub promises: Vec<(u64, u64)>,
    /// The first position shown after the opening.
    pub first_position: Option<(u64, u64)>,
    /// Its first answered join gave a place with no position: a pre-queue
    /// place (before the opening), ordered by the draw.
    pub joined_unplaced: bool,
    /// The outlook each waiting answer told, when it changed: (when the
    /// answer came back, the outlook; `None`: null). The last one is what
    /// the visitor was last told while it waited.
    pub outlooks: Vec<(u64, Option<Outlook>)>,
    /// Joins and statuses sent while not yet admitted.
    pub queue_requests: u64,
    /// When it stopped waiting (admitted, abandoned, told, out of time).
    pub left_line_ms: Option<u64>,
    /// When it first read `sold_out`.
    pub sold_out_ms: Option<u64>,
    /// When the poll that read `sold_out` was sent.
    pub sold_out_asked_ms: Option<u64>,
    /// When its hold was granted.
    pub held_ms: Option<u64>,
    /// When its booking was confirmed, and its seats.
    pub booked: Option<(u64, Vec<String>)>,
    /// Every booking API call (`/api/...`) answered: (when the answer came,
    /// how long it took in ms), what adaptive admission measures.
    pub booking_calls: Vec<(u64, u32)>,
    /// Failed answers by kind (`"409 seat_unavailable"`, `"timeout"`, ...).
    pub errors: BTreeMap<String, u64>,
    /// A browser of an account: answers that said its place or session
    /// had ended. Another browser of the account booking, or leaving, ends
    /// the place they share; the report tells those from failures.
    pub place_ended: Vec<PlaceEnd>,
    /// A browser of an account: answers its place's sharing caused, by
    /// kind. Every browser of the account on the place is one visitor to
    /// the booking API: another one's hold is `409 hold_exists` (it waits
    /// and tries again, as for held seats), and they spend one session's
    /// allowance of booking writes (`429 rate_limited`: it waits as told).
    pub shared: BTreeMap<String, u64>,
    /// The requests by which it ended its own place, with when they were
    /// sent and the place's seq: the confirm that booked (the first send
    /// of its key), a leave.
    pub ended_places: Vec<(u64, u64)>,
    /// Joins answered 428 `challenge_required`.
    pub challenges: u64,
    /// Joins answered 403 `challenge_failed`.
    pub challenges_failed: u64,
    /// Every proof of work solved: (wall seconds, CPU seconds).
    pub solves: Vec<(f64, f64)>,
    /// When the visit ended.
    pub ended_ms: Option<u64>,
    /// How it ended.
    pub outcome: Outcome,
}

/// A visitor's state while it plays.
struct Visit<'a> {
    ctx: &'a Ctx,
    plan: &'a Plan,
    jar: Jar,
    rng: Rng,
    log: VisitorLog,
    /// The ticket whose seq `log.seq` is.
    ticket_read: Option<String>,
    /// The solved challenge its joins carry (`<seed>.<nonce>`).
    solution: Option<String>,
}

/// What an answer showed of the visitor's place.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Alive {
    Waiting,
    Admitted,
    /// A booking call its session answered.
    Inside,
}

/// Plays one visitor to its end.
pub async fn play(ctx: Arc<Ctx>, plan: Plan) -> VisitorLog {
    tokio::time::sleep_until((ctx.start + Duration::from_millis(plan.arrive_ms)).into()).await;
    ctx.counters.arrived.fetch_add(1, Relaxed);
    let mut v = Visit {
        ctx: &ctx,
        plan: &plan,
        jar: Jar {
            identity: plan.account.as_ref().map(|(_, jwt)| jwt.clone()),
            ..Jar::default()
        },
        rng: Rng::new(plan.seed),
        ticket_read: None,
        solution: None,
        log: VisitorLog {
            index: plan.index,
            account: plan.account.as_ref().map(|(a, _)| *a),
            ..VisitorLog::default()
        },
    };
    if v.wait().await {
        ctx.counters.inside.fetch_add(1, Relaxed);
        v.log.outcome = v.book().await;
        ctx.counters.inside.fetch_sub(1, Relaxed);
    }
    v.log.ended_ms = Some(ctx.now_ms());
    v.log
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Step {
    Join,
    Status,
}

impl Visit<'_> {
    fn error(&mut self, kind: String) {
        self.ctx.counters.errors.fetch_add(1, Relaxed);
        *self.log.errors.entry(kind).or_insert(0) += 1;
    }

    /// An answer that said the place or session is over: for a browser of
    /// an account, kept with its time for the report to judge (another
    /// browser of the account may have booked); else a failed answer.
    fn place_ended(&mut self, kind: String) {
        if self.plan.account.is_some() {
            self.log.place_ended.push(PlaceEnd {
                at_ms: self.ctx.now_ms(),
                seq: self.log.seq,
                kind,
            });
        } else {
            self.error(kind);
        }
    }

    /// Notes what an answer (sent at `sent`, back at `got`) showed of the
    /// visitor's place: its seq is read off the ticket when that changed.
    fn saw_place(&mut self, sent: u64, got: u64, alive: Alive) {
        if self.jar.ticket != self.ticket_read {
            self.ticket_read.clone_from(&self.jar.ticket);
            self.log.seq = self.seq();
        }
        let Some(seq) = self.log.seq else { return };
        if self.log.places.last().is_none_or(|p| p.seq != seq) {
            self.log.places.push(PlaceSeen {
                seq,
                first_ms: got,
                last_ms: sent,
                waiting_sent_ms: None,
                admitted_ms: None,
            });
        }
        if let Some(p) = self.log.places.last_mut() {
            p.first_ms = p.first_ms.min(got);
            p.last_ms = p.last_ms.max(sent);
            match alive {
                Alive::Waiting => p.waiting_sent_ms = p.waiting_sent_ms.max(Some(sent)),
                Alive::Admitted => p.admitted_ms = p.admitted_ms.or(Some(got)),
                Alive::Inside => {}
            }
        }
    }

    async fn send(
        &mut self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        headers: &[(&str, &str)],
    ) -> Result<Reply, String> {
        self.ctx.counters.requests.fetch_add(1, Relaxed);
        let sent = Instant::now();
        let r = self
            .ctx
            .http
            .send(method, path, &mut self.jar, body, headers)
            .await;
        if path.starts_with("/api/") {
            let took = sent.elapsed().as_millis().min(u32::MAX as u128) as u32;
            self.log.booking_calls.push((self.ctx.now_ms(), took));
        }
        if let Err(kind) = &r {
            self.error(kind.clone());
        }
        r
    }

    /// The waiting page's loop. True when admitted.
    async fn wait(&mut self) -> bool {
        let room = self.ctx.room.clone();
        let (join, status) = (
            format!("/queue/{room}/join"),
            format!("/queue/{room}/status"),
        );
        let mut step = Step::Join;
        let mut retried_join = false;
        let mut failures: i32 = 0;
        let mut in_line = false;
        let set_in_line = |v: &mut Self, now: bool, was: &mut bool| {
            if now != *was {
                if now {
                    v.ctx.counters.waiting.fetch_add(1, Relaxed);
                } else {
                    v.ctx.counters.waiting.fetch_sub(1, Relaxed);
                }
                *was = now;
            }
        };
        let admitted = loop {
            if self.ctx.past_deadline() {
                self.log.outcome = Outcome::TimedOut;
                break false;
            }
            if let (Some(after), Some(joined)) = (self.plan.abandon_after_ms, self.log.joined_ms)
                && self.ctx.now_ms() >= joined + after
            {
                self.log.outcome = Outcome::Abandoned;
                break false;
            }
            let sent = self.ctx.now_ms();
            self.log.queue_requests += 1;
            let r = match (step, self.solution.clone()) {
                (Step::Join, None) => self.send(Method::POST, &join, None, &[]).await,
                (Step::Join, Some(sol)) => {
                    let header = [(token::CHALLENGE_HEADER, sol.as_str())];
                    self.send(Method::POST, &join, None, &header).await
                }
                (Step::Status, _) => self.send(Method::GET, &status, None, &[PREFER_WAIT]).await,
            };
            let got = self.ctx.now_ms();
            if let Ok(reply) = &r
                && step == Step::Join
            {
                match (reply.status, reply.code()) {
                    // Solve it and join again at once, as the page does.
                    // A second 428 for a solution sent is met as a failed
                    // answer (backoff), the next one solved.
                    (428, "challenge_required") => {
                        self.log.challenges += 1;
                        if self.solution.take().is_none()
                            && let Some(pow) = challenge::Pow::from_body(&reply.body)
                            && let Some(s) = challenge::solve_as_page(pow).await
                        {
                            self.log.solves.push((s.wall_s, s.cpu_s));
                            self.solution = Some(s.header);
                            continue;
                        }
                    }
                    // Counted, then met as any failed answer; the next
                    // join asks for a fresh seed.
                    (403, "challenge_failed") => {
                        self.log.challenges_failed += 1;
                        self.solution = None;
                    }
                    _ => {}
                }
            }
            match r {
                Ok(r) if r.status == 200 && r.body.get("state").is_some_and(Value::is_string) => {
                    failures = 0;
                    match r.body.pointer("/room/state").and_then(Value::as_str) {
                        Some("paused") => self.log.paused_read_ms = Some(got),
                        Some("open")
                            if self.log.paused_read_ms.is_some()
                                && self.log.resume_read.is_none() =>
                        {
                            self.log.resume_read = Some((sent, got));
                        }
                        _ => {}
                    }
                    if self.log.joined_ms.is_none() {
                        self.log.joined_ms = Some(got);
                        self.log.joined_unplaced = r.body.get("state").and_then(Value::as_str)
                            == Some("waiting")
                            && r.body.get("position").is_some_and(Value::is_null);
                        // A join that gave a new place: admitted after it
                        // was sent. One of an account may be given the
                        // account's place, which may have been admitted
                        // long before: only its waiting reads bound it.
                        if self.plan.account.is_none() {
                            self.log.last_waiting_sent_ms = Some(sent);
                        }
                    }
                    match r.body.get("state").and_then(Value::as_str).unwrap_or("") {
                        "admitted" => {
                            self.saw_place(sent, got, Alive::Admitted);
                            self.log.admitted_ms = Some(got);
                            self.log.admitted_at_join = step == Step::Join;
                            if step == Step::Status
                                && let Some(at) = r.admitted_at_ms
                            {
                                let ago = self.ctx.now_ms().saturating_sub(sent);
                                self.log.admission_heard = Some(Heard::now(at, ago, r.held));
                            }
                            break true;
                        }
                        "waiting" => {
                            self.saw_place(sent, got, Alive::Waiting);
                            set_in_line(self, true, &mut in_line);
                            self.log.last_waiting_sent_ms = Some(sent);
                            if let Some(eta) = r.body.get("eta_seconds").and_then(Value::as_u64) {
                                self.log.promises.push((got, eta));
                            }
                            let told = Outlook::of(&r.body);
                            if self.log.outlooks.last().is_none_or(|(_, o)| *o != told) {
                                self.log.outlooks.push((got, told));
                            }
                            if let (None, Some(p)) = (
                                self.log.first_position,
                                r.body.get("position").and_then(Value::as_u64),
                            ) {
                                self.log.first_position = Some((got, p));
                            }
                            let after = r
                                .body
                                .get("poll_after_ms")
                                .and_then(Value::as_f64)
                                .filter(|v| *v > 0.0)
                                .unwrap_or(5_000.0);
                            // After a held answer, at once (the floor counts
                            // from when the poll was sent), as the page does.
                            let delay = if r.held {
                                MIN_POLL_MS - self.ctx.now_ms().saturating_sub(sent) as f64
                            } else {
                                MIN_POLL_MS.max(self.rng.jitter(after, 0.2))
                            };
                            step = Step::Status;
                            self.ctx.sleep_ms(delay).await;
                        }
                        "expired" => {
                            // The page offers "join again"; a visitor clicks it.
                            // A used solution would give the ended place back.
                            self.place_ended("200 expired".into());
                            self.solution = None;
                            step = Step::Join;
                            retried_join = false;
                            let d = self.rng.jitter(500.0, 0.5);
                            self.ctx.sleep_ms(d).await;
                        }
                        "sold_out" => {
                            self.log.sold_out_ms = Some(got);
                            self.log.sold_out_asked_ms = Some(sent);
                            self.log.outcome = Outcome::SoldOut;
                            break false;
                        }
                        _ => {
                            self.log.outcome = Outcome::Closed;
                            break false;
                        }
                    }
                }
                // A join's bad ticket cookie has been cleared: try once more;
                // a status without a ticket joins.
                Ok(r) if r.status == 401 && (step == Step::Status || !retried_join) => {
                    self.error(r.kind());
                    retried_join |= step == Step::Join;
                    step = Step::Join;
                    let d = self.rng.jitter(500.0, 0.5);
                    self.ctx.sleep_ms(d).await;
                }
                other => {
                    if let Ok(r) = &other {
                        self.error(r.kind());
                    }
                    // Exponential backoff with full jitter, at least 1 s, at least Retry-After.
                    failures += 1;
                    let mut delay = MIN_POLL_MS
                        .max(self.rng.unit() * MAX_BACKOFF_MS.min(1000.0 * 2f64.powi(failures)));
                    if let Ok(Reply {
                        retry_after: Some(s),
                        ..
                    }) = other
                        && s > 0
                    {
                        delay = delay.max((s as f64 * 1000.0).min(MAX_BACKOFF_MS));
                    }
                    self.ctx.sleep_ms(delay).await;
                }
            }
        };
        set_in_line(self, false, &mut in_line);
        self.log.left_line_ms = Some(self.ctx.now_ms());
        admitted
    }

    /// The join order the ticket carries, read with the origin's keys.
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

    /// Inside: list, hold, pay, confirm.
    async fn book(&mut self) -> Outcome {
        let (room, perf) = (self.ctx.room.clone(), self.ctx.performance.clone());
        let seats_path = format!("/api/{room}/performances/{perf}/seats");
        let holds_path = format!("/api/{room}/performances/{perf}/holds");
        let mut available: Vec<String> = Vec::new();
        let mut tries = 0;
        let mut failures = 0;
        // Seats it asks for: fewer after its account's limit refused more.
        let mut want = self.plan.seats;
        let hold_id = loop {
            if self.ctx.past_deadline() {
                return Outcome::TimedOut;
            }
            if failures > 10 {
                return Outcome::Failed;
            }
            if available.is_empty() || tries >= HOLD_TRIES {
                tries = 0;
                let sent = self.ctx.now_ms();
                let r = match self.send(Method::GET, &seats_path, None, &[]).await {
                    Ok(r) => r,
                    Err(_) => {
                        failures += 1;
                        self.ctx.sleep_ms(1000.0).await;
                        continue;
                    }
                };
                match r.status {
                    200 => self.saw_place(sent, self.ctx.now_ms(), Alive::Inside),
                    _ if r.session_over() => return Outcome::SessionEnded,
                    // The session's map loads are limited: wait as told,
                    // as the seat page does.
                    429 if r.code() == "rate_limited" => {
                        let wait = r.retry_after.unwrap_or(1).clamp(1, 60);
                        self.ctx.sleep_ms(wait as f64 * 1000.0).await;
                        continue;
                    }
                    _ => {
                        self.error(r.kind());
                        failures += 1;
                        self.ctx.sleep_ms(1000.0).await;
                        continue;
                    }
                }
                let seats = r
                    .body
                    .get("seats")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                available = seats
                    .iter()
                    .filter(|s| seat_state(s) == Some("available"))
                    .filter_map(|s| s.get("id").and_then(Value::as_str).map(str::to_owned))
                    .collect();
                if available.is_empty() {
                    if !seats.is_empty() && seats.iter().all(|s| seat_state(s) == Some("booked")) {
                        self.leave().await;
                        return Outcome::NoSeat;
                    }
                    // Everything is held: holds run out, so look again soon.
                    self.ctx.sleep_ms(SEAT_RETRY.as_millis() as f64).await;
                    continue;
                }
            }
            // Seats together: a run of the list from a random place.
            let k = want.min(available.len()).max(1);
            let from = self.rng.below((available.len() - k + 1) as u64) as usize;
            let pick: Vec<String> = available.iter().skip(from).take(k).cloned().collect();
            tries += 1;
            let sent = self.ctx.now_ms();
            let r = match self
                .send(
                    Method::POST,
                    &holds_path,
                    Some(&json!({"seats": pick})),
                    &[],
                )
                .await
            {
                Ok(r) => r,
                Err(_) => {
                    failures += 1;
                    continue;
                }
            };
            match (r.status, r.code()) {
                (201, _) => {
                    self.saw_place(sent, self.ctx.now_ms(), Alive::Inside);
                    self.log.held_ms = Some(self.ctx.now_ms());
                    break r
                        .body
                        .get("hold_id")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned();
                }
                _ if r.session_over() => return Outcome::SessionEnded,
                (409, "seat_unavailable") => {
                    self.error(r.kind());
                    available.retain(|s| !pick.contains(s));
                }
                // The account holds and has booked what it may with its
                // other browsers: one seat fewer, as a person told so
                // would, until not even one is left to it.
                (409, "account_limit") => {
                    self.error(r.kind());
                    if k <= 1 {
                        return Outcome::AccountLimit;
                    }
                    want = k - 1;
                }
                // Another browser of the account holds seats for the place
                // they share: it books them, or lets them go.
                (409, "hold_exists") if self.plan.account.is_some() => {
                    *self.log.shared.entry(r.kind()).or_insert(0) += 1;
                    self.ctx.sleep_ms(SEAT_RETRY.as_millis() as f64).await;
                }
                (429, "rate_limited") => {
                    // The session's allowance of booking writes: wait as told.
                    if self.plan.account.is_some() {
                        *self.log.shared.entry(r.kind()).or_insert(0) += 1;
                    } else {
                        self.error(r.kind());
                    }
                    let wait = r.retry_after.unwrap_or(1).max(1);
                    self.ctx.sleep_ms(wait as f64 * 1000.0).await;
                }
                _ => {
                    self.error(r.kind());
                    failures += 1;
                    self.ctx.sleep_ms(500.0).await;
                }
            }
        };
        if self.plan.lets_hold_expire {
            return Outcome::LetHoldExpire;
        }
        let confirm = format!("/api/{room}/holds/{hold_id}/confirm");
        let index = self.plan.index;
        if self.plan.declined_first {
            let key = format!("rehearsal-{index}-declined");
            let body = json!({"payment_token": "tok_decline"});
            if let Ok(r) = self
                .send(
                    Method::POST,
                    &confirm,
                    Some(&body),
                    &[("Idempotency-Key", &key)],
                )
                .await
                && r.status != 201
            {
                if r.session_over() {
                    self.place_ended(r.kind());
                } else if self.plan.account.is_some()
                    && r.status == 429
                    && r.code() == "rate_limited"
                {
                    // The shared session's allowance: the good card follows.
                    *self.log.shared.entry(r.kind()).or_insert(0) += 1;
                } else {
                    self.error(r.kind());
                }
            }
        }
        let key = format!("rehearsal-{index}");
        let body = json!({"payment_token": "tok_rehearsal"});
        // A lost answer is sent again with the same key: never paid twice.
        // The booking may have been made by the first of them.
        let first_sent = self.ctx.now_ms();
        let mut tries = 0;
        while tries < 5 {
            tries += 1;
            if self.ctx.past_deadline() {
                return Outcome::TimedOut;
            }
            let Ok(r) = self
                .send(
                    Method::POST,
                    &confirm,
                    Some(&body),
                    &[("Idempotency-Key", &key)],
                )
                .await
            else {
                self.ctx.sleep_ms(1000.0).await;
                continue;
            };
            match (r.status, r.code()) {
                (201, _) => {
                    let seats = r
                        .body
                        .get("seats")
                        .and_then(Value::as_array)
                        .map(|a| {
                            a.iter()
                                .filter_map(|s| s.as_str().map(str::to_owned))
                                .collect()
                        })
                        .unwrap_or_default();
                    let n = Vec::len(&seats) as u64;
                    if let Some(seq) = self.log.seq {
                        self.log.ended_places.push((first_sent, seq));
                    }
                    self.log.booked = Some((self.ctx.now_ms(), seats));
                    self.ctx.counters.booked.fetch_add(1, Relaxed);
                    self.ctx.counters.seats_sold.fetch_add(n, Relaxed);
                    return Outcome::Booked;
                }
                (409, "hold_expired") => {
                    self.place_ended(r.kind());
                    return Outcome::HoldExpired;
                }
                _ if r.session_over() => {
                    self.place_ended(r.kind());
                    return Outcome::SessionEnded;
                }
                (402, "payment_declined") => {
                    // The good card is never declined: tallied apart from
                    // the planned declines, so it reads as unexpected.
                    self.error(format!("{} (good card)", r.kind()));
                    self.ctx.sleep_ms(1000.0).await;
                }
                // The shared session's allowance of booking writes, spent
                // by the account's other browsers: wait as told, a try
                // not counted.
                (429, "rate_limited") if self.plan.account.is_some() => {
                    *self.log.shared.entry(r.kind()).or_insert(0) += 1;
                    tries -= 1;
                    let wait = r.retry_after.unwrap_or(1).clamp(1, 60);
                    self.ctx.sleep_ms(wait as f64 * 1000.0).await;
                }
                _ => {
                    self.error(r.kind());
                    self.ctx.sleep_ms(1000.0).await;
                }
            }
        }
        Outcome::Failed
    }

    async fn leave(&mut self) {
        let path = format!("/queue/{}/leave", self.ctx.room);
        if let Some(seq) = self.log.seq {
            self.log.ended_places.push((self.ctx.now_ms(), seq));
        }
        if let Ok(r) = self.send(Method::POST, &path, None, &[]).await
            && r.status != 204
        {
            self.error(r.kind());
        }
    }
}

/// A seat's `state` in the seat list, if it has one that is a string.
fn seat_state(seat: &Value) -> Option<&str> {
    seat.get("state").and_then(Value::as_str)
}
