//! Redis going away under a running origin: a test-owned `redis-server`
//! frozen with SIGSTOP, and killed then restarted on the same port. The
//! queue API answers 503 `store_unavailable` within `--redis-timeout-ms`
//! instead of hanging, `/readyz` fails while `/healthz` stays up, the
//! promoter backs off and logs the outage once, and the service recovers on
//! its own, reloading its scripts into a restarted Redis.
//!
//! Each test runs on a current-thread runtime, so every task it starts
//! (server, promoter, the Redis client's own) logs into the test's own
//! subscriber, which the test reads back.

mod common;

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::recording::Recording;
use common::servers::{RedisServer, TempDir};
use common::{make_paused_room, make_room, spawn, state, unique_prefix};
use origin::queue::QueueStore;
use origin::queue::redis::{RedisConfig, RedisStore};
use origin::room::{RoomId, RoomSettings};
use serde_json::Value;

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
