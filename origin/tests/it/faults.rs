//! Redis going away under a running origin: a test-owned `redis-server`
//! frozen with SIGSTOP, and killed then restarted on the same port. The
//! queue API answers 503 `store_unavailable` within `--redis-timeout-ms`
//! instead of hanging, `/readyz` fails while `/healthz` stays up, the
//! promoter backs off and logs the outage once, and the service recovers on
//! its own, reloading its scripts into a restarted Redis.
//!
//! The booking database going away mid-sale: a test-owned `mariadbd`
//! stopped, restarted and frozen under a running origin (see
//! `the_booking_database_stopped_and_frozen_mid_sale`).
//!
//! Each test runs on a current-thread runtime, so every task it starts
//! (server, promoter, the Redis client's own) logs into the test's own
//! subscriber, which the test reads back.

use std::collections::HashSet;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::recording::Recording;
use crate::common::servers::{MariaDbServer, RedisServer, TempDir};
use crate::common::{
    Store, eventually, make_paused_room, make_room, spawn, state, test_store, unique_prefix,
};
use async_trait::async_trait;
use origin::booking::{
    BookingConfig, BookingStore, Faults, Payment, PaymentError, PerformanceSpec, SectionSpec,
};
use origin::queue::redis::{RedisConfig, RedisStore};
use origin::queue::{QueueStore, SeatsLeft};
use origin::room::{RoomId, RoomSettings};
use serde_json::Value;
use sqlx::{AnyConnection, Connection, Executor};

/// The store's deadline in these tests: short, so the tests are quick, and
/// far above a healthy Redis's answer time even on a loaded machine.
const TIMEOUT: Duration = Duration::from_millis(400);
/// Allowed beyond the deadline for the HTTP round trip on a noisy machine.
const SLACK: Duration = Duration::from_millis(350);
const TICK: Duration = Duration::from_millis(50);

const OUTAGE_WARNING: &str = "promoter cannot reach the store";
const RECOVERED: &str = "store reachable again";
/// The request path's outage line (rate-limited process-wide, so a test may
/// see none when the other test just logged one).
const REQUEST_WARNING: &str = "WARN origin::error: store unavailable";

/// Everything the test's subscriber writes.
#[derive(Clone, Default)]
struct Logs(Arc<Mutex<Vec<u8>>>);

impl Logs {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }

    fn count(&self, needle: &str) -> usize {
        self.text().matches(needle).count()
    }
}

impl Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Installs a subscriber for this thread (and so this current-thread
/// runtime's tasks) that writes into the returned `Logs`.
fn capture_logs() -> (Logs, tracing::subscriber::DefaultGuard) {
    let logs = Logs::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::INFO)
        .finish();
    (logs, tracing::subscriber::set_default(subscriber))
}

struct Setup {
    server: RedisServer,
    /// Counts the promoter's attempts: it reads the room list first on each
    /// attempt while the store is failing.
    store: Arc<Recording>,
    http: reqwest::Client,
    // Declared last: the server writes into it until it is dropped.
    _dir: TempDir,
}

fn setup() -> Setup {
    let dir = TempDir::new("faults");
    let server = RedisServer::start(&dir.0);
    let inner: Arc<dyn QueueStore> = Arc::new(
        RedisStore::connect(&RedisConfig {
            url: server.url(),
            prefix: unique_prefix(),
            timeout: TIMEOUT,
            cluster: false,
        })
        .unwrap(),
    );
    Setup {
        server,
        store: Arc::new(Recording::new(inner)),
        http: reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .unwrap(),
        _dir: dir,
    }
}

/// A request's status, body and how long it took.
async fn timed(req: reqwest::RequestBuilder) -> (u16, Value, Duration) {
    let start = Instant::now();
    let response = req.send().await.expect("the origin answers");
    let status = response.status().as_u16();
    let body = response.json().await.unwrap_or(Value::Null);
    (status, body, start.elapsed())
}

/// Asserts the queue API, /readyz and /healthz while Redis is away.
async fn assert_unavailable(http: &reqwest::Client, base: &str, room: &RoomId, ticket: &str) {
    let requests = [
        http.post(format!("{base}/queue/{room}/join")),
        http.get(format!("{base}/queue/{room}/status"))
            .bearer_auth(ticket),
        http.post(format!("{base}/queue/{room}/leave"))
            .bearer_auth(ticket),
    ];
    for req in requests {
        let (status, body, took) = timed(req).await;
        assert_eq!(status, 503, "{body}");
        assert_eq!(body["error"]["code"], "store_unavailable", "{body}");
        assert!(took < TIMEOUT + SLACK, "answered after {took:?}");
    }
    let (status, _, took) = timed(http.get(format!("{base}/readyz"))).await;
    assert_eq!(status, 503);
    assert!(took < TIMEOUT + SLACK, "/readyz answered after {took:?}");
    let (status, _, took) = timed(http.get(format!("{base}/healthz"))).await;
    assert_eq!(status, 200);
    assert!(took < SLACK, "/healthz answered after {took:?}");
}

/// Waits until another connection's `SELECT … FOR UPDATE` waits on a row
/// lock `locker` holds; that connection's id.
async fn waiting_on_lock(locker: &mut AnyConnection) -> i64 {
    let started = Instant::now();
    loop {
        let found: Option<(i64,)> = sqlx::query_as(
            "SELECT CAST(ID AS SIGNED) FROM information_schema.PROCESSLIST \
             WHERE INFO LIKE 'SELECT%FOR UPDATE%' AND ID <> CONNECTION_ID()",
        )
        .fetch_optional(&mut *locker)
        .await
        .unwrap();
        if let Some((id,)) = found {
            return id;
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the release never waited on the lock"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Polls a status until it answers 200 again; returns its body.
async fn wait_recovered(http: &reqwest::Client, base: &str, room: &RoomId, ticket: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let (status, body, _) = timed(
            http.get(format!("{base}/queue/{room}/status"))
                .bearer_auth(ticket),
        )
        .await;
        if status == 200 {
            return body;
        }
        assert!(Instant::now() < deadline, "no recovery: {status} {body}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_frozen_redis_is_503_within_the_timeout_and_the_origin_recovers() {
    let (logs, _guard) = capture_logs();
    let mut s = setup();
    let room = make_paused_room(s.store.as_ref(), "frozen", RoomSettings::default()).await;
    let origin = spawn(state(s.store.clone() as Arc<dyn QueueStore>), Some(TICK)).await;
    let base = origin.url("");
    let (_, first, _) = timed(s.http.post(format!("{base}/queue/{room}/join"))).await;
    let ticket = first["ticket"].as_str().unwrap().to_owned();
    assert_eq!(first["position"], 1);

    s.server.freeze();
    assert_unavailable(&s.http, &base, &room, &ticket).await;
    let attempts_before = s.store.room_lists();
    // A window to count the promoter's retries in (at most, not at least).
    tokio::time::sleep(Duration::from_secs(2)).await;
    let attempts = s.store.room_lists() - attempts_before;
    s.server.thaw();

    // Without backoff the promoter would try every tick plus timeout (about
    // 4 times in 2 s); with it, at most a few times.
    assert!(
        attempts <= 4,
        "the promoter retried {attempts} times in 2 s"
    );
    let body = wait_recovered(&s.http, &base, &room, &ticket).await;
    assert_eq!(body["position"], 1, "the place survived: {body}");
    // The promoter tries again within its longest pause (5 s).
    let deadline = Instant::now() + Duration::from_secs(8);
    while logs.count(RECOVERED) == 0 {
        assert!(Instant::now() < deadline, "the promoter did not resume");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (status, _, _) = timed(s.http.get(format!("{base}/readyz"))).await;
    assert_eq!(status, 200);
    assert_eq!(logs.count(OUTAGE_WARNING), 1, "{}", logs.text());
    assert!(logs.count(REQUEST_WARNING) <= 1, "{}", logs.text());
    assert!(!logs.text().contains("ERROR"), "{}", logs.text());
    assert_eq!(logs.count(RECOVERED), 1, "{}", logs.text());
    origin.stop().await;
}

#[tokio::test]
async fn a_killed_redis_is_503_and_a_restarted_one_is_used_again_scripts_and_all() {
    let (logs, _guard) = capture_logs();
    let mut s = setup();
    let settings = RoomSettings {
        capacity: 1,
        admit_per_second: 100.0,
        ..Default::default()
    };
    let room = make_room(s.store.as_ref(), "killed", settings.clone()).await;
    let origin = spawn(state(s.store.clone() as Arc<dyn QueueStore>), Some(TICK)).await;
    let base = origin.url("");
    let (_, inside, _) = timed(s.http.post(format!("{base}/queue/{room}/join"))).await;
    assert_eq!(inside["state"], "admitted");
    let ticket = inside["ticket"].as_str().unwrap().to_owned();

    s.server.kill();
    assert_unavailable(&s.http, &base, &room, &ticket).await;
    let attempts_before = s.store.room_lists();
    // A window to count the promoter's retries in (at most, not at least).
    tokio::time::sleep(Duration::from_secs(2)).await;
    let attempts = s.store.room_lists() - attempts_before;
    // A refused connection fails at once: without backoff that would be one
    // attempt every tick, 40 in 2 s.
    assert!(
        attempts <= 6,
        "the promoter retried {attempts} times in 2 s"
    );

    // Back, but frozen before the origin reconnected: the reconnection
    // itself hangs (the kernel accepts, nobody answers), and the deadline
    // still holds.
    s.server.restart();
    s.server.freeze();
    assert_unavailable(&s.http, &base, &room, &ticket).await;
    s.server.thaw();

    // Restarted without persistence: the room and its line are gone, and
    // the new server has none of the scripts (NOSCRIPT, then SCRIPT LOAD).
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let (status, body, _) = timed(
            s.http
                .get(format!("{base}/queue/{room}/status"))
                .bearer_auth(&ticket),
        )
        .await;
        if status == 404 {
            assert_eq!(body["error"]["code"], "unknown_room");
            break;
        }
        assert_eq!(status, 503, "{body}");
        assert!(Instant::now() < deadline, "the origin never reconnected");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The operator recreates the room (the --rooms file on a restart, or the
    // admin API); the origin itself was never restarted.
    s.store.put_room(&room, &settings).await.unwrap();
    let (status, fresh, _) = timed(s.http.post(format!("{base}/queue/{room}/join"))).await;
    assert_eq!(status, 200, "{fresh}");
    assert_eq!(fresh["state"], "admitted", "{fresh}");
    let (status, _, _) = timed(s.http.get(format!("{base}/readyz"))).await;
    assert_eq!(status, 200);

    let deadline = Instant::now() + Duration::from_secs(8);
    while logs.count(RECOVERED) == 0 {
        assert!(Instant::now() < deadline, "the promoter did not resume");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(logs.count(OUTAGE_WARNING), 1, "{}", logs.text());
    assert!(logs.count(REQUEST_WARNING) <= 1, "{}", logs.text());
    assert!(!logs.text().contains("ERROR"), "{}", logs.text());
    origin.stop().await;
}

/// The booking database's timeout in the MariaDB test: short, so the test
/// is quick; a booking request's deadline is twice this.
const DB_TIMEOUT: Duration = Duration::from_millis(500);
/// The payment timeout there.
const PAYMENT_TIMEOUT: Duration = Duration::from_secs(5);

/// A payment whose charges for `tok_wait_*` tokens wait until the test
/// opens that token's gate; remembers what it charged and refunded.
#[derive(Default)]
struct GatedPayment {
    open: Mutex<HashSet<String>>,
    opened: tokio::sync::Notify,
    /// Tokens whose charge waits at its gate (or waited).
    waiting: Mutex<Vec<String>>,
    /// Attempts charged, and refunded.
    charged: Mutex<Vec<String>>,
    refunded: Mutex<Vec<String>>,
}

impl GatedPayment {
    fn open(&self, token: &str) {
        self.open.lock().unwrap().insert(token.to_owned());
        self.opened.notify_waiters();
    }

    fn charged(&self) -> Vec<String> {
        self.charged.lock().unwrap().clone()
    }

    fn refunded(&self) -> Vec<String> {
        self.refunded.lock().unwrap().clone()
    }
}

#[async_trait]
impl Payment for GatedPayment {
    async fn charge(
        &self,
        attempt: &str,
        token: &str,
        _amount: u64,
    ) -> Result<String, PaymentError> {
        if token.starts_with("tok_wait") {
            self.waiting.lock().unwrap().push(token.to_owned());
            loop {
                let opened = self.opened.notified();
                if self.open.lock().unwrap().contains(token) {
                    break;
                }
                opened.await;
            }
        }
        self.charged.lock().unwrap().push(attempt.to_owned());
        Ok(format!("ch_{attempt}"))
    }

    async fn refund(&self, attempt: &str, _amount: u64) -> Result<(), PaymentError> {
        self.refunded.lock().unwrap().push(attempt.to_owned());
        Ok(())
    }
}

/// A visitor's calls to the running origin.
struct Shop {
    http: reqwest::Client,
    base: String,
    room: RoomId,
}

impl Shop {
    /// Joins; the ticket, and the entry token if admitted at once.
    async fn join(&self) -> (String, Option<String>) {
        let (status, body, _) = timed(
            self.http
                .post(format!("{}/queue/{}/join", self.base, self.room)),
        )
        .await;
        assert_eq!(status, 200, "{body}");
        let entry = body["entry_token"].as_str().map(str::to_owned);
        (body["ticket"].as_str().unwrap().to_owned(), entry)
    }

    async fn status(&self, ticket: &str) -> Value {
        let (status, body, _) = timed(
            self.http
                .get(format!("{}/queue/{}/status", self.base, self.room))
                .bearer_auth(ticket),
        )
        .await;
        assert_eq!(status, 200, "{body}");
        body
    }

    /// A booking API call under `/api/{room}`.
    fn api(&self, method: &str, path: &str, entry: &str) -> reqwest::RequestBuilder {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        self.http
            .request(method, format!("{}/api/{}{path}", self.base, self.room))
            .header("entry-token", entry)
    }

    fn seats(&self, entry: &str) -> reqwest::RequestBuilder {
        self.api("GET", "/performances/night/seats", entry)
    }

    fn hold(&self, entry: &str, seats: &[&str]) -> reqwest::RequestBuilder {
        self.api("POST", "/performances/night/holds", entry)
            .json(&serde_json::json!({ "seats": seats }))
    }

    fn confirm(&self, entry: &str, hold: &str, key: &str, token: &str) -> reqwest::RequestBuilder {
        self.api("POST", &format!("/holds/{hold}/confirm"), entry)
            .header("idempotency-key", key)
            .json(&serde_json::json!({ "payment_token": token }))
    }

    /// An admitted visitor's entry token and a hold of `seats`.
    async fn holding(&self, seats: &[&str]) -> (String, String) {
        let (_, entry) = self.join().await;
        let entry = entry.expect("admitted at once");
        let (status, body, _) = timed(self.hold(&entry, seats)).await;
        assert_eq!(status, 201, "{body}");
        (entry, body["hold_id"].as_str().unwrap().to_owned())
    }
}

/// Asserts a booking answer of the outage: 503 `store_unavailable`, and
/// within the request's deadline.
fn assert_booking_down(what: &str, answer: &(u16, Value, Duration), deadline: Duration) {
    let (status, body, took) = answer;
    assert_eq!(*status, 503, "{what}: {body}");
    assert_eq!(body["error"]["code"], "store_unavailable", "{what}: {body}");
    assert!(*took < deadline + SLACK, "{what} answered after {took:?}");
}

/// MariaDB stopped mid-sale (confirms paying, one stopped right after its
/// payment was recorded), restarted, then frozen and thawed, under a
/// running origin on the test's own `mariadbd`: booking answers 503
/// `store_unavailable` within its deadline (never a 500, never a hang,
/// also for a request the database froze under), the queue keeps serving,
/// the room admits nobody while its seats cannot be read and resumes after;
/// every charged payment ends in a booking or a recorded refund, no seat is
/// sold twice, and the sale goes on.
#[tokio::test]
async fn the_booking_database_stopped_and_frozen_mid_sale() {
    let (logs, _guard) = capture_logs();
    let dir = TempDir::new("mariadb");
    let server = Arc::new(Mutex::new(MariaDbServer::start(&dir.0)));
    let url = server.lock().unwrap().url("wr");
    sqlx::any::install_default_drivers();
    let admin_url = server.lock().unwrap().url("mysql");
    let mut conn = AnyConnection::connect(&admin_url).await.unwrap();
    conn.execute("CREATE DATABASE wr").await.unwrap();
    conn.close().await.unwrap();

    let payment = Arc::new(GatedPayment::default());
    let mut config = BookingConfig::new(Some(url.clone()), "");
    config.payment = payment.clone();
    config.payment_timeout = PAYMENT_TIMEOUT;
    config.timeout = DB_TIMEOUT;
    config.max_connections = 8;
    // Stops the server (SIGTERM) once, right after a payment is recorded
    // and before its booking is written: the worst moment for a sale.
    let armed = Arc::new(AtomicBool::new(false));
    // The stop blocks this test's one thread until mariadbd has exited:
    // requests in flight meanwhile are answered that much later.
    let stopping_ms = Arc::new(AtomicU64::new(0));
    let hook = {
        let (armed, server, stopping_ms) = (armed.clone(), server.clone(), stopping_ms.clone());
        move || {
            if armed.swap(false, Ordering::SeqCst) {
                let started = Instant::now();
                server.lock().unwrap().stop();
                stopping_ms.store(started.elapsed().as_millis() as u64, Ordering::SeqCst);
            }
        }
    };
    let booking = Arc::new(
        BookingStore::connect(&config, unix_ms())
            .await
            .unwrap()
            .with_faults(Faults {
                after_payment_recorded: Some(Arc::new(hook)),
            }),
    );
    let deadline = booking.deadline(false);
    assert_eq!(deadline, DB_TIMEOUT * 2);

    let t = test_store(Store::Redis);
    let settings = RoomSettings {
        capacity: 50,
        admit_per_second: 100.0,
        ..Default::default()
    };
    let room = make_room(
        t.store.as_ref(),
        &format!("dbfault-{:08x}", rand::random::<u32>()),
        settings,
    )
    .await;
    let spec = PerformanceSpec {
        title: "Night".into(),
        starts_at: time::OffsetDateTime::from_unix_timestamp(1_900_100_000).unwrap(),
        hold_seconds: 420,
        max_seats_per_hold: 4,
        max_seats_per_account: None,
        sections: vec![SectionSpec {
            name: "A".into(),
            rows: 1,
            seats_per_row: 20,
            price: 5000,
        }],
    };
    booking
        .put_performance(room.as_str(), "night", &spec, unix_ms())
        .await
        .unwrap();
    let state = crate::common::state(t.store.clone()).with_booking(booking.clone());
    let origin = spawn(state, Some(TICK)).await;
    let shop = Arc::new(Shop {
        http: reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .unwrap(),
        base: origin.url(""),
        room: room.clone(),
    });
    let seats_left = || async { t.store.figures(&room).await.unwrap().sale.seats };

    // Holds and seat maps all along, from a visitor of their own: never a
    // 500, never past the deadline.
    let (poller, _) = shop.holding(&["A-1-20"]).await;
    let stop_polling = Arc::new(AtomicBool::new(false));
    let polling = {
        let (shop, stop) = (shop.clone(), stop_polling.clone());
        tokio::spawn(async move {
            let mut answers = Vec::new();
            while !stop.load(Ordering::SeqCst) {
                answers.push(timed(shop.seats(&poller)).await);
                answers.push(timed(shop.hold(&poller, &["A-1-19"])).await);
                // A visitor's pace through the whole outage.
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            answers
        })
    };

    // Two confirms paying at once; the database stops right after the
    // first one's payment is recorded, before its booking is written.
    let (a, hold_a) = shop.holding(&["A-1-1", "A-1-2"]).await;
    let (b, hold_b) = shop.holding(&["A-1-3"]).await;
    let (c, hold_c) = shop.holding(&["A-1-4"]).await;
    let (leaver, d) = shop.join().await;
    let d = d.expect("admitted at once");
    assert_eq!(timed(shop.hold(&d, &["A-1-7"])).await.0, 201);
    let confirm_a = tokio::spawn(timed(shop.confirm(&a, &hold_a, "ka", "tok_wait_a")));
    let confirm_b = tokio::spawn(timed(shop.confirm(&b, &hold_b, "kb", "tok_wait_b")));
    eventually("both confirms paying", Duration::from_secs(5), || async {
        payment.waiting.lock().unwrap().len() == 2
    })
    .await;
    armed.store(true, Ordering::SeqCst);
    payment.open("tok_wait_b");
    let answer = confirm_b.await.unwrap();
    assert_booking_down(
        "a confirm whose booking write found the database gone",
        &answer,
        booking.deadline(true),
    );
    assert!(!armed.load(Ordering::SeqCst), "the database was stopped");
    payment.open("tok_wait_a");
    let answer = confirm_a.await.unwrap();
    assert_booking_down(
        "a confirm whose payment record found the database gone",
        &answer,
        booking.deadline(true),
    );
    assert_eq!(payment.charged().len(), 2, "both charged");

    // While it is away: booking answers 503, the queue serves its line,
    // and the room admits nobody.
    for (what, req) in [
        ("seat map", shop.seats(&c)),
        ("hold", shop.hold(&c, &["A-1-5"])),
        (
            "release",
            shop.api("DELETE", &format!("/holds/{hold_c}"), &c),
        ),
        ("performances", shop.api("GET", "/performances", &c)),
        (
            "a repeated confirm",
            shop.confirm(&b, &hold_b, "kb", "tok_wait_b"),
        ),
    ] {
        assert_booking_down(what, &timed(req).await, deadline);
    }
    // A leave ends the session's holds in the database: it answers anyway.
    let (status, body, took) = timed(
        shop.http
            .post(format!("{}/queue/{room}/leave", shop.base))
            .bearer_auth(&leaver),
    )
    .await;
    assert_eq!(status, 204, "{body}");
    assert!(took < deadline + SLACK, "the leave answered after {took:?}");
    eventually(
        "the room stops admitting",
        Duration::from_secs(5),
        || async { seats_left().await == SeatsLeft::NoneAvailable },
    )
    .await;
    let (waiter, entry) = shop.join().await;
    assert!(entry.is_none(), "admitted while the seats cannot be read");
    // A negative check: nobody is let in over this window.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(shop.status(&waiter).await["state"], "waiting");
    assert_eq!(shop.status(&waiter).await["position"], 1);

    // Back: the sale goes on where it was.
    server.lock().unwrap().restart();
    eventually("booking answers again", Duration::from_secs(10), || async {
        timed(shop.seats(&c)).await.0 == 200
    })
    .await;
    eventually("the waiter is let in", Duration::from_secs(5), || async {
        shop.status(&waiter).await["state"] == "admitted"
    })
    .await;
    // The recorded payment becomes its booking (the sale loop's recovery);
    // the key's repeat gets it.
    let (status, booked_b, _) = timed(shop.confirm(&b, &hold_b, "kb", "tok_wait_b")).await;
    assert_eq!(status, 201, "{booked_b}");
    // The payment with no record is refunded once its paying window has
    // passed (the sale loop's recovery then; here asked at that time).
    let later =
        unix_ms() + (PAYMENT_TIMEOUT + origin::booking::PAYING_MARGIN).as_millis() as u64 + 1_000;
    let report = booking.recover(later).await.unwrap();
    assert_eq!(report.refunded, 1, "{report:?}");
    let (status, body, _) = timed(shop.confirm(&a, &hold_a, "ka", "tok_wait_a")).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (402, Some("payment_failed")),
        "{body}"
    );
    // The hold stayed: the visitor pays again, and books.
    let (status, body, _) = timed(shop.confirm(&a, &hold_a, "ka2", "tok_visa")).await;
    assert_eq!(status, 201, "{body}");
    let waiter_entry = shop.status(&waiter).await["entry_token"]
        .as_str()
        .unwrap()
        .to_owned();
    let (status, body, _) = timed(shop.hold(&waiter_entry, &["A-1-10"])).await;
    assert_eq!(status, 201, "{body}");
    let hold_w = body["hold_id"].as_str().unwrap().to_owned();
    let (status, body, _) = timed(shop.confirm(&waiter_entry, &hold_w, "kw", "tok_visa")).await;
    assert_eq!(status, 201, "{body}");

    // A request whose statement the server interrupts (as a shutdown does
    // its sessions' queries; here KILL QUERY, while it waits on a row lock
    // the test's own transaction holds): 503, not a 500.
    let mut locker = AnyConnection::connect(&url).await.unwrap();
    locker.execute("BEGIN").await.unwrap();
    sqlx::query("SELECT hold_id FROM booking_holds WHERE hold_id = ? FOR UPDATE")
        .bind(hold_c.as_str())
        .fetch_one(&mut locker)
        .await
        .unwrap();
    let release = tokio::spawn(timed(shop.api("DELETE", &format!("/holds/{hold_c}"), &c)));
    let id = waiting_on_lock(&mut locker).await;
    locker
        .execute(sqlx::AssertSqlSafe(format!("KILL QUERY {id}")))
        .await
        .unwrap();
    assert_booking_down(
        "a release whose query was interrupted",
        &release.await.unwrap(),
        deadline,
    );

    // Frozen (SIGSTOP) under a request that is waiting on that row lock:
    // the deadline answers it, nothing else would until the thaw.
    let release = tokio::spawn(timed(shop.api("DELETE", &format!("/holds/{hold_c}"), &c)));
    waiting_on_lock(&mut locker).await;
    server.lock().unwrap().freeze();
    assert_booking_down(
        "a release the database froze under",
        &release.await.unwrap(),
        deadline,
    );
    for (what, req) in [
        ("seat map", shop.seats(&c)),
        ("hold", shop.hold(&c, &["A-1-6"])),
        ("confirm", shop.confirm(&c, &hold_c, "kc", "tok_visa")),
    ] {
        assert_booking_down(what, &timed(req).await, booking.deadline(what == "confirm"));
    }
    eventually(
        "the room stops admitting",
        Duration::from_secs(5),
        || async { seats_left().await == SeatsLeft::NoneAvailable },
    )
    .await;
    let (frozen_waiter, entry) = shop.join().await;
    assert!(entry.is_none(), "admitted while the database is frozen");
    // A negative check: nobody is let in over this window.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(shop.status(&frozen_waiter).await["state"], "waiting");
    server.lock().unwrap().thaw();
    locker.execute("ROLLBACK").await.unwrap();
    eventually(
        "the frozen waiter is let in",
        Duration::from_secs(10),
        || async { shop.status(&frozen_waiter).await["state"] == "admitted" },
    )
    .await;
    let (status, body, _) = timed(shop.confirm(&c, &hold_c, "kc2", "tok_visa")).await;
    assert_eq!(status, 201, "{body}");

    stop_polling.store(true, Ordering::SeqCst);
    let answers = polling.await.unwrap();
    let statuses: Vec<(u16, String)> = answers
        .iter()
        .map(|(s, b, _)| (*s, b["error"]["code"].to_string()))
        .collect();
    assert!(
        answers.iter().any(|(s, _, _)| *s == 503),
        "the poller saw the outage: {statuses:?}"
    );
    for (status, body, took) in &answers {
        assert!(matches!(status, 200 | 201 | 409 | 503), "{status} {body}");
        if *status == 503 {
            assert_eq!(body["error"]["code"], "store_unavailable", "{body}");
        }
        let stopping = Duration::from_millis(stopping_ms.load(Ordering::SeqCst));
        assert!(
            *took < deadline + SLACK + stopping,
            "answered after {took:?} (the stop took {stopping:?})"
        );
    }

    // Every charged payment ended in a booking or a recorded refund, and
    // no seat was sold twice.
    let refunded = payment.refunded();
    let rows: Vec<(String, String, Option<String>)> = sqlx::query_as(
        "SELECT p.attempt_id, p.state, b.booking_id FROM booking_payments p \
         LEFT JOIN booking_bookings b ON b.hold_id = p.hold_id AND p.state = 'succeeded'",
    )
    .fetch_all(&mut locker)
    .await
    .unwrap();
    let charged = payment.charged();
    assert_eq!(charged.len(), 5, "a, b, a again, the waiter, c");
    for attempt in &charged {
        let (_, state, booking_id) = rows
            .iter()
            .find(|r| &r.0 == attempt)
            .expect("an attempt row");
        match state.as_str() {
            "succeeded" => assert!(booking_id.is_some(), "{attempt} paid without a booking"),
            "refunded" => assert!(
                refunded.contains(attempt),
                "{attempt} recorded, not refunded"
            ),
            other => panic!("{attempt} charged and left {other}"),
        }
    }
    assert_eq!(refunded.len(), 1, "{refunded:?}");
    let (sold, bookings): (i64, i64) = sqlx::query_as(
        "SELECT (SELECT COUNT(*) FROM booking_seat_sales), \
         (SELECT COUNT(*) FROM booking_bookings WHERE status = 'confirmed')",
    )
    .fetch_one(&mut locker)
    .await
    .unwrap();
    assert_eq!(
        (sold, bookings),
        (5, 4),
        "a's 2 seats, b's, the waiter's, c's"
    );
    let booked: Vec<(String,)> =
        sqlx::query_as("SELECT seats FROM booking_bookings WHERE status = 'confirmed'")
            .fetch_all(&mut locker)
            .await
            .unwrap();
    let mut seats: Vec<String> = booked
        .iter()
        .flat_map(|(s,)| s.split(',').map(str::to_owned).collect::<Vec<_>>())
        .collect();
    seats.sort();
    let n = seats.len();
    seats.dedup();
    assert_eq!(seats.len(), n, "a seat in two bookings: {seats:?}");
    assert_eq!(n, 5);
    locker.close().await.unwrap();

    origin.stop().await;
    // Before its folder goes (the store, holding the hook, may outlive this).
    server.lock().unwrap().kill();
    assert!(!logs.text().contains("ERROR"), "{}", logs.text());
}

fn unix_ms() -> u64 {
    crate::common::unix_now() * 1000
}
