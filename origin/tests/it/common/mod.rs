//! Shared test harness: a store on the real Redis under a key prefix of its
//! own (deleted when the test ends), the app driven by `oneshot`, and a real
//! server on a loopback port.

pub mod booking;
pub mod recording;
pub mod scenarios;
pub mod servers;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, Request, StatusCode};
use http_body_util::BodyExt;
use origin::queue::QueueStore;
use origin::queue::memory::MemoryStore;
use origin::queue::redis::{RedisConfig, RedisStore};
use origin::room::{RoomId, RoomSettings, RoomState};
use origin::state::AppState;
use serde_json::Value;
use token::Keyring;
use tower::ServiceExt;

/// The keys every test signs with.
pub const KEYS: &str = "k1:test-secret-0123456789abcdef";

pub fn keys() -> Keyring {
    Keyring::parse(KEYS).unwrap()
}

pub fn redis_url() -> String {
    std::env::var("WR_TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into())
}

/// A connection to the tests' Redis, for reading what a store wrote.
pub async fn redis_conn() -> redis::aio::MultiplexedConnection {
    redis::Client::open(redis_url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

/// The queue store a test runs on. The subjects that hold for both stores
/// are compiled once per store (`main.rs`), each copy with its own `STORE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Store {
    Redis,
    Memory,
}

/// A store under a prefix of its own; on Redis its keys are deleted on drop.
pub struct TestStore {
    pub store: Arc<dyn QueueStore>,
    pub prefix: String,
    pub kind: Store,
}

static NEXT: AtomicU64 = AtomicU64::new(0);

pub fn unique_prefix() -> String {
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let r: u32 = rand::random();
    format!("test:{}:{n}:{r:08x}:", std::process::id())
}

fn redis_store(prefix: &str) -> RedisStore {
    RedisStore::connect(&RedisConfig {
        url: redis_url(),
        prefix: prefix.to_owned(),
        timeout: Duration::from_secs(5),
        cluster: false,
    })
    .unwrap()
}

/// A fresh store of `kind` for one test.
pub fn test_store(kind: Store) -> TestStore {
    let prefix = unique_prefix();
    let store: Arc<dyn QueueStore> = match kind {
        Store::Redis => Arc::new(redis_store(&prefix)),
        Store::Memory => Arc::new(MemoryStore::new()),
    };
    TestStore {
        store,
        prefix,
        kind,
    }
}

/// A fresh store of `kind` for one test whose clock is `clock` (unix ms),
/// stepped by the test rather than slept.
pub fn pinned_store(kind: Store, clock: Arc<AtomicU64>) -> TestStore {
    let prefix = unique_prefix();
    let store: Arc<dyn QueueStore> = match kind {
        Store::Redis => Arc::new(redis_store(&prefix).with_fixed_clock(clock)),
        Store::Memory => Arc::new(MemoryStore::with_fixed_clock(clock)),
    };
    TestStore {
        store,
        prefix,
        kind,
    }
}

impl TestStore {
    /// Another handle on the same store (a second origin instance): a second
    /// Redis connection, or the same embedded store shared in-process.
    pub fn connect(&self) -> Arc<dyn QueueStore> {
        match self.kind {
            Store::Redis => Arc::new(redis_store(&self.prefix)),
            Store::Memory => self.store.clone(),
        }
    }

    /// [`TestStore::connect`] on the pinned clock `clock`.
    pub fn connect_pinned(&self, clock: Arc<AtomicU64>) -> Arc<dyn QueueStore> {
        match self.kind {
            Store::Redis => Arc::new(redis_store(&self.prefix).with_fixed_clock(clock)),
            Store::Memory => self.store.clone(),
        }
    }
}

impl Drop for TestStore {
    fn drop(&mut self) {
        if self.kind == Store::Memory {
            return;
        }
        let Ok(client) = redis::Client::open(redis_url()) else {
            return;
        };
        let Ok(mut conn) = client.get_connection() else {
            return;
        };
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg(format!("{}*", self.prefix))
            .query(&mut conn)
            .unwrap_or_default();
        if !keys.is_empty() {
            let _: redis::RedisResult<()> = redis::cmd("DEL").arg(keys).query(&mut conn);
        }
    }
}

/// An open room's settings with `capacity` and a rate that never limits.
pub fn settings(capacity: u32) -> RoomSettings {
    RoomSettings {
        capacity,
        admit_per_second: 1_000.0,
        ..Default::default()
    }
}

pub fn room(id: &str) -> RoomId {
    RoomId::parse(id).unwrap()
}

pub async fn make_room(store: &dyn QueueStore, id: &str, settings: RoomSettings) -> RoomId {
    let room = room(id);
    store.put_room(&room, &settings).await.unwrap();
    room
}

pub async fn make_paused_room(store: &dyn QueueStore, id: &str, settings: RoomSettings) -> RoomId {
    let room = make_room(store, id, settings).await;
    store.set_state(&room, RoomState::Paused).await.unwrap();
    room
}

pub fn state(store: Arc<dyn QueueStore>) -> AppState {
    AppState::new(store, keys())
}

pub fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// A response, read whole.
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub json: Value,
}

impl Reply {
    /// The `Set-Cookie` values.
    pub fn cookies(&self) -> Vec<String> {
        self.headers
            .get_all("set-cookie")
            .iter()
            .map(|v| v.to_str().unwrap().to_owned())
            .collect()
    }

    /// Asserts the contract's error shape and returns the code.
    pub fn error_code(&self) -> &str {
        assert_eq!(
            self.headers.get("content-type").unwrap(),
            "application/json",
            "{:?}",
            self.json
        );
        assert!(self.json["error"]["message"].is_string(), "{}", self.json);
        self.json["error"]["code"].as_str().unwrap()
    }

    pub fn ticket(&self) -> String {
        self.json["ticket"].as_str().unwrap().to_owned()
    }
}

/// How a join carries an identity token of the operator's site.
#[derive(Clone, Copy, Debug)]
pub enum Identity<'a> {
    /// The `Waiting-Room-Identity` header (apps).
    Header(&'a str),
    /// The `wr_identity` cookie (browsers).
    Cookie(&'a str),
}

/// Drives the real router with `oneshot`.
pub struct Api {
    pub app: Router,
}

impl Api {
    pub fn new(state: AppState) -> Api {
        Api {
            app: origin::http::app(state),
        }
    }

    pub async fn send(&self, request: Request<Body>) -> Reply {
        let response = self.app.clone().oneshot(request).await.unwrap();
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        let json = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes)
                .unwrap_or(Value::String(String::from_utf8_lossy(&bytes).into_owned()))
        };
        Reply {
            status,
            headers,
            json,
        }
    }

    pub async fn call(&self, method: &str, uri: &str, bearer: Option<&str>) -> Reply {
        let mut req = Request::builder()
            .method(method)
            .uri(uri)
            .header("host", "127.0.0.1:8080");
        if let Some(t) = bearer {
            req = req.header("authorization", format!("Bearer {t}"));
        }
        self.send(req.body(Body::empty()).unwrap()).await
    }

    pub async fn join(&self, room: &RoomId, ticket: Option<&str>) -> Reply {
        self.call("POST", &format!("/queue/{room}/join"), ticket)
            .await
    }

    /// A join with an identity token in `Waiting-Room-Identity`, as an app
    /// sends it, and no ticket.
    pub async fn join_as(&self, room: &RoomId, jwt: &str) -> Reply {
        self.join_identified(room, None, Some(Identity::Header(jwt)))
            .await
    }

    /// A join with an identity token in the `wr_identity` cookie, as a
    /// browser on the operator's site sends it, and no ticket.
    pub async fn join_as_cookie(&self, room: &RoomId, jwt: &str) -> Reply {
        self.join_identified(room, None, Some(Identity::Cookie(jwt)))
            .await
    }

    /// A join with an optional ticket (as a bearer) and an optional
    /// identity token.
    pub async fn join_identified(
        &self,
        room: &RoomId,
        ticket: Option<&str>,
        identity: Option<Identity<'_>>,
    ) -> Reply {
        let req = join_request(room, ticket);
        let req = match identity {
            Some(Identity::Header(jwt)) => req.header("waiting-room-identity", jwt),
            Some(Identity::Cookie(jwt)) => req.header("cookie", format!("wr_identity={jwt}")),
            None => req,
        };
        self.send(req.body(Body::empty()).unwrap()).await
    }

    /// A join with an optional ticket (as a bearer) and an optional
    /// challenge answer in `Waiting-Room-Challenge`.
    pub async fn join_answering(
        &self,
        room: &RoomId,
        ticket: Option<&str>,
        answer: Option<&str>,
    ) -> Reply {
        let mut req = join_request(room, ticket);
        if let Some(a) = answer {
            req = req.header("waiting-room-challenge", a);
        }
        self.send(req.body(Body::empty()).unwrap()).await
    }

    pub async fn status(&self, room: &RoomId, ticket: &str) -> Reply {
        self.call("GET", &format!("/queue/{room}/status"), Some(ticket))
            .await
    }

    pub async fn leave(&self, room: &RoomId, ticket: &str) -> Reply {
        self.call("POST", &format!("/queue/{room}/leave"), Some(ticket))
            .await
    }
}

/// The sequence number a ticket carries.
/// A join of `room` as the tests send it, with the ticket (if any) as a
/// bearer; the callers add their headers.
fn join_request(room: &RoomId, ticket: Option<&str>) -> axum::http::request::Builder {
    let req = Request::builder()
        .method("POST")
        .uri(format!("/queue/{room}/join"))
        .header("host", "127.0.0.1:8080");
    match ticket {
        Some(t) => req.header("authorization", format!("Bearer {t}")),
        None => req,
    }
}

pub fn seq_of(ticket: &str, room: &RoomId) -> u64 {
    keys()
        .verify(ticket, token::Kind::Ticket, room.as_str(), unix_now())
        .unwrap()
        .seq
}

/// Ticks `room` until `n` visitors in all were admitted, checking after every
/// tick that `active` stays within `capacity`. Returns the admission order.
pub async fn promote(store: &dyn QueueStore, room: &RoomId, n: usize, capacity: u64) -> Vec<u64> {
    let mut order = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while order.len() < n {
        assert!(
            tokio::time::Instant::now() < deadline,
            "only {} admitted",
            order.len()
        );
        let report = store.tick(room).await.unwrap();
        assert!(
            report.active <= capacity,
            "active {} > capacity {capacity}",
            report.active
        );
        order.extend(report.admitted);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    order
}

/// A real origin (server and promoter) on a loopback port; stops on drop.
pub struct Running {
    pub addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    pub task: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
}

impl Running {
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Stops gracefully and waits for the server and promoter to finish.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            task.await.unwrap().unwrap();
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// Starts an origin; `promoter_tick` None serves without a promoter (the test
/// ticks itself).
pub async fn spawn(state: AppState, promoter_tick: Option<Duration>) -> Running {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let shutdown = async move {
        let _ = rx.await;
    };
    let task = match promoter_tick {
        Some(tick) => tokio::spawn(origin::run(state, listener, tick, shutdown)),
        None => tokio::spawn(origin::http::serve(
            listener,
            origin::http::app(state),
            shutdown,
        )),
    };
    Running {
        addr,
        stop: Some(tx),
        task: Some(task),
    }
}

/// The admin key of [`admin_state`].
pub const ADMIN_KEY: &str = "admin-key-for-tests-0123456789";

/// A state with the admin API on ([`ADMIN_KEY`]).
pub fn admin_state(store: Arc<dyn QueueStore>) -> AppState {
    state(store).with_admin_key(ADMIN_KEY)
}

impl Api {
    /// An admin call that must be refused as a setting this origin cannot
    /// take: 422 `invalid_body` whose message names `word`; the message.
    pub async fn refused_setting(&self, method: &str, uri: &str, body: &str, word: &str) -> String {
        let r = self.admin(method, uri, body.to_owned()).await;
        assert_eq!(r.status, 422, "{method} {body}: {}", r.json);
        assert_eq!(r.error_code(), "invalid_body");
        let message = r.json["error"]["message"].as_str().unwrap().to_owned();
        assert!(message.contains(word), "{message}");
        message
    }

    /// An admin call with `key` (None: no Authorization header) and a raw body.
    pub async fn admin_as(
        &self,
        key: Option<&str>,
        method: &str,
        uri: &str,
        body: impl Into<Body>,
    ) -> Reply {
        let mut req = Request::builder()
            .method(method)
            .uri(uri)
            .header("content-type", "application/json");
        if let Some(k) = key {
            req = req.header("authorization", format!("Bearer {k}"));
        }
        self.send(req.body(body.into()).unwrap()).await
    }

    /// An admin call with the right key.
    pub async fn admin(&self, method: &str, uri: &str, body: impl Into<Body>) -> Reply {
        self.admin_as(Some(ADMIN_KEY), method, uri, body).await
    }
}

/// Waits until `check` holds, asking every 15 ms; fails naming `what` once
/// `limit` has passed. Tests wait for what they assert rather than sleep.
pub async fn eventually<F, Fut>(what: &str, limit: Duration, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + limit;
    while !check().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what}: not within {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(15)).await;
    }
}
