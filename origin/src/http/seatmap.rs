//! The seat map's routes under `/api/{room}/performances/{performance}/`:
//! the contract's full listing (`seats`), and the same map in two parts, the
//! layout (`layout`: sections, rows, prices; cached by its version) and the
//! state (`state`: one letter a seat), which is all that changes when
//! seats are held, released or sold.
//!
//! Every answer has an `ETag`; a request naming the current one gets 304
//! from the tag alone (three small reads). Every load counts, conditional
//! or not, before anything is read (`--seat-map-per-minute` per session,
//! bursts of [`SEAT_MAP_BURST`](crate::limits::map_loads::SEAT_MAP_BURST)):
//! over it, 429 `rate_limited`. A client that accepts gzip gets the
//! store's gzip form of the answer, made once per state, not once per
//! request.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use tracing::instrument;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::entry::ActiveEntry;
use super::responses::{BookingDown, EntryAuth, MapLimit, NotFound};
use crate::error::ApiError;
use crate::state::AppState;
use booking::{BookingStore, SeatLayout, SeatMap, SeatStates};

/// How long a browser may keep a layout without asking (its state names
/// the layout it follows, so a client sees a change and asks again).
const LAYOUT_CACHE: &str = "private, max-age=3600";
/// Answers that change with every hold: the client asks each time (with
/// `If-None-Match`), and shared caches never keep a visitor's answer.
const STATE_CACHE: &str = "private, no-cache";

/// The seat map's routes, compressed when the client accepts it.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(seats))
        .routes(routes!(layout))
        .routes(routes!(state))
        .layer(super::compression())
}

/// The booking store, or 404 when this origin sells nothing.
fn store(state: &AppState) -> Result<&BookingStore, ApiError> {
    state.booking.as_deref().ok_or(ApiError::NotFound)
}

/// Every seat of a performance with its price and state.
///
/// Cheap to poll: the answer carries an `ETag`, and a request whose
/// `If-None-Match` names the current one gets 304 without the seats being
/// read. Sent gzipped to a client that accepts it. The same map comes
/// smaller, and cheaper to keep fresh, as `layout` plus `state`.
#[utoipa::path(
    get,
    path = "/api/{room}/performances/{performance}/seats",
    tag = "booking",
    params(super::api_doc::PerformancePath),
    security(("entry_token" = [])),
    responses(
        (status = 200, description = "The seat map", body = SeatMap,
            headers(("ETag" = String, description = "Changes whenever a seat's state may have"))),
        (status = 304, description = "Unchanged since the `If-None-Match` tag"),
        EntryAuth, NotFound, MapLimit, BookingDown,
    ),
)]
#[instrument(skip_all, fields(room = %entry.0.room))]
async fn seats(
    State(state): State<AppState>,
    entry: ActiveEntry,
    Path(path): Path<super::api_doc::PerformancePath>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    map_answer(&state, &entry, &path.performance, &headers, MapPart::Seats).await
}

/// The performance's layout: sections in map order, with their rows,
/// seats a row and price.
///
/// Seat `{name}-{row}-{number}` of each section, rows from 1 and numbers
/// from 1, in this order, is the seat the state's letter at the same index
/// describes. The layout changes only when the performance is replaced:
/// browsers may keep it an hour (`ETag` is its version, which every state
/// names as `layout`; a client whose layout differs loads it again).
#[utoipa::path(
    get,
    path = "/api/{room}/performances/{performance}/layout",
    tag = "booking",
    params(super::api_doc::PerformancePath),
    security(("entry_token" = [])),
    responses(
        (status = 200, description = "The layout", body = SeatLayout,
            headers(("ETag" = String, description = "The layout's version"))),
        (status = 304, description = "Unchanged since the `If-None-Match` tag"),
        EntryAuth, NotFound, MapLimit, BookingDown,
    ),
)]
#[instrument(skip_all, fields(room = %entry.0.room))]
async fn layout(
    State(state): State<AppState>,
    entry: ActiveEntry,
    Path(path): Path<super::api_doc::PerformancePath>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let room = &entry.0.room;
    state.seat_map_loads.check(room, entry.0.claims.seq)?;
    let layout = store(&state)?
        .seat_layout(room.as_str(), &path.performance)
        .await?;
    if let Some(unchanged) = not_modified(&headers, layout.tag(), LAYOUT_CACHE) {
        return Ok(unchanged);
    }
    let gzip = accepts_gzip(&headers);
    let body = layout.body(gzip).await?;
    Ok(answer(body, gzip, layout.tag(), LAYOUT_CACHE))
}

/// Every seat's state as one letter, in the layout's order: `a`
/// available, `h` held, `b` booked.
///
/// What changes when seats are held, released or sold, and all that a
/// client with the layout needs to draw the map again: 100,000 seats are
/// 100 kB (a few hundred bytes gzipped). `layout` names the layout the
/// letters follow. Cheap to poll, as `seats`: `ETag` and `If-None-Match`.
#[utoipa::path(
    get,
    path = "/api/{room}/performances/{performance}/state",
    tag = "booking",
    params(super::api_doc::PerformancePath),
    security(("entry_token" = [])),
    responses(
        (status = 200, description = "The seats' states", body = SeatStates,
            headers(("ETag" = String, description = "Changes whenever a seat's state may have"))),
        (status = 304, description = "Unchanged since the `If-None-Match` tag"),
        EntryAuth, NotFound, MapLimit, BookingDown,
    ),
)]
#[instrument(skip_all, fields(room = %entry.0.room))]
async fn state(
    State(state): State<AppState>,
    entry: ActiveEntry,
    Path(path): Path<super::api_doc::PerformancePath>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    map_answer(&state, &entry, &path.performance, &headers, MapPart::States).await
}

/// What `seats` and `state` read from the seat map's state.
#[derive(Clone, Copy)]
enum MapPart {
    /// Every seat with its price and state.
    Seats,
    /// One letter a seat.
    States,
}

/// The body of `seats` and `state`: counts the load, answers 304 from the
/// map's tag alone when the client has it, else reads the map's state and
/// answers the part asked for.
async fn map_answer(
    state: &AppState,
    entry: &ActiveEntry,
    performance: &str,
    headers: &HeaderMap,
    part: MapPart,
) -> Result<Response, ApiError> {
    let room = &entry.0.room;
    let store = store(state)?;
    state.seat_map_loads.check(room, entry.0.claims.seq)?;
    let at = store
        .seat_map_tag(room.as_str(), performance, state.clock.now_ms())
        .await?;
    if let Some(unchanged) = not_modified(headers, at.tag(), STATE_CACHE) {
        return Ok(unchanged);
    }
    let map = store.seat_map_state(&at).await?;
    let gzip = accepts_gzip(headers);
    let body = match part {
        MapPart::Seats => map.map_body(gzip).await?,
        MapPart::States => map.state_body(gzip).await?,
    };
    Ok(answer(body, gzip, map.tag(), STATE_CACHE))
}

/// 304 when `If-None-Match` lists `tag` (`*` is not honoured: it would be a
/// 304 whatever the state, a way to poll the tag's reads for free).
fn not_modified(headers: &HeaderMap, tag: &str, cache: &'static str) -> Option<Response> {
    let etag = format!("\"{tag}\"");
    let listed = headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|t| t.trim().trim_start_matches("W/"))
        .any(|t| t == etag);
    listed.then(|| {
        let mut response = StatusCode::NOT_MODIFIED.into_response();
        set_headers(&mut response, &etag, cache);
        response
    })
}

/// A JSON answer, gzipped or not, with its tag.
fn answer(body: Bytes, gzip: bool, tag: &str, cache: &'static str) -> Response {
    let mut response = (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body,
    )
        .into_response();
    if gzip {
        response
            .headers_mut()
            .insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    }
    set_headers(&mut response, &format!("\"{tag}\""), cache);
    response
}

fn set_headers(response: &mut Response, etag: &str, cache: &'static str) {
    let h = response.headers_mut();
    if let Ok(v) = HeaderValue::from_str(etag) {
        h.insert(header::ETAG, v);
    }
    // Every answer is the visitor's own: shared caches must not keep it.
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    h.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
}

/// Whether `Accept-Encoding` takes gzip: listed (or `*`) with a quality
/// above 0, and not refused by name.
fn accepts_gzip(headers: &HeaderMap) -> bool {
    let (mut named, mut any) = (None, None);
    for item in headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
    {
        let mut parts = item.split(';');
        let coding = parts.next().unwrap_or("").trim();
        let q = parts
            .filter_map(|p| p.trim().strip_prefix("q="))
            .find_map(|q| q.trim().parse::<f32>().ok())
            .unwrap_or(1.0);
        if coding.eq_ignore_ascii_case("gzip") || coding.eq_ignore_ascii_case("x-gzip") {
            named = Some(named.unwrap_or(false) || q > 0.0);
        } else if coding == "*" {
            any = Some(q > 0.0);
        }
    }
    named.or(any).unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(
            header::ACCEPT_ENCODING,
            HeaderValue::from_str(value).unwrap(),
        );
        h
    }

    #[test]
    fn gzip_is_taken_when_offered() {
        for yes in [
            "gzip",
            "gzip, deflate, br",
            "br;q=1, GZIP;q=0.5",
            "*",
            "identity, *;q=0.1",
        ] {
            assert!(accepts_gzip(&with(yes)), "{yes}");
        }
        for no in [
            "",
            "br",
            "identity",
            "gzip;q=0",
            "*, gzip;q=0",
            "gzip;q=0.0, br",
        ] {
            assert!(!accepts_gzip(&with(no)), "{no}");
        }
        assert!(!accepts_gzip(&HeaderMap::new()));
    }
}
