//! One virtual visitor, as one tokio task: it arrives, joins and polls
//! exactly as the waiting page (`pages/src/waiting/page.js`) does, may
//! abandon, and once admitted lists the seats, holds some, pays (perhaps
//! declined first) and confirms, or walks away and lets the hold run out.
//! Everything it saw goes into its [`VisitorLog`]; nothing here judges it.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{Value, json};

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
}

/// How a visitor's visit ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Still going when the run's time ran out.
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
    /// Gave up after failed answers.
    Failed,
}

/// Everything one visitor saw. Times are ms after the run's zero.
#[derive(Clone, Debug)]
pub struct VisitorLog {
    /// Arrival order.
    pub index: usize,
    /// The ticket's seq (join order), when the keys were given.
    pub seq: Option<u64>,
    /// When the first answered join came back.
    pub joined_ms: Option<u64>,
    /// When the last request that still found it waiting (or the join) was sent.
    pub last_waiting_sent_ms: Option<u64>,
    /// When the first answer saying admitted came back.
    pub admitted_ms: Option<u64>,
    /// Every ETA shown: (when, eta seconds).
    pub promises: Vec<(u64, u64)>,
    /// The first position shown after the opening.
    pub first_position: Option<(u64, u64)>,
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
}

/// Plays one visitor to its end.
pub async fn play(ctx: Arc<Ctx>, plan: Plan) -> VisitorLog {
    tokio::time::sleep_until((ctx.start + Duration::from_millis(plan.arrive_ms)).into()).await;
    ctx.counters.arrived.fetch_add(1, Relaxed);
    let mut v = Visit {
        ctx: &ctx,
        plan: &plan,
        jar: Jar::default(),
        rng: Rng::new(plan.seed),
        log: VisitorLog {
            index: plan.index,
            seq: None,
            joined_ms: None,
            last_waiting_sent_ms: None,
            admitted_ms: None,
            promises: Vec::new(),
            first_position: None,
            queue_requests: 0,
            left_line_ms: None,
            sold_out_ms: None,
            sold_out_asked_ms: None,
            held_ms: None,
            booked: None,
            booking_calls: Vec::new(),
            errors: BTreeMap::new(),
            outcome: Outcome::TimedOut,
        },
    };
    if v.wait().await {
        ctx.counters.inside.fetch_add(1, Relaxed);
        v.log.outcome = v.book().await;
        ctx.counters.inside.fetch_sub(1, Relaxed);
    }
    v.log
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Step {
    Join,
    Status,
}

impl Visit<'_> {
    fn past_deadline(&self) -> bool {
        Instant::now() >= self.ctx.deadline
    }

    async fn sleep_ms(&self, ms: f64) {
        let until =
            (Instant::now() + Duration::from_millis(ms.max(0.0) as u64)).min(self.ctx.deadline);
        tokio::time::sleep_until(until.into()).await;
    }

    fn error(&mut self, kind: String) {
        self.ctx.counters.errors.fetch_add(1, Relaxed);
        *self.log.errors.entry(kind).or_insert(0) += 1;
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
            if self.past_deadline() {
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
            let r = match step {
                Step::Join => self.send(Method::POST, &join, None, &[]).await,
                Step::Status => self.send(Method::GET, &status, None, &[PREFER_WAIT]).await,
            };
            let got = self.ctx.now_ms();
            match r {
                Ok(r) if r.status == 200 && r.body.get("state").is_some_and(Value::is_string) => {
                    failures = 0;
                    if self.log.joined_ms.is_none() {
                        self.log.joined_ms = Some(got);
                        self.log.last_waiting_sent_ms = Some(sent);
                        self.log.seq = self.seq();
                    }
                    match r.body.get("state").and_then(Value::as_str).unwrap_or("") {
                        "admitted" => {
                            self.log.admitted_ms = Some(got);
                            break true;
                        }
                        "waiting" => {
                            set_in_line(self, true, &mut in_line);
                            self.log.last_waiting_sent_ms = Some(sent);
                            if let Some(eta) = r.body.get("eta_seconds").and_then(Value::as_u64) {
                                self.log.promises.push((got, eta));
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
                            self.sleep_ms(delay).await;
                        }
                        "expired" => {
                            // The page offers "join again"; a visitor clicks it.
                            self.error("200 expired".into());
                            step = Step::Join;
                            retried_join = false;
                            let d = self.rng.jitter(500.0, 0.5);
                            self.sleep_ms(d).await;
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
                    self.sleep_ms(d).await;
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
                    self.sleep_ms(delay).await;
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
        let hold_id = loop {
            if self.past_deadline() {
                return Outcome::TimedOut;
            }
            if failures > 10 {
                return Outcome::Failed;
            }
            if available.is_empty() || tries >= HOLD_TRIES {
                tries = 0;
                let r = match self.send(Method::GET, &seats_path, None, &[]).await {
                    Ok(r) => r,
                    Err(_) => {
                        failures += 1;
                        self.sleep_ms(1000.0).await;
                        continue;
                    }
                };
                match r.status {
                    200 => {}
                    _ if r.session_over() => return Outcome::SessionEnded,
                    // The session's map loads are limited: wait as told,
                    // as the seat page does.
                    429 if r.code() == "rate_limited" => {
                        let wait = r.retry_after.unwrap_or(1).clamp(1, 60);
                        self.sleep_ms(wait as f64 * 1000.0).await;
                        continue;
                    }
                    _ => {
                        self.error(r.kind());
                        failures += 1;
                        self.sleep_ms(1000.0).await;
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
                    self.sleep_ms(SEAT_RETRY.as_millis() as f64).await;
                    continue;
                }
            }
            // Seats together: a run of the list from a random place.
            let k = self.plan.seats.min(available.len()).max(1);
            let from = self.rng.below((available.len() - k + 1) as u64) as usize;
            let pick: Vec<String> = available.iter().skip(from).take(k).cloned().collect();
            tries += 1;
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
                (429, "rate_limited") => {
                    // The session's allowance of booking writes: wait as told.
                    self.error(r.kind());
                    let wait = r.retry_after.unwrap_or(1).max(1);
                    self.sleep_ms(wait as f64 * 1000.0).await;
                }
                _ => {
                    self.error(r.kind());
                    failures += 1;
                    self.sleep_ms(500.0).await;
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
                self.error(r.kind());
            }
        }
        let key = format!("rehearsal-{index}");
        let body = json!({"payment_token": "tok_rehearsal"});
        // A lost answer is sent again with the same key: never paid twice.
        for _ in 0..5 {
            if self.past_deadline() {
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
                self.sleep_ms(1000.0).await;
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
                    self.log.booked = Some((self.ctx.now_ms(), seats));
                    self.ctx.counters.booked.fetch_add(1, Relaxed);
                    self.ctx.counters.seats_sold.fetch_add(n, Relaxed);
                    return Outcome::Booked;
                }
                (409, "hold_expired") => {
                    self.error(r.kind());
                    return Outcome::HoldExpired;
                }
                _ if r.session_over() => {
                    self.error(r.kind());
                    return Outcome::SessionEnded;
                }
                (402, "payment_declined") => {
                    // The good card is never declined: tallied apart from
                    // the planned declines, so it reads as unexpected.
                    self.error(format!("{} (good card)", r.kind()));
                    self.sleep_ms(1000.0).await;
                }
                _ => {
                    self.error(r.kind());
                    self.sleep_ms(1000.0).await;
                }
            }
        }
        Outcome::Failed
    }

    async fn leave(&mut self) {
        let path = format!("/queue/{}/leave", self.ctx.room);
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
