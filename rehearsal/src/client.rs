//! HTTP as a visitor's browser does it: one shared connection pool (the
//! origin cannot tell), but each visitor's own cookies (`wr_ticket_{room}`,
//! `wr_entry_{room}`), sent back as the browser would and replaced or
//! cleared by every `Set-Cookie`, and the identity cookie `wr_identity` the
//! operator's site set for a visitor of an account. No `Origin` header:
//! like an app, so the origin's cross-site check has nothing to refuse.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use reqwest::header::{COOKIE, HeaderMap, RETRY_AFTER, SET_COOKIE};
use reqwest::{Client, Method};
use tokio::sync::Semaphore;

/// A visitor's cookies for the room.
#[derive(Clone, Debug, Default)]
pub struct Jar {
    /// The ticket (`wr_ticket_{room}`).
    pub ticket: Option<String>,
    /// The entry token (`wr_entry_{room}`).
    pub entry: Option<String>,
    /// The identity token the operator's site set (`wr_identity`).
    pub identity: Option<Arc<str>>,
}

/// The cookie the operator's site sets with a visitor's identity token.
pub const IDENTITY_COOKIE: &str = "wr_identity";

/// One answer.
#[derive(Debug)]
pub struct Reply {
    /// HTTP status.
    pub status: u16,
    /// The body as JSON (`Null` if it was not JSON).
    pub body: serde_json::Value,
    /// `Retry-After` in seconds, when given.
    pub retry_after: Option<u64>,
    /// `wrangler dev`'s own 503 for a request caught in a restart of the
    /// worker (local development only).
    pub dev_restart: bool,
    /// The origin held the request (`Preference-Applied` came back).
    pub held: bool,
    /// An admitted answer's `Waiting-Room-Admitted-At`: when the store let
    /// the visitor in (unix ms).
    pub admitted_at_ms: Option<u64>,
}

/// How `wrangler dev` begins that 503's body.
const DEV_RESTART: &[u8] = b"Your worker restarted mid-request";

impl Reply {
    /// The contract's error code (`{"error": {"code": ...}}`), or "".
    pub fn code(&self) -> &str {
        self.body
            .pointer("/error/code")
            .and_then(serde_json::Value::as_str)
            .unwrap_or("")
    }

    /// The visitor's session is over: the origin's 401, or, through the
    /// edge, its 429 `in_queue` (the edge sends a visitor whose entry
    /// token has lapsed back to the queue before the origin sees it).
    pub fn session_over(&self) -> bool {
        self.status == 401 || (self.status == 429 && self.code() == "in_queue")
    }

    /// A short name for a failed answer, for the errors-by-kind table.
    pub fn kind(&self) -> String {
        match self.code() {
            "" => format!("{}", self.status),
            code => format!("{} {code}", self.status),
        }
    }
}

/// The visitors' HTTP client: the target, the room's cookie names.
#[derive(Clone)]
pub struct Http {
    client: Client,
    base: String,
    ticket_name: String,
    entry_name: String,
    resets_retried: Arc<AtomicU64>,
    dev_restarts_retried: Arc<AtomicU64>,
    /// One permit per request in flight: a connection each, and this
    /// process may open only so many files (see [`Http::new`]).
    slots: Arc<Semaphore>,
    /// Requests that found every permit taken and waited for one.
    waited: Arc<AtomicU64>,
    /// Connections this process could not open for lack of files, and
    /// tried again.
    out_of_files: Arc<AtomicU64>,
}

/// How long one request may take before it counts as failed.
const TIMEOUT: Duration = Duration::from_secs(15);
/// How long an idle keep-alive connection is kept for reuse: under the
/// 5 s after which workerd (kj's HTTP server, as in `wrangler dev`) closes
/// an idle one, so a request is never written on a connection the server
/// is closing at that moment (node's undici keeps idle connections 4 s for
/// the same reason). Resets that remain are sent once more, as a browser
/// does (docs/rehearsal.md).
const POOL_IDLE: Duration = Duration::from_secs(4);
/// Most idle connections kept for reuse: they take files from the
/// requests' budget, which in an endgame needs nearly all of them.
pub const IDLE_KEPT: usize = 256;
/// Most tries, 100 ms apart, of a connection this process had no file for.
const FILE_RETRIES: usize = 50;
/// The longest hold a request with `Prefer: wait` may meet (the origin's
/// cap), added to its [`TIMEOUT`].
const MAX_HOLD: Duration = Duration::from_secs(20);

impl Http {
    /// A client for visitors of `room` at `base` (`http://127.0.0.1:8080`),
    /// with at most `max_in_flight` requests at once. Each needs a
    /// connection, and in a sale's endgame nearly every waiter has a held
    /// poll in flight: 20,000 visitors in one process that may open 20,000
    /// files would run out of them (EMFILE) and the run would fall apart.
    /// A browser has no such shared limit; past it
    /// a request here waits for a permit, and the report counts how many did.
    pub fn new(base: &str, room: &str, max_in_flight: usize) -> Result<Http, reqwest::Error> {
        let client = Client::builder()
            .timeout(TIMEOUT)
            .pool_idle_timeout(POOL_IDLE)
            // Idle connections take files from the requests' budget.
            .pool_max_idle_per_host(IDLE_KEPT)
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        Ok(Http {
            client,
            base: base.trim_end_matches('/').to_owned(),
            ticket_name: token::ticket_cookie(room),
            entry_name: token::entry_cookie(room),
            resets_retried: Arc::default(),
            dev_restarts_retried: Arc::default(),
            slots: Arc::new(Semaphore::new(max_in_flight.max(1))),
            waited: Arc::default(),
            out_of_files: Arc::default(),
        })
    }

    /// Requests that waited for a permit (see [`Http::new`]).
    pub fn waited_for_a_connection(&self) -> u64 {
        self.waited.load(Relaxed)
    }

    /// Connections tried again because this process was out of files.
    pub fn out_of_files(&self) -> u64 {
        self.out_of_files.load(Relaxed)
    }

    /// Requests sent again after their connection was reset before any
    /// answer came (see `send`).
    pub fn resets_retried(&self) -> u64 {
        self.resets_retried.load(Relaxed)
    }

    /// Of those, the ones `wrangler dev` answered with its 503 "worker
    /// restarted mid-request" (the rest were resets).
    pub fn dev_restarts_retried(&self) -> u64 {
        self.dev_restarts_retried.load(Relaxed)
    }

    /// Sends one request with the jar's cookies and keeps what the answer
    /// sets. `Err` is a transport failure (no answer), named for the table.
    ///
    /// A request whose connection is reset before any answer is sent once
    /// more on a fresh connection, as browsers do with a reused keep-alive
    /// connection; `wrangler dev`'s 503 "worker restarted mid-request" is
    /// treated the same way (wrangler 4.86 answers it for any failed hop
    /// between its proxy and the worker, restart or not: a pooled
    /// connection closed by kj's 5 s idle timeout as it was reused).
    /// `resets_retried` counts these; the report's tally is the evidence.
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        jar: &mut Jar,
        body: Option<&serde_json::Value>,
        headers: &[(&str, &str)],
    ) -> Result<Reply, String> {
        let _slot = match self.slots.try_acquire() {
            Ok(slot) => slot,
            Err(_) => {
                self.waited.fetch_add(1, Relaxed);
                // Never closed: the semaphore lives as long as `self`.
                self.slots
                    .acquire()
                    .await
                    .map_err(|_| "closed".to_owned())?
            }
        };
        let mut first = self
            .send_once(method.clone(), path, jar, body, headers)
            .await;
        // Out of files for a moment (connections the pool is closing still
        // count): the tool's limit, so wait for one rather than report the
        // target; counted apart. A browser would have files of its own.
        for _ in 0..FILE_RETRIES {
            match &first {
                Err(e) if out_of_files(e) => {
                    self.out_of_files.fetch_add(1, Relaxed);
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    first = self
                        .send_once(method.clone(), path, jar, body, headers)
                        .await;
                }
                _ => break,
            }
        }
        let again = match &first {
            Ok(reply) => reply.dev_restart,
            Err(e) => is_reset(e),
        };
        if !again {
            return first.map_err(transport_kind);
        }
        // When and why, to line the retries up with the edge's log.
        tracing::debug!(
            %method,
            path,
            why = if first.is_ok() { "503 worker restarted" } else { "reset" },
            "sent again"
        );
        self.resets_retried.fetch_add(1, Relaxed);
        if first.is_ok() {
            self.dev_restarts_retried.fetch_add(1, Relaxed);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        self.send_once(method, path, jar, body, headers)
            .await
            .map_err(transport_kind)
    }

    async fn send_once(
        &self,
        method: Method,
        path: &str,
        jar: &mut Jar,
        body: Option<&serde_json::Value>,
        headers: &[(&str, &str)],
    ) -> Result<Reply, reqwest::Error> {
        let mut req = self
            .client
            .request(method, format!("{}{path}", self.base))
            .header("Accept", "application/json");
        let cookies: Vec<String> = [
            (self.ticket_name.as_str(), jar.ticket.as_deref()),
            (self.entry_name.as_str(), jar.entry.as_deref()),
            (IDENTITY_COOKIE, jar.identity.as_deref()),
        ]
        .into_iter()
        .filter_map(|(name, value)| value.map(|v| format!("{name}={v}")))
        .collect();
        if !cookies.is_empty() {
            req = req.header(COOKIE, cookies.join("; "));
        }
        for (name, value) in headers {
            req = req.header(*name, *value);
        }
        if headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("prefer"))
        {
            // A held poll may take its hold before answering.
            req = req.timeout(TIMEOUT + MAX_HOLD);
        }
        if let Some(body) = body {
            req = req.json(body);
        }
        let res = req.send().await?;
        let status = res.status().as_u16();
        self.keep_cookies(res.headers(), jar);
        let held = res.headers().contains_key("preference-applied");
        let admitted_at_ms = res
            .headers()
            .get("waiting-room-admitted-at")
            .and_then(|v| v.to_str().ok())
            .and_then(unix_ms);
        let retry_after = res
            .headers()
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse().ok());
        let bytes = res.bytes().await?;
        let body = serde_json::from_slice(&bytes).unwrap_or(serde_json::Value::Null);
        Ok(Reply {
            status,
            body,
            retry_after,
            dev_restart: status == 503 && bytes.starts_with(DEV_RESTART),
            held,
            admitted_at_ms,
        })
    }

    fn keep_cookies(&self, headers: &HeaderMap, jar: &mut Jar) {
        for value in headers.get_all(SET_COOKIE) {
            let Ok(text) = value.to_str() else { continue };
            let Some((name, value, cleared)) = parse_set_cookie(text) else {
                continue;
            };
            let slot = if name == self.ticket_name {
                &mut jar.ticket
            } else if name == self.entry_name {
                &mut jar.entry
            } else {
                continue;
            };
            *slot = (!cleared).then(|| value.to_owned());
        }
    }
}

/// Name, value, and whether the cookie is being removed (empty value or
/// `Max-Age=0`), from one `Set-Cookie` header.
pub fn parse_set_cookie(text: &str) -> Option<(&str, &str, bool)> {
    let mut parts = text.split(';');
    let (name, value) = parts.next()?.trim().split_once('=')?;
    let cleared = value.is_empty()
        || parts.any(|a| {
            let a = a.trim();
            a.get(..8)
                .is_some_and(|k| k.eq_ignore_ascii_case("max-age="))
                && a.get(8..).is_some_and(|v| v.trim().starts_with(['0', '-']))
        });
    Some((name.trim(), value.trim(), cleared))
}

/// The request's connection was reset, or closed, before any answer.
/// Whether `e` is this process running out of files (EMFILE, ENFILE) as it
/// opened a connection: the tool's own limit, not the target's answer.
fn out_of_files(e: &reqwest::Error) -> bool {
    let mut source = std::error::Error::source(e);
    while let Some(err) = source {
        if let Some(io) = err.downcast_ref::<std::io::Error>()
            && matches!(io.raw_os_error(), Some(23 | 24))
        {
            return true;
        }
        source = err.source();
    }
    false
}

fn is_reset(e: &reqwest::Error) -> bool {
    if !e.is_request() {
        return false;
    }
    let mut source = std::error::Error::source(e);
    while let Some(err) = source {
        if let Some(io) = err.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::ConnectionReset
        {
            return true;
        }
        if err
            .to_string()
            .contains("connection closed before message completed")
        {
            return true;
        }
        source = err.source();
    }
    false
}

fn transport_kind(e: reqwest::Error) -> String {
    tracing::debug!(error = ?e, "no answer");
    if e.is_timeout() {
        "timeout".into()
    } else if e.is_connect() {
        "connect".into()
    } else if e.is_body() || e.is_decode() {
        "body".into()
    } else {
        "transport".into()
    }
}

/// An RFC 3339 time as unix ms.
fn unix_ms(text: &str) -> Option<u64> {
    let t =
        time::OffsetDateTime::parse(text.trim(), &time::format_description::well_known::Rfc3339)
            .ok()?;
    u64::try_from(t.unix_timestamp_nanos() / 1_000_000).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_cookie_values_and_removals() {
        assert_eq!(
            parse_set_cookie("wr_ticket_r=abc.def; HttpOnly; SameSite=Lax; Path=/; Max-Age=600"),
            Some(("wr_ticket_r", "abc.def", false))
        );
        assert_eq!(
            parse_set_cookie("wr_entry_r=; Path=/; Max-Age=0"),
            Some(("wr_entry_r", "", true))
        );
        assert_eq!(
            parse_set_cookie("wr_entry_r=x; max-age=0"),
            Some(("wr_entry_r", "x", true))
        );
        assert_eq!(parse_set_cookie("garbage"), None);
    }

    /// A loopback server whose first connection gets `first` (nothing: it
    /// is closed as soon as a request arrives) and the next a 200.
    fn fails_first_request(first: &'static str) -> std::net::SocketAddr {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        std::thread::spawn(move || {
            for (i, conn) in listener.incoming().take(2).enumerate() {
                let Ok(mut conn) = conn else { return };
                let mut buf = [0u8; 4096];
                let _ = conn.read(&mut buf);
                if i == 0 {
                    let _ = conn.write_all(first.as_bytes());
                } else {
                    let body = r#"{"ok":true}"#;
                    let _ = write!(
                        conn,
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                }
            }
        });
        addr
    }

    #[tokio::test]
    async fn a_request_reset_before_any_answer_is_sent_once_more() {
        let addr = fails_first_request("");
        let http = Http::new(&format!("http://{addr}"), "r", 16).expect("client");
        let mut jar = Jar::default();
        let reply = http
            .send(Method::GET, "/queue/r/status", &mut jar, None, &[])
            .await
            .expect("answered on the second try");
        assert_eq!(reply.status, 200);
        assert_eq!(reply.body["ok"], true);
        assert_eq!(http.resets_retried(), 1);
    }

    #[tokio::test]
    async fn wranglers_worker_restarted_answer_is_sent_once_more() {
        let addr = fails_first_request(
            "HTTP/1.1 503 Service Unavailable\r\ncontent-length: 33\r\nconnection: close\r\n\r\nYour worker restarted mid-request",
        );
        let http = Http::new(&format!("http://{addr}"), "r", 16).expect("client");
        let reply = http
            .send(Method::POST, "/api/r/holds", &mut Jar::default(), None, &[])
            .await
            .expect("answered");
        assert_eq!((reply.status, reply.dev_restart), (200, false));
        assert_eq!(http.resets_retried(), 1);
    }

    #[tokio::test]
    async fn a_visitor_of_an_account_sends_its_identity_cookie_with_the_others() {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let seen = std::thread::spawn(move || {
            let (mut conn, _) = listener.accept().expect("accept");
            let mut buf = [0u8; 4096];
            let n = conn.read(&mut buf).expect("read");
            let _ = conn.write_all(
                b"HTTP/1.1 204 No Content\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
            );
            String::from_utf8_lossy(&buf[..n]).to_lowercase()
        });
        let http = Http::new(&format!("http://{addr}"), "r", 16).expect("client");
        let mut jar = Jar {
            ticket: Some("t.1".into()),
            entry: None,
            identity: Some("h.c.s".into()),
        };
        let reply = http
            .send(Method::POST, "/queue/r/join", &mut jar, None, &[])
            .await
            .expect("answered");
        assert_eq!(reply.status, 204);
        let request = seen.join().expect("server");
        assert!(
            request.contains("cookie: wr_ticket_r=t.1; wr_identity=h.c.s\r\n"),
            "{request}"
        );
    }

    #[tokio::test]
    async fn a_refused_connection_is_not_retried() {
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
            l.local_addr().expect("addr").port()
        };
        let http = Http::new(&format!("http://127.0.0.1:{port}"), "r", 16).expect("client");
        let err = http
            .send(Method::GET, "/", &mut Jar::default(), None, &[])
            .await
            .expect_err("nobody listens");
        assert_eq!(err, "connect");
        assert_eq!(http.resets_retried(), 0);
    }

    #[test]
    fn session_over_from_origin_or_edge() {
        let reply = |status, body| Reply {
            status,
            body,
            retry_after: None,
            dev_restart: false,
            held: false,
            admitted_at_ms: None,
        };
        let in_queue = serde_json::json!({"error": {"code": "in_queue"}});
        assert!(reply(401, serde_json::Value::Null).session_over());
        assert!(reply(429, in_queue).session_over());
        let limited = serde_json::json!({"error": {"code": "rate_limited"}});
        assert!(!reply(429, limited).session_over());
        let taken = serde_json::json!({"error": {"code": "seat_unavailable"}});
        assert!(!reply(409, taken).session_over());
    }
}
