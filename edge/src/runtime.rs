//! The glue to the Workers runtime (wasm only): reading the settings from
//! `Env`, copying what the gate looks at out of a `Request`, forwarding to
//! the origin, carrying out the site's `Waiting-Room-Command`, checking the
//! queue's health, and turning a [`Reply`] into a `Response`.
//!
//! No decisions here: everything that could be a rule lives in
//! [`crate::gate`], where it is tested natively.

use std::cell::{Cell, OnceCell, RefCell};
use std::pin::pin;
use std::rc::Rc;
use std::time::Duration;

use futures_util::future::{Either, select};
use token::{BYPASS_HEADER, EDGE_HEADER, ENTRY_TOKEN_HEADER};
use worker::{
    AbortController, Date, Delay, Env, Fetch, Headers, Method, Request, RequestInit,
    RequestRedirect, Response, Result, console_error, console_warn, web_sys,
};

use crate::config::EdgeConfig;
use crate::gate::command::{self, COMMAND_HEADER, REVOKE_TIMEOUT_MS, Revocation};
use crate::gate::{Input, Pass, forwards_body, forwards_header};
use crate::health::{HealthMemory, PROBE_TIMEOUT_MS, QueueHealth, status_means_down};
use crate::page::Page;
use crate::reply::Reply;
use crate::revoked::Revoked;

/// The settings and the prepared page, built once per isolate.
pub struct State {
    /// The parsed settings.
    pub cfg: EdgeConfig,
    /// The page parts that depend only on the settings.
    pub page: Page,
}

/// The worker's variables and secrets, by name. Settings that need it are
/// JSON; `[vars]` may hold them as a JSON string or as a TOML table/array
/// (which the runtime hands over as an object), so both are read.
fn lookup(env: &Env, name: &str) -> Option<String> {
    if let Ok(value) = env.var(name) {
        return Some(value.to_string());
    }
    env.object_var::<serde_json::Value>(name)
        .ok()
        .map(|value| value.to_string())
}

thread_local! {
    // wasm32 has one thread: these are per-isolate memories.
    static STATE: OnceCell<Option<Rc<State>>> = const { OnceCell::new() };
    static HEALTH: Cell<HealthMemory> = Cell::new(HealthMemory::default());
    static REVOKED: RefCell<Revoked> = RefCell::new(Revoked::default());
}

/// Runs `f` with the sessions this isolate has revoked (for the gate).
pub fn with_revoked<R>(f: impl FnOnce(&Revoked) -> R) -> R {
    REVOKED.with_borrow(f)
}

/// The isolate's settings, parsed on first use; `None` when they are
/// invalid, which is logged on every request (so the operator sees it).
pub fn state(env: &Env) -> Option<Rc<State>> {
    let cached = STATE.with(|cell| {
        cell.get_or_init(|| {
            EdgeConfig::from_vars(|name| lookup(env, name))
                .map(|cfg| {
                    let page = Page::new(&cfg.page);
                    Rc::new(State { cfg, page })
                })
                .map_err(|e| console_error!("waiting-room edge: {e}"))
                .ok()
        })
        .clone()
    });
    if cached.is_none() {
        console_error!("waiting-room edge: configuration invalid, see above");
    }
    cached
}

/// Unix milliseconds.
pub fn now_ms() -> u64 {
    Date::now().as_millis()
}

/// What this isolate knows about the queue API now.
pub fn queue_health(now_ms: u64) -> QueueHealth {
    HEALTH.with(|cell| cell.get().get(now_ms))
}

/// Feeds one outcome of a queue API request into the isolate's memory and
/// returns what is known after it, settled (see [`HealthMemory::settled`]).
fn record_health(up: bool) -> QueueHealth {
    let now = now_ms();
    HEALTH.with(|cell| {
        let mut memory = cell.get();
        memory.record(up, now);
        cell.set(memory);
        memory.settled(now)
    })
}

/// Owned copies of what the gate reads, so [`Input`] can borrow them.
pub struct Seen {
    method: String,
    path: String,
    query: String,
    accept: Option<String>,
    sec_fetch_mode: Option<String>,
    origin: Option<String>,
    access_control_request_method: Option<String>,
    accept_language: Option<String>,
    cookie: Option<String>,
    entry_token: Option<String>,
    bypass: Option<String>,
}

impl Seen {
    /// Copies the URL parts and headers the gate looks at.
    pub fn of(req: &Request) -> Result<Seen> {
        let url = req.url()?;
        let headers = req.headers();
        let get = |name: &str| headers.get(name).ok().flatten();
        Ok(Seen {
            method: req.inner().method(),
            path: url.path().to_owned(),
            query: url.query().unwrap_or("").to_owned(),
            accept: get("Accept"),
            sec_fetch_mode: get("Sec-Fetch-Mode"),
            origin: get("Origin"),
            access_control_request_method: get("Access-Control-Request-Method"),
            accept_language: get("Accept-Language"),
            cookie: get("Cookie"),
            entry_token: get(ENTRY_TOKEN_HEADER),
            bypass: get(BYPASS_HEADER),
        })
    }

    /// The gate's view of the request.
    pub fn input<'r>(&'r self, now: u64, queue: QueueHealth, revoked: &'r Revoked) -> Input<'r> {
        Input {
            method: &self.method,
            path: &self.path,
            query: &self.query,
            accept: self.accept.as_deref(),
            sec_fetch_mode: self.sec_fetch_mode.as_deref(),
            origin: self.origin.as_deref(),
            access_control_request_method: self.access_control_request_method.as_deref(),
            accept_language: self.accept_language.as_deref(),
            cookie: self.cookie.as_deref(),
            entry_token: self.entry_token.as_deref(),
            bypass: self.bypass.as_deref(),
            now,
            queue,
            revoked,
        }
    }
}

/// Sends the request to the origin as received (same method, path, query,
/// headers but those [`forwards_header`] refuses, and body; redirects
/// handed back, not followed), plus `Waiting-Room-Edge`. Queue API answers
/// also update the health memory.
pub async fn forward(req: Request, cfg: &EdgeConfig, pass: Pass<'_>) -> Result<Response> {
    let queue = pass == Pass::Queue;
    let url = req.url()?;
    let mut target = format!("{}{}", cfg.origin, url.path());
    if let Some(query) = url.query() {
        target.push('?');
        target.push_str(query);
    }
    let headers = Headers::new();
    for (name, value) in req.headers().entries() {
        if forwards_header(&name) {
            headers.append(&name, &value)?;
        }
    }
    headers.set(EDGE_HEADER, &cfg.edge_secret)?;
    let mut init = RequestInit::new();
    init.with_headers(headers)
        .with_redirect(RequestRedirect::Manual);
    // The method goes out as the runtime's own string: the worker crate's
    // `Method` reads any method it does not list (PROPFIND, ...) as GET.
    let method = req.inner().method();
    let init = web_sys::RequestInit::from(&init);
    init.set_method(&method);
    if forwards_body(&method)
        && let Some(body) = req.inner().body()
    {
        init.set_body(&body);
    }
    let outbound = match web_sys::Request::new_with_str_and_init(&target, &init) {
        Ok(outbound) => Request::from(outbound),
        Err(e) => {
            // The gate has checked the rest; what the runtime may still
            // refuse is the method. Refused, never sent as another.
            console_warn!("waiting-room edge: cannot forward method {method}: {e:?}");
            return respond(Reply::method_not_supported());
        }
    };
    match Fetch::Request(outbound).send().await {
        Ok(response) => {
            if queue {
                record_health(!status_means_down(response.status_code()));
            }
            Ok(response)
        }
        Err(e) => {
            console_warn!("waiting-room edge: origin unreachable: {e}");
            if queue {
                record_health(false);
            }
            respond(Reply::origin_unreachable(queue))
        }
    }
}

/// Carries out the site's `Waiting-Room-Command` in a response to a
/// request forwarded as `pass` (see [`crate::gate::command`]); a response
/// without one is returned as it is. For `revoke` each session the request
/// carried a token of is ended at the origin before the browser gets the
/// answer (so its next request finds it ended), and refused here from then
/// on; a failed call is logged and the answer goes out all the same. The
/// header is removed, and the entry cookie deleted, in a copy of the
/// response's headers (a fetched response's own cannot change).
pub async fn obey(
    response: Response,
    cfg: &EdgeConfig,
    seen: &Seen,
    pass: &Pass<'_>,
) -> Result<Response> {
    let Some(value) = response.headers().get(COMMAND_HEADER)? else {
        return Ok(response);
    };
    let now = now_ms() / 1000;
    // Not the isolate's memory: a session revoked before (a staff request
    // can carry one) is revoked again, which changes nothing.
    let none = Revoked::default();
    let input = seen.input(now, QueueHealth::Unknown, &none);
    let orders = command::orders(cfg, &input, pass, &value);
    for revocation in &orders.revoke {
        if revoke(cfg, revocation).await {
            REVOKED.with_borrow_mut(|revoked| {
                revoked.insert(
                    revocation.room,
                    revocation.seq,
                    revocation.refuse_until,
                    now,
                );
            });
        }
    }
    let headers = Headers::new();
    for (name, value) in response.headers().entries() {
        if command::keeps_header(&name) {
            headers.append(&name, &value)?;
        }
    }
    let cookies = response.headers().get_all("Set-Cookie")?;
    for cookie in command::set_cookies(cookies, &orders.expire) {
        headers.append("Set-Cookie", &cookie)?;
    }
    Ok(response.with_headers(headers))
}

/// Ends one session at the origin: its room's leave with the entry token,
/// as the edge (`Waiting-Room-Edge`), with a timeout. Whether the origin
/// answered 2xx; anything else is logged.
async fn revoke(cfg: &EdgeConfig, revocation: &Revocation<'_, '_>) -> bool {
    let room = revocation.room;
    let headers = Headers::new();
    let set = headers
        .set(EDGE_HEADER, &cfg.edge_secret)
        .and_then(|()| headers.set(ENTRY_TOKEN_HEADER, revocation.token))
        .and_then(|()| headers.set("Accept", "application/json"));
    if let Err(e) = set {
        console_warn!("waiting-room edge: revoke in {room}: {e}");
        return false;
    }
    let mut init = RequestInit::new();
    init.with_method(Method::Post)
        .with_headers(headers)
        .with_redirect(RequestRedirect::Manual);
    let url = format!("{}{}", cfg.origin, revocation.leave_path());
    let request = match Request::new_with_init(&url, &init) {
        Ok(request) => request,
        Err(e) => {
            console_warn!("waiting-room edge: revoke in {room}: {e}");
            return false;
        }
    };
    let controller = AbortController::default();
    let signal = controller.signal();
    let fetch = Fetch::Request(request);
    let send = pin!(fetch.send_with_signal(&signal));
    let timeout = pin!(Delay::from(Duration::from_millis(REVOKE_TIMEOUT_MS)));
    match select(send, timeout).await {
        Either::Left((Ok(response), _)) if (200..300).contains(&response.status_code()) => true,
        Either::Left((Ok(response), _)) => {
            let status = response.status_code();
            console_warn!("waiting-room edge: revoke in {room}: the origin answered {status}");
            false
        }
        Either::Left((Err(e), _)) => {
            console_warn!("waiting-room edge: revoke in {room}: origin unreachable: {e}");
            false
        }
        Either::Right(_) => {
            controller.abort();
            console_warn!(
                "waiting-room edge: revoke in {room}: no answer within {REVOKE_TIMEOUT_MS} ms"
            );
            false
        }
    }
}

/// Asks the origin's `/readyz` (which answers 200 only while its queue
/// store answers), with a timeout, feeds the answer in as one outcome, and
/// returns what is known then: never [`QueueHealth::Unknown`], and one
/// failed check alone never [`QueueHealth::Down`].
pub async fn probe(cfg: &EdgeConfig) -> QueueHealth {
    record_health(readyz(cfg).await)
}

async fn readyz(cfg: &EdgeConfig) -> bool {
    let headers = Headers::new();
    if headers.set(EDGE_HEADER, &cfg.edge_secret).is_err() {
        return false;
    }
    let mut init = RequestInit::new();
    init.with_headers(headers)
        .with_redirect(RequestRedirect::Manual);
    let Ok(request) = Request::new_with_init(&format!("{}/readyz", cfg.origin), &init) else {
        return false;
    };
    let controller = AbortController::default();
    let signal = controller.signal();
    let fetch = Fetch::Request(request);
    let send = pin!(fetch.send_with_signal(&signal));
    let timeout = pin!(Delay::from(Duration::from_millis(PROBE_TIMEOUT_MS)));
    match select(send, timeout).await {
        Either::Left((Ok(response), _)) => response.status_code() == 200,
        Either::Left((Err(_), _)) => false,
        Either::Right(_) => {
            controller.abort();
            false
        }
    }
}

/// A [`Reply`] as a Workers `Response`.
pub fn respond(reply: Reply) -> Result<Response> {
    let headers = Headers::new();
    for (name, value) in &reply.headers {
        headers.set(name, value)?;
    }
    // A 204 may have no body at all, not even an empty one.
    let response = if reply.body.is_empty() {
        Response::empty()?
    } else {
        Response::from_bytes(reply.body.into_bytes())?
    };
    Ok(response.with_status(reply.status).with_headers(headers))
}
