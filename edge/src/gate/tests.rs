//! Table-driven tests of every gate decision, with real tokens signed by
//! the token crate (the origin's signer), so issuer and verifier meet here.

use token::{Claims, Keyring, Kind};

use super::*;
use crate::config::EdgeConfig;
use crate::http::Lang;
use crate::revoked::Revoked;

const NOW: u64 = 1_800_000_000;
const KEYS: &str = "k2:edge-gate-new-secret-0123,k1:edge-gate-old-secret-0123";
const BYPASS: &str = "staff-bypass-secret-0123";
const NAV: &str = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";

fn config(fail_mode: &str) -> EdgeConfig {
    let fail_mode = fail_mode.to_owned();
    EdgeConfig::from_vars(move |name| {
        Some(
            match name {
                "ORIGIN_URL" => "http://127.0.0.1:8080",
                "ROOMS" => {
                    r#"[{"room":"concert","paths":["/book/","/api/"]},{"room":"vip","paths":["/book/vip/"]},{"room":"shop","paths":["/"]}]"#
                }
                "BYPASS_PATHS" => r#"["/static/","/favicon.ico"]"#,
                "SIGNING_KEYS" => KEYS,
                "EDGE_SECRET" => "edge-secret-0123456789",
                "BYPASS_SECRET" => BYPASS,
                "FAIL_MODE" => fail_mode.as_str(),
                _ => return None,
            }
            .to_owned(),
        )
    })
    .expect("test config is valid")
}

fn sign_with(keys: &str, kind: Kind, room: &str, expires_at: u64) -> String {
    Keyring::parse(keys).expect("keys").sign(&Claims {
        kind,
        room: room.to_owned(),
        visitor: 7,
        seq: 3,
        issued_at: NOW - 10,
        expires_at,
        account: None,
    })
}

fn entry(room: &str) -> String {
    sign_with(KEYS, Kind::Entry, room, NOW + 60)
}

/// A request builder with browser-navigation defaults.
#[derive(Clone)]
struct Req {
    method: &'static str,
    path: &'static str,
    query: &'static str,
    accept: Option<&'static str>,
    mode: Option<&'static str>,
    origin: Option<&'static str>,
    acrm: Option<&'static str>,
    lang: Option<&'static str>,
    cookie: Option<String>,
    header_token: Option<String>,
    bypass: Option<&'static str>,
    queue: QueueHealth,
    revoked: Revoked,
}

fn nav(path: &'static str) -> Req {
    Req {
        method: "GET",
        path,
        query: "",
        accept: Some(NAV),
        mode: Some("navigate"),
        origin: None,
        acrm: None,
        lang: None,
        cookie: None,
        header_token: None,
        bypass: None,
        queue: QueueHealth::Up,
        revoked: Revoked::default(),
    }
}

fn api(path: &'static str) -> Req {
    Req {
        accept: Some("application/json"),
        mode: Some("cors"),
        ..nav(path)
    }
}

impl Req {
    fn cookie(mut self, c: impl Into<String>) -> Req {
        self.cookie = Some(c.into());
        self
    }
    fn token(mut self, t: impl Into<String>) -> Req {
        self.header_token = Some(t.into());
        self
    }
    fn query(mut self, q: &'static str) -> Req {
        self.query = q;
        self
    }
    fn queue(mut self, q: QueueHealth) -> Req {
        self.queue = q;
        self
    }
    fn bypass(mut self, b: &'static str) -> Req {
        self.bypass = Some(b);
        self
    }
    fn lang(mut self, l: &'static str) -> Req {
        self.lang = Some(l);
        self
    }
    fn decide<'c>(&self, cfg: &'c EdgeConfig) -> Decision<'c> {
        decide(
            cfg,
            &Input {
                method: self.method,
                path: self.path,
                query: self.query,
                accept: self.accept,
                sec_fetch_mode: self.mode,
                origin: self.origin,
                access_control_request_method: self.acrm,
                accept_language: self.lang,
                cookie: self.cookie.as_deref(),
                entry_token: self.header_token.as_deref(),
                bypass: self.bypass,
                now: NOW,
                queue: self.queue,
                revoked: &self.revoked,
            },
        )
    }
}

fn page(room: &'static str, target: &str) -> Decision<'static> {
    page_in(room, target, Lang::En)
}

fn page_in(room: &'static str, target: &str, lang: Lang) -> Decision<'static> {
    Decision::WaitingPage {
        room,
        target: target.to_owned(),
        lang,
    }
}

fn in_queue(room: &'static str, target: &str) -> Decision<'static> {
    Decision::InQueue {
        room,
        target: target.to_owned(),
    }
}

fn check(cfg: &EdgeConfig, cases: Vec<(&str, Req, Decision<'static>)>) {
    for (name, req, want) in cases {
        assert_eq!(req.decide(cfg), want, "case: {name}");
    }
}

#[test]
fn tokens() {
    let cfg = config("closed");
    let forged = sign_with(
        "k2:someone-elses-secret-0123",
        Kind::Entry,
        "concert",
        NOW + 60,
    );
    let unknown_kid = sign_with(
        "k9:edge-gate-new-secret-0123",
        Kind::Entry,
        "concert",
        NOW + 60,
    );
    let old_key = sign_with(
        "k1:edge-gate-old-secret-0123",
        Kind::Entry,
        "concert",
        NOW + 60,
    );
    let expired = sign_with(KEYS, Kind::Entry, "concert", NOW);
    let ticket = sign_with(KEYS, Kind::Ticket, "concert", NOW + 60);
    let mut tampered = entry("concert");
    tampered.push('A');
    let cases = vec![
        (
            "valid cookie",
            nav("/book/x").cookie(format!("wr_entry_concert={}", entry("concert"))),
            Decision::Forward(Pass::Admitted("concert")),
        ),
        (
            "valid header",
            api("/api/seats").token(entry("concert")),
            Decision::Forward(Pass::Admitted("concert")),
        ),
        (
            "signed with the older key of a rotation",
            nav("/book/x").cookie(format!("wr_entry_concert={old_key}")),
            Decision::Forward(Pass::Admitted("concert")),
        ),
        (
            "second of two same-name cookies",
            nav("/book/x").cookie(format!(
                "wr_entry_concert=junk; wr_entry_concert={}",
                entry("concert")
            )),
            Decision::Forward(Pass::Admitted("concert")),
        ),
        ("no token", nav("/book/x"), page("concert", "/book/x")),
        (
            "expired",
            nav("/book/x").cookie(format!("wr_entry_concert={expired}")),
            page("concert", "/book/x"),
        ),
        (
            "forged",
            nav("/book/x").cookie(format!("wr_entry_concert={forged}")),
            page("concert", "/book/x"),
        ),
        (
            "unknown kid",
            api("/book/x").token(unknown_kid),
            in_queue("concert", "/book/x"),
        ),
        (
            "tampered",
            nav("/book/x").cookie(format!("wr_entry_concert={tampered}")),
            page("concert", "/book/x"),
        ),
        (
            "wrong room",
            nav("/book/x").cookie(format!("wr_entry_concert={}", entry("vip"))),
            page("concert", "/book/x"),
        ),
        (
            "right token under the wrong cookie name",
            nav("/book/x").cookie(format!("wr_entry_vip={}", entry("concert"))),
            page("concert", "/book/x"),
        ),
        (
            "a ticket is not an entry token",
            nav("/book/x").cookie(format!("wr_entry_concert={ticket}")),
            page("concert", "/book/x"),
        ),
        (
            "vip room needs its own token",
            nav("/book/vip/1").cookie(format!("wr_entry_concert={}", entry("concert"))),
            page("vip", "/book/vip/1"),
        ),
        (
            "garbage",
            nav("/book/x")
                .cookie("wr_entry_concert=%%%;;==")
                .token("x".repeat(10_000)),
            page("concert", "/book/x"),
        ),
    ];
    check(&cfg, cases);
}

#[test]
fn page_or_json() {
    let cfg = config("closed");
    let cases = vec![
        (
            "browser navigation",
            nav("/book/x"),
            page("concert", "/book/x"),
        ),
        (
            "API call",
            api("/api/seats"),
            in_queue("concert", "/api/seats"),
        ),
        (
            "query kept in the target",
            nav("/book/x").query("seat=12&day=2"),
            page("concert", "/book/x?seat=12&day=2"),
        ),
        (
            "JSON keeps the query",
            api("/api/seats").query("perf=1"),
            in_queue("concert", "/api/seats?perf=1"),
        ),
        (
            "curl's */* gets JSON",
            Req {
                accept: Some("*/*"),
                mode: None,
                ..nav("/book/x")
            },
            in_queue("concert", "/book/x"),
        ),
        (
            "Korean page",
            nav("/book/x").lang("ko-KR,ko;q=0.9,en;q=0.8"),
            page_in("concert", "/book/x", Lang::Ko),
        ),
    ];
    check(&cfg, cases);
}

#[test]
fn paths() {
    let cfg = config("closed");
    let cases = vec![
        (
            "queue API passes",
            api("/queue/concert/status"),
            Decision::Forward(Pass::Queue),
        ),
        (
            "queue join passes",
            nav("/queue/concert/join"),
            Decision::Forward(Pass::Queue),
        ),
        (
            "queue passes even under a catch-all room",
            nav("/queue/shop/join"),
            Decision::Forward(Pass::Queue),
        ),
        (
            "dot segments out of /queue/ are gated",
            nav("/queue/%2e%2e/book/x"),
            page("concert", "/queue/%2e%2e/book/x"),
        ),
        (
            "bypass path",
            nav("/static/app.css"),
            Decision::Forward(Pass::BypassPath),
        ),
        (
            "bypass file",
            nav("/favicon.ico"),
            Decision::Forward(Pass::BypassPath),
        ),
        (
            "a CORS preflight to a protected path is the edge's to answer",
            Req {
                method: "OPTIONS",
                accept: Some("*/*"),
                mode: Some("cors"),
                origin: Some("https://app.example"),
                acrm: Some("POST"),
                ..api("/api/seats")
            },
            Decision::Preflight,
        ),
        (
            "POST is gated like GET",
            Req {
                method: "POST",
                ..api("/api/holds")
            },
            in_queue("concert", "/api/holds"),
        ),
        (
            "dot segments out of a bypass path are gated",
            nav("/static/..%2Fbook/x"),
            page("concert", "/static/..%2Fbook/x"),
        ),
        ("room prefix", nav("/book/x"), page("concert", "/book/x")),
        ("folder itself", nav("/book"), page("concert", "/book")),
        (
            "longest prefix wins",
            nav("/book/vip/2"),
            page("vip", "/book/vip/2"),
        ),
        ("case folded", nav("/BOOK/x"), page("concert", "/BOOK/x")),
        (
            "encoded letters",
            nav("/%62ook/x"),
            page("concert", "/%62ook/x"),
        ),
        ("double slash", nav("//book//x"), page("concert", "/")),
        ("backslash", nav("/book\\x"), page("concert", "/")),
        ("catch-all room", nav("/about"), page("shop", "/about")),
        ("root", nav("/"), page("shop", "/")),
    ];
    check(&cfg, cases);
}

#[test]
fn unprotected_paths_pass_untouched() {
    let cfg = EdgeConfig::from_vars(|name| {
        Some(
            match name {
                "ORIGIN_URL" => "http://127.0.0.1:8080",
                "ROOMS" => r#"[{"room":"concert","paths":["/book/"]}]"#,
                "SIGNING_KEYS" => KEYS,
                "EDGE_SECRET" => "edge-secret-0123456789",
                _ => return None,
            }
            .to_owned(),
        )
    })
    .expect("valid");
    check(
        &cfg,
        vec![
            ("home", nav("/"), Decision::Forward(Pass::Unprotected)),
            (
                "sibling",
                nav("/books"),
                Decision::Forward(Pass::Unprotected),
            ),
            ("api", api("/api/x"), Decision::Forward(Pass::Unprotected)),
            (
                "bypass header without a secret configured is ignored",
                nav("/book/x").bypass("anything-anything-anything"),
                page("concert", "/book/x"),
            ),
        ],
    );
}

#[test]
fn bypass_secret() {
    let cfg = config("closed");
    check(
        &cfg,
        vec![
            (
                "right secret",
                nav("/book/x").bypass(BYPASS),
                Decision::Forward(Pass::BypassSecret),
            ),
            (
                "spaces around it",
                api("/api/x").bypass(" staff-bypass-secret-0123 "),
                Decision::Forward(Pass::BypassSecret),
            ),
            (
                "wrong secret",
                nav("/book/x").bypass("staff-bypass-secret-0124"),
                page("concert", "/book/x"),
            ),
            (
                "prefix of it",
                api("/book/x").bypass("staff"),
                in_queue("concert", "/book/x"),
            ),
            (
                "empty",
                api("/book/x").bypass(""),
                in_queue("concert", "/book/x"),
            ),
        ],
    );
}

#[test]
fn fail_modes() {
    let open = config("open");
    let closed = config("closed");
    check(
        &open,
        vec![
            (
                "open, queue down: page passes",
                nav("/book/x").queue(QueueHealth::Down),
                Decision::Forward(Pass::FailOpen("concert")),
            ),
            (
                "open, queue down: API passes",
                api("/api/x").queue(QueueHealth::Down),
                Decision::Forward(Pass::FailOpen("concert")),
            ),
            (
                "open, unknown: check first",
                nav("/book/x").queue(QueueHealth::Unknown),
                Decision::CheckQueue,
            ),
            (
                "open, queue up: held",
                nav("/book/x").queue(QueueHealth::Up),
                page("concert", "/book/x"),
            ),
            (
                "open, queue up: JSON held",
                api("/api/x").queue(QueueHealth::Up),
                in_queue("concert", "/api/x"),
            ),
            (
                "open, valid token: no check needed",
                nav("/book/x")
                    .queue(QueueHealth::Unknown)
                    .token(entry("concert")),
                Decision::Forward(Pass::Admitted("concert")),
            ),
            (
                "open, queue API: no check",
                nav("/queue/concert/join").queue(QueueHealth::Unknown),
                Decision::Forward(Pass::Queue),
            ),
        ],
    );
    // "/other" is protected by the catch-all "shop" room; with the queue up
    // it is held like any other.
    assert_eq!(
        nav("/other").queue(QueueHealth::Unknown).decide(&open),
        Decision::CheckQueue
    );
    check(
        &closed,
        vec![
            (
                "closed, queue down: page",
                nav("/book/x").queue(QueueHealth::Down),
                page("concert", "/book/x"),
            ),
            (
                "closed, queue down: JSON",
                api("/api/x").queue(QueueHealth::Down),
                in_queue("concert", "/api/x"),
            ),
            (
                "closed, unknown: never checks",
                nav("/book/x").queue(QueueHealth::Unknown),
                page("concert", "/book/x"),
            ),
        ],
    );
}

#[test]
fn waiting_page_route_and_redirect_targets() {
    let cfg = config("closed");
    let room_page = |query: &'static str| nav("/waiting-room/concert").query(query);
    check(
        &cfg,
        vec![
            (
                "page with target",
                room_page("to=%2Fbook%2Fx%3Fseat%3D1"),
                page("concert", "/book/x?seat=1"),
            ),
            ("page without target", room_page(""), page("concert", "/")),
            (
                "unknown room",
                nav("/waiting-room/nope"),
                Decision::NotFound,
            ),
            (
                "bad room id",
                nav("/waiting-room/a%20b"),
                Decision::NotFound,
            ),
            (
                "dot segments out of the page route are gated",
                nav("/waiting-room/..%2fbook/x"),
                page("concert", "/waiting-room/..%2fbook/x"),
            ),
            (
                "protocol-relative",
                room_page("to=//evil.example/x"),
                page("concert", "/"),
            ),
            (
                "encoded protocol-relative",
                room_page("to=%2F%2Fevil.example"),
                page("concert", "/"),
            ),
            (
                "double-encoded",
                room_page("to=%252F%252Fevil.example"),
                page("concert", "/"),
            ),
            (
                "backslashes",
                room_page("to=%5C%5Cevil.example"),
                page("concert", "/"),
            ),
            (
                "slash-backslash",
                room_page("to=/%5Cevil.example"),
                page("concert", "/"),
            ),
            (
                "absolute URL",
                room_page("to=https%3A%2F%2Fevil.example%2F"),
                page("concert", "/"),
            ),
            (
                "javascript:",
                room_page("to=javascript:alert(1)"),
                page("concert", "/"),
            ),
            (
                "tab trick",
                room_page("to=/%09/evil.example"),
                page("concert", "/"),
            ),
            (
                "plus is a space",
                room_page("to=/+/evil.example"),
                page("concert", "/"),
            ),
            (
                "Korean page route",
                room_page("to=/book/").lang("ko"),
                page_in("concert", "/book/", Lang::Ko),
            ),
            (
                "a valid token still gets the page (it moves on by itself)",
                room_page("to=/book/").token(entry("concert")),
                page("concert", "/book/"),
            ),
        ],
    );
}

#[test]
fn forwarded_headers() {
    let cases: &[(&str, bool)] = &[
        // A client must not vouch for itself as the edge, and the bypass
        // secret never leaves the edge, in any spelling.
        ("Waiting-Room-Edge", false),
        ("waiting-room-edge", false),
        ("WAITING-ROOM-EDGE", false),
        ("Waiting-Room-Bypass", false),
        ("waiting-room-bypass", false),
        // The runtime sets the transport headers itself.
        ("Host", false),
        ("content-length", false),
        ("Connection", false),
        ("Transfer-Encoding", false),
        // Everything else goes as received, credentials included.
        ("Cookie", true),
        ("Entry-Token", true),
        ("Authorization", true),
        ("Accept", true),
        ("CF-Connecting-IP", true),
        ("Content-Type", true),
        // A status poll's wish to be held (the origin's long poll).
        ("Prefer", true),
        // A join's challenge solution (the origin checks it).
        ("Waiting-Room-Challenge", true),
        ("waiting-room-challenge", true),
        ("Waiting-Room-Edges", true),
        ("X-Waiting-Room-Edge", true),
        ("", true),
    ];
    for (name, forwarded) in cases {
        assert_eq!(forwards_header(name), *forwarded, "header {name:?}");
    }
}

/// Rooms that do not cover everything, so a path read the wrong way would
/// pass ungated.
fn narrow() -> EdgeConfig {
    EdgeConfig::from_vars(|name| {
        Some(
            match name {
                "ORIGIN_URL" => "http://127.0.0.1:8080",
                "ROOMS" => {
                    r#"[{"room":"concert","paths":["/book/"]},{"room":"vip","paths":["/book/vip/"]}]"#
                }
                "BYPASS_PATHS" => r#"["/static/"]"#,
                "SIGNING_KEYS" => KEYS,
                "EDGE_SECRET" => "edge-secret-0123456789",
                "BYPASS_SECRET" => BYPASS,
                _ => return None,
            }
            .to_owned(),
        )
    })
    .expect("valid")
}

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

#[test]
fn over_long_paths_are_refused_whole() {
    let cfg = narrow();
    // Cut at the limit, this was "/x/aaa…" (unprotected); read whole, its
    // "..%2f..%2f" climb back to /book/concert.
    let climbs_back = leak(format!("/x/{}/..%2f..%2fbook/concert", "a".repeat(2100)));
    let long_unprotected = leak(format!("/{}", "a".repeat(path::MAX_PATH_LEN)));
    let at_limit = leak(format!("/book/{}", "a".repeat(path::MAX_PATH_LEN - 6)));
    check(
        &cfg,
        vec![
            (
                "cut short it would be another path",
                nav(climbs_back),
                Decision::TooLong,
            ),
            (
                "too long, unprotected",
                nav(long_unprotected),
                Decision::TooLong,
            ),
            (
                "too long, even with a token",
                nav(climbs_back).token(entry("concert")),
                Decision::TooLong,
            ),
            (
                "too long, even under /queue/",
                nav(leak(format!("/queue/{}", "a".repeat(path::MAX_PATH_LEN)))),
                Decision::TooLong,
            ),
            (
                "at the limit it is matched",
                nav(at_limit),
                page("concert", at_limit),
            ),
        ],
    );
}

#[test]
fn path_parameters_are_read_as_servlet_containers_do() {
    let cfg = narrow();
    let concert = || format!("wr_entry_concert={}", entry("concert"));
    let both = || format!("{}; wr_entry_vip={}", concert(), entry("vip"));
    check(
        &cfg,
        vec![
            (
                "..; climbs out of a bypass path",
                nav("/static/..;/book/concert"),
                page("concert", "/static/..;/book/concert"),
            ),
            (
                "..;params climbs out too",
                nav("/static/..;x=1/book/concert"),
                page("concert", "/static/..;x=1/book/concert"),
            ),
            (
                "encoded ..; climbs out too",
                nav("/static/%2e%2e%3b/book/concert"),
                page("concert", "/static/%2e%2e%3b/book/concert"),
            ),
            (
                "..; climbs out of /queue/",
                api("/queue/..;/book/x"),
                in_queue("concert", "/queue/..;/book/x"),
            ),
            (
                ";jsessionid on a room's folder",
                nav("/book;jsessionid=1/concert"),
                page("concert", "/book;jsessionid=1/concert"),
            ),
            (
                "case folded with params",
                nav("/BOOK;JSESSIONID=1/concert"),
                page("concert", "/BOOK;JSESSIONID=1/concert"),
            ),
            (
                "params on the more specific room's folder",
                nav("/book/vip;x=1/1").cookie(concert()),
                page("vip", "/book/vip;x=1/1"),
            ),
            (
                "a strict origin reads vip, a servlet one concert: both tokens needed",
                nav("/book/vip/..;/x").cookie(concert()),
                page("vip", "/book/vip/..;/x"),
            ),
            (
                "with both tokens it passes",
                nav("/book/vip/..;/x").cookie(both()),
                Decision::Forward(Pass::Admitted("concert")),
            ),
            (
                "a strict origin reads /book/..%2f as under /book/",
                nav("/book/..%2fstatic/x"),
                page("concert", "/book/..%2fstatic/x"),
            ),
            (
                "params inside a bypass path still bypass",
                nav("/static/app.css;v=2"),
                Decision::Forward(Pass::BypassPath),
            ),
            (
                "params on an unprotected path",
                nav("/elsewhere;x=1"),
                Decision::Forward(Pass::Unprotected),
            ),
            (
                "params inside the queue API",
                api("/queue/concert;x=1/status"),
                Decision::Forward(Pass::Queue),
            ),
            (
                "a token passes with params",
                nav("/book;jsessionid=1/concert").cookie(concert()),
                Decision::Forward(Pass::Admitted("concert")),
            ),
        ],
    );
}

#[test]
fn preflights_to_protected_paths_are_answered_by_the_edge() {
    let cfg = narrow();
    let options = |path: &'static str| Req {
        method: "OPTIONS",
        accept: Some("*/*"),
        mode: Some("cors"),
        ..api(path)
    };
    let preflight = |path: &'static str| Req {
        origin: Some("https://app.example"),
        acrm: Some("POST"),
        ..options(path)
    };
    check(
        &cfg,
        vec![
            (
                "Origin and Access-Control-Request-Method",
                preflight("/book/x"),
                Decision::Preflight,
            ),
            (
                "lowercase method",
                Req {
                    method: "options",
                    ..preflight("/book/x")
                },
                Decision::Preflight,
            ),
            (
                "a path read as protected in any reading",
                preflight("/static/..;/book/x"),
                Decision::Preflight,
            ),
            (
                "bare OPTIONS is gated",
                options("/book/x"),
                in_queue("concert", "/book/x"),
            ),
            (
                "Origin alone is gated",
                Req {
                    origin: Some("https://app.example"),
                    ..options("/book/x")
                },
                in_queue("concert", "/book/x"),
            ),
            (
                "Access-Control-Request-Method alone is gated",
                Req {
                    acrm: Some("GET"),
                    ..options("/book/x")
                },
                in_queue("concert", "/book/x"),
            ),
            (
                "preflight headers on a GET are no preflight",
                Req {
                    method: "GET",
                    ..preflight("/book/x")
                },
                in_queue("concert", "/book/x"),
            ),
            (
                "a preflight with a token passes as admitted",
                preflight("/book/x").token(entry("concert")),
                Decision::Forward(Pass::Admitted("concert")),
            ),
            (
                "a preflight with the bypass secret passes",
                preflight("/book/x").bypass(BYPASS),
                Decision::Forward(Pass::BypassSecret),
            ),
            (
                "bare OPTIONS with a token passes as admitted",
                options("/book/x").token(entry("concert")),
                Decision::Forward(Pass::Admitted("concert")),
            ),
            (
                "a preflight to an unprotected path passes",
                preflight("/elsewhere"),
                Decision::Forward(Pass::Unprotected),
            ),
            (
                "a preflight to a bypass path passes",
                preflight("/static/app.css"),
                Decision::Forward(Pass::BypassPath),
            ),
            (
                "a preflight to the queue API passes",
                preflight("/queue/concert/join"),
                Decision::Forward(Pass::Queue),
            ),
            (
                "bare OPTIONS on an unprotected path",
                options("/elsewhere"),
                Decision::Forward(Pass::Unprotected),
            ),
        ],
    );
    // Fail-open lets held requests through while the queue is down, but a
    // preflight is still the edge's: it carries nothing to admit.
    let open = config("open");
    for queue in [QueueHealth::Down, QueueHealth::Unknown, QueueHealth::Up] {
        assert_eq!(
            preflight("/book/x").queue(queue).decide(&open),
            Decision::Preflight,
            "{queue:?}"
        );
    }
}

#[test]
fn methods_are_forwarded_as_sent_or_refused() {
    let cfg = narrow();
    let with = |method: &'static str, path: &'static str| Req {
        method,
        ..api(path)
    };
    for method in [
        "GET",
        "HEAD",
        "POST",
        "PUT",
        "PATCH",
        "DELETE",
        "OPTIONS",
        "PROPFIND",
        "MKCOL",
        "REPORT",
        "PURGE",
        "patch",
        "X-CUSTOM_1",
        "M!#$%&'*+-.^_`|~9",
    ] {
        assert!(forwards_method(method), "{method}");
        // Any such method is gated alike and, once through, forwarded.
        assert_eq!(
            with(method, "/book/x").decide(&cfg),
            in_queue("concert", "/book/x"),
            "{method}"
        );
        assert_eq!(
            with(method, "/book/x").token(entry("concert")).decide(&cfg),
            Decision::Forward(Pass::Admitted("concert")),
            "{method}"
        );
        assert_eq!(
            with(method, "/elsewhere").decide(&cfg),
            Decision::Forward(Pass::Unprotected),
            "{method}"
        );
    }
    let too_long = leak("A".repeat(MAX_METHOD_LEN + 1));
    let longest = leak("A".repeat(MAX_METHOD_LEN));
    assert!(forwards_method(longest));
    for method in [
        "", "CONNECT", "TRACE", "trace", "TRACK", "GET ", "G ET", "GE\tT", "GET\r\nX", "GÉT",
        "(GET)", "GET/1", too_long,
    ] {
        assert!(!forwards_method(method), "{method:?}");
        // Refused whatever the path and whatever the request carries.
        for req in [
            with(method, "/book/x"),
            with(method, "/book/x").bypass(BYPASS),
            with(method, "/elsewhere"),
            with(method, "/queue/concert/join"),
            with(method, "/static/app.css"),
            with(method, "/admin/rooms").bypass(BYPASS),
        ] {
            assert_eq!(req.decide(&cfg), Decision::MethodNotSupported, "{method:?}");
        }
    }
}

#[test]
fn bodies_go_with_every_method_but_get_and_head() {
    for (method, body) in [
        ("GET", false),
        ("get", false),
        ("HEAD", false),
        ("Head", false),
        ("POST", true),
        ("PATCH", true),
        ("PROPFIND", true),
        ("OPTIONS", true),
        ("DELETE", true),
        ("GETX", true),
    ] {
        assert_eq!(forwards_body(method), body, "{method}");
    }
}

#[test]
fn admin_is_hidden_without_the_bypass_secret() {
    let cfg = narrow();
    check(
        &cfg,
        vec![
            ("admin API", api("/admin/rooms"), Decision::Hidden),
            ("the folder itself", nav("/admin"), Decision::Hidden),
            (
                "anything starting /admin",
                nav("/administrator"),
                Decision::Hidden,
            ),
            ("case folded", api("/ADMIN/rooms"), Decision::Hidden),
            ("encoded", api("/%61dmin/rooms"), Decision::Hidden),
            ("with params", api("/admin;x=1/rooms"), Decision::Hidden),
            (
                "out of a bypass path",
                api("/static/..;/admin/rooms"),
                Decision::Hidden,
            ),
            (
                "out of the queue API",
                api("/queue/..%2fadmin/rooms"),
                Decision::Hidden,
            ),
            (
                "an entry token is not enough",
                api("/admin/rooms").token(entry("concert")),
                Decision::Hidden,
            ),
            (
                "nor is a preflight",
                Req {
                    method: "OPTIONS",
                    origin: Some("https://app.example"),
                    acrm: Some("PUT"),
                    ..api("/admin/rooms")
                },
                Decision::Hidden,
            ),
            (
                "wrong secret",
                api("/admin/rooms").bypass("staff-bypass-secret-0124"),
                Decision::Hidden,
            ),
            (
                "the bypass secret opens it",
                api("/admin/rooms").bypass(BYPASS),
                Decision::Forward(Pass::BypassSecret),
            ),
            (
                "a room's own admin page is the room's",
                nav("/book/admin"),
                page("concert", "/book/admin"),
            ),
        ],
    );
    // Without a bypass secret configured, nobody reaches it through the edge.
    let no_secret = config_without_bypass_secret();
    assert_eq!(
        api("/admin/rooms").bypass(BYPASS).decide(&no_secret),
        Decision::Hidden
    );
}

fn config_without_bypass_secret() -> EdgeConfig {
    EdgeConfig::from_vars(|name| {
        Some(
            match name {
                "ORIGIN_URL" => "http://127.0.0.1:8080",
                "ROOMS" => r#"[{"room":"concert","paths":["/book/"]}]"#,
                "SIGNING_KEYS" => KEYS,
                "EDGE_SECRET" => "edge-secret-0123456789",
                _ => return None,
            }
            .to_owned(),
        )
    })
    .expect("valid")
}
