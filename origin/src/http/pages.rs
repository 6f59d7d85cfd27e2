//! The pages the origin serves itself, so the whole flow works on one
//! machine without the edge: `/` lists the rooms (with `--lobby`), `/waiting-room/{room}` is
//! the same waiting page the edge shows (polling this origin's own
//! `/queue/{room}/*`, then going on to the seat page), and `/book/{room}/`
//! is the seat page, which talks to the booking API under `/api/{room}/`;
//! `/admin/` is the operator's console, which talks to the admin API.
//!
//! The pages themselves are the shared `pages` crate's; this module only
//! looks the room up, picks the language (`?lang=`, else
//! `Accept-Language`) and sets the headers. It decides nothing about
//! admission: the queue and booking APIs check tickets and entry tokens.
//! Behind the edge, `/waiting-room/*` never reaches the origin (the edge
//! owns it) and `/book/{room}/` arrives only with a valid entry token.
//!
//! These routes are in the OpenAPI document like every other (tag `pages`):
//! HTML answers are `text/html`; their errors are the contract's JSON, or
//! for a browser (`Accept: text/html`) a short HTML page with the same
//! status.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, PoisonError};

use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use pages::{ConsolePage, Lang, Notice, RoomLink, SeatPage, WaitingPage};
use tracing::instrument;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::api_doc::{ErrorBody, RoomPath};
use crate::error::ApiError;
use crate::state::AppState;
use queue::StoreError;
use room::{ChallengeKind, RoomId, RoomSettings, RoomState};

// Built once: each holds the page's stylesheet and the CSP with its hashes.
static WAITING: LazyLock<WaitingPage> = LazyLock::new(|| WaitingPage::new(None, None));
/// Seat pages by accent colour (rooms' `color`; `None`: the default), each
/// built once: the colour is in the page's style, which its CSP hashes.
static SEATS: LazyLock<Mutex<HashMap<Option<String>, Arc<SeatPage>>>> =
    LazyLock::new(Mutex::default);
/// Colours kept at most (operators set them, a few per room at most).
const MAX_SEAT_PAGES: usize = 256;

/// The seat page in `color`.
fn seat_page_in(color: Option<&str>) -> Arc<SeatPage> {
    let mut pages = SEATS.lock().unwrap_or_else(PoisonError::into_inner);
    let key = color.map(str::to_owned);
    if let Some(page) = pages.get(&key) {
        return page.clone();
    }
    if pages.len() >= MAX_SEAT_PAGES {
        pages.clear();
    }
    let page = Arc::new(SeatPage::new(None, color));
    pages.insert(key, page.clone());
    page
}
static LOBBY_CSP: LazyLock<String> = LazyLock::new(pages::lobby::rooms_csp);
static NOTICE_CSP: LazyLock<String> = LazyLock::new(pages::lobby::notice_csp);
static CONSOLE: LazyLock<ConsolePage> = LazyLock::new(|| ConsolePage::new(None));

/// The page routes.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(room_list))
        .routes(routes!(waiting_room))
        .routes(routes!(seat_page))
        .routes(routes!(console))
        .routes(routes!(favicon))
        .layer(super::compression())
}

/// The language a page may be asked for.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)] // read by the documentation only; handlers read the raw query
struct LangQuery {
    /// `en` or `ko`; anything else (or nothing) follows `Accept-Language`.
    #[param(example = "ko")]
    lang: Option<String>,
}

/// The rooms, each linked to its waiting page (HTML), only with `--lobby`
/// (a public list of every room is the operator's choice; it costs a
/// store call per room); otherwise 404.
#[utoipa::path(
    get,
    path = "/",
    tag = "pages",
    params(LangQuery),
    responses(
        (status = 200, description = "Every room, linked to its waiting page",
            content_type = "text/html", body = String),
        (status = 404, description = "`not_found`: no `--lobby`; JSON, or a short HTML page for browsers",
            content((ErrorBody = "application/json"), (String = "text/html"))),
        (status = 503, description = "`store_unavailable`: JSON, or a short HTML page for browsers",
            content((ErrorBody = "application/json"), (String = "text/html")),
            headers(("Retry-After" = u32, description = "Seconds to wait"))),
    ),
)]
#[instrument(skip_all)]
async fn room_list(
    State(state): State<AppState>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let lang = lang(query.as_deref(), &headers);
    if !state.lobby {
        return refuse(ApiError::NotFound, &headers, lang);
    }
    match rooms(&state).await {
        Ok(rooms) => {
            let now = state.clock.now_ms();
            let hrefs: Vec<String> = rooms.iter().map(|r| waiting_url(r.id.as_str())).collect();
            let opens: Vec<Option<String>> = rooms
                .iter()
                .map(|r| {
                    r.settings
                        .opens_at
                        .filter(|_| r.settings.opens_at_ms().is_some_and(|at| at > now))
                        .and_then(|at| {
                            at.format(&time::format_description::well_known::Rfc3339)
                                .ok()
                        })
                })
                .collect();
            let links: Vec<RoomLink<'_>> = rooms
                .iter()
                .zip(&hrefs)
                .zip(&opens)
                .map(|((r, href), opens_at)| RoomLink {
                    id: r.id.as_str(),
                    href,
                    state: match r.state {
                        RoomState::Open => pages::RoomState::Open,
                        RoomState::Paused => pages::RoomState::Paused,
                        RoomState::Closed => pages::RoomState::Closed,
                    },
                    name: r.settings.display_name.as_deref(),
                    opens_at: opens_at.as_deref(),
                })
                .collect();
            page(&LOBBY_CSP, pages::lobby::rooms(lang, &links))
        }
        Err(e) => refuse(e, &headers, lang),
    }
}

/// A room as the list shows it.
struct Listed {
    id: RoomId,
    state: RoomState,
    settings: RoomSettings,
}

/// Every room with its state and settings, by id; a room removed
/// meanwhile is left out.
async fn rooms(state: &AppState) -> Result<Vec<Listed>, ApiError> {
    let mut rooms = Vec::new();
    for room in state.queue.rooms().await? {
        match state.queue.figures(&room).await {
            Ok(f) => rooms.push(Listed {
                id: room,
                state: f.state,
                settings: f.settings,
            }),
            Err(StoreError::UnknownRoom) => {}
            Err(e) => return Err(e.into()),
        }
    }
    rooms.sort_by(|a, b| a.id.as_str().cmp(b.id.as_str()));
    Ok(rooms)
}

/// The room's waiting page (HTML): joins the line, polls `/queue/{room}/status`,
/// and goes to `/book/{room}/` once admitted.
#[utoipa::path(
    get,
    path = "/waiting-room/{room}",
    tag = "pages",
    params(RoomPath, LangQuery),
    responses(
        (status = 200, description = "The waiting page", content_type = "text/html", body = String),
        (status = 404, description = "`unknown_room`: JSON, or a short HTML page for browsers",
            content((ErrorBody = "application/json"), (String = "text/html"))),
        (status = 503, description = "`store_unavailable`: JSON, or a short HTML page for browsers",
            content((ErrorBody = "application/json"), (String = "text/html")),
            headers(("Retry-After" = u32, description = "Seconds to wait"))),
    ),
)]
#[instrument(skip_all, fields(room = %raw))]
async fn waiting_room(
    State(state): State<AppState>,
    Path(raw): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let lang = lang(query.as_deref(), &headers);
    let room = match known_room(&state, &raw).await {
        Ok(room) => room,
        Err(e) => return refuse(e, &headers, lang),
    };
    let site_key = turnstile_key(&state, &room).await;
    let room = room.as_str();
    let body = WAITING.render(&pages::waiting::Visit {
        room,
        target: &format!("/book/{room}/"),
        lang,
        // The origin is the queue: when it cannot answer there is nothing
        // to fail open to.
        fail_open: false,
        join: &format!("/queue/{room}/join"),
        status: &format!("/queue/{room}/status"),
        turnstile_site_key: site_key,
    });
    page(WAITING.csp_for(site_key.is_some()), body)
}

/// The Turnstile site key a room's waiting page is rendered with (its CSP
/// then allows Cloudflare's widget): only in a room whose challenge is
/// Turnstile (the rules the join reads, cached), and only when this origin
/// has a site key. A store that cannot say gives none; the page then meets
/// the 428 and reloads once.
async fn turnstile_key<'s>(state: &'s AppState, room: &RoomId) -> Option<&'s str> {
    let key = state.turnstile.site_key()?;
    match state.sessions.known_for(room, state.queue.as_ref()).await {
        Ok(rules) if rules.challenge.kind == ChallengeKind::Turnstile => Some(key),
        _ => None,
    }
}

/// The room's seat page (HTML): performances, seats, hold, payment, the
/// booking, through the booking API under `/api/{room}/`.
#[utoipa::path(
    get,
    path = "/book/{room}/",
    tag = "pages",
    params(RoomPath, LangQuery),
    responses(
        (status = 200, description = "The seat page", content_type = "text/html", body = String),
        (status = 404, description = "`unknown_room`: JSON, or a short HTML page for browsers",
            content((ErrorBody = "application/json"), (String = "text/html"))),
        (status = 503, description = "`store_unavailable`: JSON, or a short HTML page for browsers",
            content((ErrorBody = "application/json"), (String = "text/html")),
            headers(("Retry-After" = u32, description = "Seconds to wait"))),
    ),
)]
#[instrument(skip_all, fields(room = %raw))]
async fn seat_page(
    State(state): State<AppState>,
    Path(raw): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let lang = lang(query.as_deref(), &headers);
    let room = match known_room(&state, &raw).await {
        Ok(room) => room,
        Err(e) => return refuse(e, &headers, lang),
    };
    let look = match state.sessions.look_for(&room, state.queue.as_ref()).await {
        Ok(look) => look,
        Err(e) => return refuse(e.into(), &headers, lang),
    };
    let seats = seat_page_in(look.color.as_deref());
    let room = room.as_str();
    let body = seats.render(&pages::seats::Visit {
        room,
        name: look.name.as_deref(),
        lang,
        api: &format!("/api/{room}"),
        waiting: &waiting_url(room),
        currency: &look.currency,
    });
    page(seats.csp(), body)
}

/// The operator's console (HTML): asks for the admin key, then shows every
/// room live with its last 30 minutes and its controls, all through the
/// admin API (which checks the key on every call; the page holds nothing).
/// Behind the edge, `/admin` is not reachable without the bypass header.
#[utoipa::path(
    get,
    path = "/admin/",
    tag = "pages",
    params(LangQuery),
    responses(
        (status = 200, description = "The console", content_type = "text/html", body = String),
    ),
)]
#[instrument(skip_all)]
async fn console(RawQuery(query): RawQuery, headers: HeaderMap) -> Response {
    let lang = lang(query.as_deref(), &headers);
    let body = CONSOLE.render(&pages::console::Visit {
        lang,
        api: "/admin",
        path: "/admin/",
    });
    page(CONSOLE.csp(), body)
}

/// The site's icon, so a browser's own request for it is not a 404.
#[utoipa::path(
    get,
    path = "/favicon.ico",
    tag = "pages",
    responses(
        (status = 200, description = "The icon (SVG)", content_type = "image/svg+xml", body = String),
    ),
)]
async fn favicon() -> Response {
    (
        [
            (header::CONTENT_TYPE, "image/svg+xml"),
            (header::CACHE_CONTROL, "public, max-age=86400"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        pages::FAVICON_SVG,
    )
        .into_response()
}

/// The room the path names, if it is well formed and exists.
async fn known_room(state: &AppState, raw: &str) -> Result<RoomId, ApiError> {
    let room = RoomId::parse(raw).ok_or(ApiError::UnknownRoom)?;
    if super::queue::room_exists(state, &room).await? {
        Ok(room)
    } else {
        Err(ApiError::UnknownRoom)
    }
}

fn waiting_url(room: &str) -> String {
    format!("/waiting-room/{room}")
}

/// `?lang=` when it names a language, else `Accept-Language`.
pub(super) fn lang(query: Option<&str>, headers: &HeaderMap) -> Lang {
    let chosen = query
        .unwrap_or("")
        .split('&')
        .find_map(|pair| pair.strip_prefix("lang="));
    let accept = headers
        .get(header::ACCEPT_LANGUAGE)
        .and_then(|v| v.to_str().ok());
    Lang::choose(chosen, accept)
}

/// Whether the client ranks HTML above JSON in `Accept` (a browser
/// navigation does; API clients and curl's `*/*` do not).
fn wants_html(headers: &HeaderMap) -> bool {
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let (mut html, mut json) = (0, 0);
    for (media, q) in pages::weighted(accept) {
        if media.eq_ignore_ascii_case("text/html") {
            html = html.max(q);
        } else if media.eq_ignore_ascii_case("application/json") {
            json = json.max(q);
        }
    }
    html > 0 && html >= json
}

/// An HTML page with the headers every page gets.
fn page(csp: &str, body: String) -> Response {
    let mut response = (StatusCode::OK, body).into_response();
    html_headers(response.headers_mut(), csp);
    response
}

fn html_headers(headers: &mut HeaderMap, csp: &str) {
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(pages::CONTENT_TYPE),
    );
    // Pages carry per-visitor state (language, the room's state) and the
    // waiting page must never be served from a cache.
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    if let Ok(value) = HeaderValue::from_str(csp) {
        headers.insert(header::CONTENT_SECURITY_POLICY, value);
    }
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    headers.insert(
        header::VARY,
        HeaderValue::from_static("Accept, Accept-Language"),
    );
}

/// The contract's JSON error, or for a browser the same status (and
/// headers, e.g. `Retry-After`) with a short HTML page.
pub(super) fn refuse(e: ApiError, headers: &HeaderMap, lang: Lang) -> Response {
    let notice = match e.status() {
        StatusCode::NOT_FOUND if matches!(e, ApiError::NotFound) => Some(Notice::NotFound),
        StatusCode::NOT_FOUND => Some(Notice::UnknownRoom),
        StatusCode::SERVICE_UNAVAILABLE => Some(Notice::Unavailable),
        _ => None,
    };
    let response = e.into_response();
    match notice {
        Some(notice) if wants_html(headers) => {
            let (mut parts, _) = response.into_parts();
            parts.headers.remove(header::CONTENT_LENGTH);
            html_headers(&mut parts.headers, &NOTICE_CSP);
            Response::from_parts(parts, Body::from(notice.render(lang)))
        }
        _ => response,
    }
}
