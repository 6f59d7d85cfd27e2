//! Every decision the edge makes about a request, as one plain function:
//! [`decide`] takes the settings and what the request carries, and says
//! where it goes. No I/O, no clock, no Workers types, so every rule is
//! unit-tested natively (`gate/tests.rs`).
//!
//! Paths are matched in every way an origin may read them
//! ([`crate::path::Readings`]: fully resolved, decoded, as received). A
//! request passes by a path rule only when every reading agrees, and is
//! held when any reading is protected, so no origin's reading of a path is
//! less guarded than the edge's.
//!
//! The rules, in order (the first that applies wins):
//! 1. A path over [`crate::path::MAX_PATH_LEN`] bytes is refused (414):
//!    matching only part of it could match another path.
//! 2. A method the edge cannot forward as sent is refused (501, see
//!    [`forwards_method`]): the edge never sends the origin another method
//!    than the client's.
//! 3. A path starting `/admin` (in any reading) is answered 404 unless the
//!    request carries the bypass secret: the origin's admin API is not for
//!    the public internet.
//! 4. `/queue/*` passes to the origin (the queue API).
//! 5. `/waiting-room/{room}` is the edge's own waiting page for a
//!    configured room (404 for others); `?to=` names where to go once
//!    admitted, same-site paths only.
//! 6. A `BYPASS_PATHS` prefix passes.
//! 7. A path no room protects passes.
//! 8. A protected path passes with the bypass secret, or with a valid entry
//!    token (cookie `wr_entry_{room}` or header `Entry-Token`) for its room,
//!    for each room if its readings fall under different ones, of a session
//!    this isolate has not revoked for the site ([`crate::revoked`]). Any
//!    method, `OPTIONS` included, is gated alike.
//! 9. Otherwise the request is held. A CORS preflight (`OPTIONS` with
//!    `Origin` and `Access-Control-Request-Method`) is answered by the edge
//!    itself, 204 with no CORS allowance ([`Decision::Preflight`]): a
//!    preflight carries no credentials, so passing it would open protected
//!    origin handlers to anyone who sends those two headers. With
//!    `FAIL_MODE=open` and the queue known to be down any other held
//!    request passes; with it unknown the gate asks for a check
//!    ([`Decision::CheckQueue`]) and is called again with the answer.
//!    A held request gets the waiting page or the JSON 429 (see
//!    [`crate::http::want`]).
//!
//! What a forwarded request carries is a rule too: [`forwards_method`]
//! says which methods go out as sent, [`forwards_body`] which carry the
//! body, and [`forwards_header`] which request headers are copied. What
//! the edge does with the site's `Waiting-Room-Command` in a response is
//! in [`command`].

use token::{BYPASS_HEADER, EDGE_HEADER, Kind};

use crate::config::{ADMIN_PREFIX, EdgeConfig, FailMode, PAGE_PREFIX, QUEUE_PREFIX};
use crate::health::QueueHealth;
use crate::http::{self, Lang, Want};
use crate::path;
use crate::revoked::Revoked;

pub mod command;

/// What the gate looks at in a request. Header values are as received
/// (`None` when absent); nothing here has been checked yet.
#[derive(Clone, Debug)]
pub struct Input<'r> {
    /// The HTTP method (`GET`, `POST`, ...).
    pub method: &'r str,
    /// The URL path as received, percent-encoding and all.
    pub path: &'r str,
    /// The query string without `?` (empty when none).
    pub query: &'r str,
    /// `Accept`.
    pub accept: Option<&'r str>,
    /// `Sec-Fetch-Mode` (browsers send `navigate` for page loads).
    pub sec_fetch_mode: Option<&'r str>,
    /// `Origin`.
    pub origin: Option<&'r str>,
    /// `Access-Control-Request-Method` (sent with CORS preflights).
    pub access_control_request_method: Option<&'r str>,
    /// `Accept-Language`.
    pub accept_language: Option<&'r str>,
    /// `Cookie`.
    pub cookie: Option<&'r str>,
    /// `Entry-Token`.
    pub entry_token: Option<&'r str>,
    /// `Waiting-Room-Bypass`.
    pub bypass: Option<&'r str>,
    /// Unix seconds.
    pub now: u64,
    /// What is known about the queue API (see [`crate::health`]).
    pub queue: QueueHealth,
    /// Sessions this isolate revoked: their entry tokens open nothing.
    pub revoked: &'r Revoked,
}

/// Why a request goes to the origin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pass<'c> {
    /// `/queue/*`: the queue API.
    Queue,
    /// No room protects the path.
    Unprotected,
    /// Under a `BYPASS_PATHS` prefix.
    BypassPath,
    /// Carried the bypass secret.
    BypassSecret,
    /// A valid entry token for this room.
    Admitted(&'c str),
    /// Held, but `FAIL_MODE=open` and the queue is down.
    FailOpen(&'c str),
}

/// Where a request goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision<'c> {
    /// Forward to the origin unchanged (plus `Waiting-Room-Edge`).
    Forward(Pass<'c>),
    /// Answer with the room's waiting page (200, `no-store`).
    WaitingPage {
        /// The room.
        room: &'c str,
        /// Where to go once admitted: a same-site path and query.
        target: String,
        /// The page's language.
        lang: Lang,
    },
    /// Answer 429 with the queue's URLs.
    InQueue {
        /// The room.
        room: &'c str,
        /// The path and query that was asked for.
        target: String,
    },
    /// Held with `FAIL_MODE=open` and nothing recent known about the queue:
    /// check it, then call [`decide`] again with [`Input::queue`] set.
    CheckQueue,
    /// An edge-owned path for a room that is not configured.
    NotFound,
    /// A path the public does not see (the origin's admin API): 404, as if
    /// it did not exist.
    Hidden,
    /// A path longer than [`path::MAX_PATH_LEN`]: 414.
    TooLong,
    /// A method the edge cannot forward as sent (see [`forwards_method`]):
    /// 501.
    MethodNotSupported,
    /// A CORS preflight for a protected path the request may not enter:
    /// answered by the edge, 204 with no CORS allowance, so the browser
    /// does not send the cross-site request it asked about.
    Preflight,
}

/// Decides where a request goes. See the module docs for the rules.
#[must_use]
pub fn decide<'c>(cfg: &'c EdgeConfig, input: &Input<'_>) -> Decision<'c> {
    let Ok(paths) = path::Readings::of(input.path) else {
        return Decision::TooLong;
    };
    if !forwards_method(input.method) {
        return Decision::MethodNotSupported;
    }
    let bypass_secret = input
        .bypass
        .is_some_and(|secret| cfg.is_bypass_secret(secret));

    if paths.iter().any(|p| p.starts_with(ADMIN_PREFIX)) {
        return if bypass_secret {
            Decision::Forward(Pass::BypassSecret)
        } else {
            Decision::Hidden
        };
    }
    if paths.iter().all(|p| path::has_prefix(p, QUEUE_PREFIX)) {
        return Decision::Forward(Pass::Queue);
    }
    if let Some(rest) = paths.resolved().strip_prefix(PAGE_PREFIX) {
        let wanted = rest.split('/').next().unwrap_or("");
        return match cfg.room(wanted) {
            Some(room) => Decision::WaitingPage {
                room,
                target: path::query_param(input.query, "to")
                    .as_deref()
                    .and_then(path::safe_target)
                    .unwrap_or("/")
                    .to_owned(),
                lang: Lang::from_accept_language(input.accept_language),
            },
            None => Decision::NotFound,
        };
    }
    if paths.iter().all(|p| cfg.is_bypass_path(p)) {
        return Decision::Forward(Pass::BypassPath);
    }
    let rooms = rooms_of(cfg, &paths);
    let Some(&first) = rooms.first() else {
        return Decision::Forward(Pass::Unprotected);
    };
    if bypass_secret {
        return Decision::Forward(Pass::BypassSecret);
    }
    let Some(room) = rooms.into_iter().find(|room| !has_entry(cfg, input, room)) else {
        return Decision::Forward(Pass::Admitted(first));
    };
    if is_preflight(input) {
        return Decision::Preflight;
    }
    if cfg.fail_mode == FailMode::Open {
        match input.queue {
            QueueHealth::Down => return Decision::Forward(Pass::FailOpen(room)),
            QueueHealth::Unknown => return Decision::CheckQueue,
            QueueHealth::Up => {}
        }
    }

    let asked = if input.query.is_empty() {
        input.path.to_owned()
    } else {
        format!("{}?{}", input.path, input.query)
    };
    match http::want(input.accept, input.sec_fetch_mode) {
        Want::Page => Decision::WaitingPage {
            room,
            target: path::safe_target(&asked).unwrap_or("/").to_owned(),
            lang: Lang::from_accept_language(input.accept_language),
        },
        Want::Json => Decision::InQueue {
            room,
            target: path::safe_target(&asked).unwrap_or("/").to_owned(),
        },
    }
}

/// The rooms protecting any reading of the path, each once, in the
/// readings' order.
fn rooms_of<'c>(cfg: &'c EdgeConfig, paths: &path::Readings) -> Vec<&'c str> {
    let mut rooms: Vec<&'c str> = Vec::new();
    for room in paths.iter().filter_map(|p| cfg.room_for(p)) {
        if !rooms.contains(&room) {
            rooms.push(room);
        }
    }
    rooms
}

/// Whether the request is a CORS preflight: `OPTIONS` with both `Origin`
/// and `Access-Control-Request-Method`, as browsers send it. A bare
/// `OPTIONS` is an ordinary request some origins answer with content, and
/// held like any other.
fn is_preflight(input: &Input<'_>) -> bool {
    input.method.eq_ignore_ascii_case("OPTIONS")
        && input.origin.is_some()
        && input.access_control_request_method.is_some()
}

/// Whether the request carries a genuine, unexpired entry token for `room`
/// of a session this isolate has not revoked.
fn has_entry(cfg: &EdgeConfig, input: &Input<'_>, room: &str) -> bool {
    entry_tokens(cfg, input, room).next().is_some()
}

/// The request's genuine, unexpired entry tokens for `room` of sessions
/// this isolate has not revoked, with their claims: its `Entry-Token`
/// header first, then its `wr_entry_{room}` cookies. Overlong values need
/// no check here: the keyring refuses anything over
/// [`token::MAX_TOKEN_LEN`] before decoding it.
fn entry_tokens<'r>(
    cfg: &EdgeConfig,
    input: &Input<'r>,
    room: &str,
) -> impl Iterator<Item = (&'r str, token::Claims)> {
    let name = token::entry_cookie(room);
    let cookies: Vec<&'r str> = input
        .cookie
        .map(|cookie| http::cookie_values(cookie, &name).collect())
        .unwrap_or_default();
    input
        .entry_token
        .into_iter()
        .chain(cookies)
        .map(str::trim)
        .filter_map(move |token| {
            cfg.keys
                .verify(token, Kind::Entry, room, input.now)
                .ok()
                .filter(|claims| !input.revoked.contains(room, claims.seq, input.now))
                .map(|claims| (token, claims))
        })
}

/// Longest method the edge forwards; registered methods are at most 17
/// bytes (`UPDATEREDIRECTREF`).
pub const MAX_METHOD_LEN: usize = 32;

/// Methods the Fetch API the edge forwards with refuses to send
/// (`new Request` throws): a tunnel and two that echo the request back,
/// credentials and all.
const FORBIDDEN_METHODS: [&str; 3] = ["CONNECT", "TRACE", "TRACK"];

/// Whether the edge can forward a request with this method exactly as
/// sent: an HTTP token (RFC 9110: letters, digits and
/// ``!#$%&'*+-.^_`|~``) of at most [`MAX_METHOD_LEN`] bytes that the Fetch
/// API sends. Any such method is forwarded under its own name (`PATCH`,
/// `PROPFIND`, an extension method), never read as another.
#[must_use]
pub fn forwards_method(method: &str) -> bool {
    let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
    !method.is_empty()
        && method.len() <= MAX_METHOD_LEN
        && method.bytes().all(token)
        && !FORBIDDEN_METHODS
            .iter()
            .any(|m| method.eq_ignore_ascii_case(m))
}

/// Whether a forwarded request with this method carries the client's body:
/// all but `GET` and `HEAD` (any case, as the Fetch API reads them), which
/// may not have one.
#[must_use]
pub fn forwards_body(method: &str) -> bool {
    !(method.eq_ignore_ascii_case("GET") || method.eq_ignore_ascii_case("HEAD"))
}

/// Request headers never copied to the origin: the runtime sets the
/// transport ones itself, a client must not choose the edge's secret header
/// (only the edge may vouch for a request), and the bypass secret stays at
/// the edge.
const NOT_FORWARDED: [&str; 6] = [
    "host",
    "content-length",
    "connection",
    "transfer-encoding",
    EDGE_HEADER,
    BYPASS_HEADER,
];

/// Whether a request header called `name` (any case) is copied to the
/// origin when the edge forwards a request.
#[must_use]
pub fn forwards_header(name: &str) -> bool {
    !NOT_FORWARDED.iter().any(|n| name.eq_ignore_ascii_case(n))
}

#[cfg(test)]
mod tests;
