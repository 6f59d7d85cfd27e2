//! The admin API of the contract, under `/admin/rooms`: create or replace
//! (PUT), change (PATCH), read (GET) and pause, resume or close rooms, with
//! their live figures. Every route needs `Authorization: Bearer <admin key>`
//! (compared in constant time); without the right key nothing is read or
//! changed. Settings take effect on the promoter's next tick.

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use std::net::SocketAddr;

use axum::extract::{ConnectInfo, DefaultBodyLimit, FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, header};
use serde::Serialize;
use serde_json::{Map, Value};
use tracing::instrument;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::api_doc::RoomPath;
use super::extract::{Room, optional_json};
use super::history::SeatCounts;
use super::responses::{AdminAuth, BadBody, NoRoom, StoreDown};
use crate::error::ApiError;
use crate::history::Seats;
use crate::limits::strikes;
use crate::state::AppState;
use queue::{RoomFigures, StoreError};
use room::{RoomId, RoomSettings, RoomState};

/// Largest admin body: settings with the most windows fit with room to spare.
pub const MAX_BODY: usize = 64 * 1024;

/// The admin routes. Each handler takes [`Admin`] first, so the key is
/// checked before the path or the body is even read.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_rooms))
        .routes(routes!(get_room, put_room, patch_room))
        .routes(routes!(pause))
        .routes(routes!(resume))
        .routes(routes!(close))
        .layer(DefaultBodyLimit::max(MAX_BODY))
}

/// Proof that the request carries the admin key; extracting it refuses
/// (401) any request that does not. A client address that keeps failing is
/// refused (401 too, as the contract has it for a wrong key, with
/// `Retry-After`) before its key is even compared, a few tries a second (see
/// `strikes`), so a lucky guess while throttled learns nothing; refusals are
/// logged at most once a second. Every client over a socket is throttled,
/// the machine itself too (behind a proxy on the same host, give it in
/// `--trusted-proxies` so clients are told apart); only requests that came
/// over no socket (the app driven in-process) are not.
pub(super) struct Admin;

impl FromRequestParts<AppState> for Admin {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Admin, ApiError> {
        let client = parts
            .extensions
            .get::<ConnectInfo<SocketAddr>>()
            .map(|ConnectInfo(peer)| state.clients.client_of(&parts.headers, Some(*peer)));
        let checked = match client.as_ref().map(|c| state.admin_strikes.check(c)) {
            Some(Err(retry_after_secs)) => Err(ApiError::AdminThrottled { retry_after_secs }),
            _ => check_admin_key(state, &parts.headers).inspect_err(|_| {
                if let Some(c) = client {
                    state.admin_strikes.strike(c);
                }
            }),
        };
        checked
            .inspect_err(|e| strikes::log_refusal(client.as_ref(), e.code(), parts.uri.path()))?;
        Ok(Admin)
    }
}

fn check_admin_key(state: &AppState, headers: &HeaderMap) -> Result<(), ApiError> {
    let key = state.admin_key.as_ref().ok_or(ApiError::AdminDisabled)?;
    let value = headers
        .get(header::AUTHORIZATION)
        .ok_or(ApiError::MissingAdminKey)?
        .as_bytes();
    // The scheme name is case-insensitive (RFC 9110).
    let presented = value
        .get(..7)
        .filter(|scheme| scheme.eq_ignore_ascii_case(b"bearer "))
        .and_then(|_| value.get(7..))
        .ok_or(ApiError::InvalidAdminKey)?;
    if key.matches(presented.trim_ascii()) {
        Ok(())
    } else {
        Err(ApiError::InvalidAdminKey)
    }
}

/// A room as the admin API returns it.
#[derive(Serialize, ToSchema)]
struct AdminRoom {
    /// The room's id.
    id: String,
    /// Whether it lets people in.
    state: RoomState,
    /// Its settings, as PUT takes them.
    settings: RoomSettings,
    /// Its live figures.
    live: Live,
}

/// A room's live figures.
#[derive(Serialize, ToSchema)]
struct Live {
    /// Everyone in line.
    waiting: u64,
    /// Visitors inside now.
    active: u64,
    /// Admitted since the room was created.
    admitted_total: u64,
    /// Waiters dropped for not polling since the room was created.
    abandoned_total: u64,
    /// Places given since the room was created (what `max_line` caps).
    places_given: u64,
    /// Admissions per second actually achieved recently.
    #[schema(minimum = 0)]
    admit_rate: f64,
    /// How long the visitor at the front has waited; null when nobody waits.
    #[schema(required = true)]
    oldest_wait_seconds: Option<u64>,
    /// The share of `admit_per_second` admission runs at now: 1 unless
    /// adaptive admission (`target_booking_p99_ms`) has slowed it because
    /// booking is slow.
    #[schema(minimum = 0, maximum = 1)]
    rate_factor: f64,
    /// The room's seats over all its performances as the origin last
    /// counted them (a fraction of a second ago); null when it sells
    /// nothing, or before the first count.
    #[schema(required = true)]
    seats: Option<SeatCounts>,
}

/// Every room.
#[derive(Serialize, ToSchema)]
struct RoomList {
    /// The rooms, by id.
    rooms: Vec<AdminRoom>,
}

impl AdminRoom {
    fn new(room: &RoomId, f: RoomFigures, seats: Option<Seats>) -> AdminRoom {
        AdminRoom {
            id: room.to_string(),
            state: f.state,
            settings: f.settings,
            live: Live {
                waiting: f.waiting,
                active: f.active,
                admitted_total: f.admitted_total,
                abandoned_total: f.abandoned_total,
                places_given: f.places_given,
                admit_rate: if f.admit_rate.is_finite() && f.admit_rate > 0.0 {
                    f.admit_rate
                } else {
                    0.0
                },
                oldest_wait_seconds: f.oldest_wait_seconds,
                rate_factor: f.sale.rate_factor,
                seats: seats.map(SeatCounts::from),
            },
        }
    }
}

async fn room_view(state: &AppState, room: &RoomId) -> Result<Json<AdminRoom>, ApiError> {
    let figures = state.queue.figures(room).await?;
    state.sessions.learn(room, &figures.settings);
    let seats = state.history.seats(room);
    Ok(Json(AdminRoom::new(room, figures, seats)))
}

fn invalid(e: impl std::fmt::Display) -> ApiError {
    ApiError::InvalidBody(e.to_string())
}

/// The room's own rules (which include what the stores can represent),
/// and what this origin can do: identity needs a key to check tokens with,
/// Turnstile a secret and a site key.
fn validate(state: &AppState, settings: &RoomSettings) -> Result<(), ApiError> {
    settings.validate().map_err(invalid)?;
    if settings.identity.is_on() && !state.identities.has_keys() {
        return Err(invalid(format!(
            "identity: \"{}\" needs identity keys, and this origin was started without \
             --identity-keys or --identity-public-keys",
            settings.identity.as_str()
        )));
    }
    if settings.challenge == room::ChallengeKind::Turnstile && !state.turnstile.is_configured() {
        return Err(invalid(
            "challenge: \"turnstile\" needs Turnstile keys, and this origin was started \
             without --turnstile-secret and --turnstile-site-key",
        ));
    }
    Ok(())
}

/// Every room with its settings and live figures.
#[utoipa::path(
    get,
    path = "/admin/rooms",
    tag = "admin",
    security(("admin_key" = [])),
    responses(
        (status = 200, description = "Every room", body = RoomList),
        AdminAuth, StoreDown,
    ),
)]
#[instrument(skip_all)]
async fn list_rooms(_: Admin, State(state): State<AppState>) -> Result<Json<RoomList>, ApiError> {
    let mut rooms = Vec::new();
    for room in state.queue.rooms().await? {
        match state.queue.figures(&room).await {
            Ok(f) => rooms.push(AdminRoom::new(&room, f, state.history.seats(&room))),
            Err(StoreError::UnknownRoom) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(Json(RoomList { rooms }))
}

/// A room with its settings and live figures.
#[utoipa::path(
    get,
    path = "/admin/rooms/{room}",
    tag = "admin",
    params(RoomPath),
    security(("admin_key" = [])),
    responses(
        (status = 200, description = "The room", body = AdminRoom),
        AdminAuth, NoRoom, StoreDown,
    ),
)]
#[instrument(skip_all, fields(%room))]
async fn get_room(
    _: Admin,
    State(state): State<AppState>,
    Room(room): Room,
) -> Result<Json<AdminRoom>, ApiError> {
    room_view(&state, &room).await
}

/// Create a room or replace its settings.
///
/// Missing fields take their defaults; unknown fields are refused. The
/// room's line, sessions, counters and state are kept; a new room starts
/// open. Takes effect on the next tick.
#[utoipa::path(
    put,
    path = "/admin/rooms/{room}",
    tag = "admin",
    params(RoomPath),
    request_body(content = RoomSettings, description = "The settings; every field is optional"),
    security(("admin_key" = [])),
    responses(
        (status = 200, description = "The room as it now is", body = AdminRoom),
        BadBody, AdminAuth, NoRoom, StoreDown,
    ),
)]
#[instrument(skip_all, fields(%room))]
async fn put_room(
    _: Admin,
    State(state): State<AppState>,
    Room(room): Room,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<AdminRoom>, ApiError> {
    let fields: Map<String, Value> = optional_json(body)?;
    let settings = merge(&RoomSettings::default(), fields)?;
    validate(&state, &settings)?;
    state.queue.put_room(&room, &settings).await?;
    state.snapshots.settings_written(&room);
    tracing::info!(?settings, "room put");
    room_view(&state, &room).await
}

/// Change some of a room's settings.
///
/// The given fields replace the current ones (a whole field at a time:
/// `windows` is replaced as a list; `null` clears `opens_at` or
/// `max_line`); the rest stay. Takes effect on the next tick.
#[utoipa::path(
    patch,
    path = "/admin/rooms/{room}",
    tag = "admin",
    params(RoomPath),
    request_body(content = RoomSettings, description = "The fields to change"),
    security(("admin_key" = [])),
    responses(
        (status = 200, description = "The room as it now is", body = AdminRoom),
        BadBody, AdminAuth, NoRoom, StoreDown,
    ),
)]
#[instrument(skip_all, fields(%room))]
async fn patch_room(
    _: Admin,
    State(state): State<AppState>,
    Room(room): Room,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<AdminRoom>, ApiError> {
    let changes: Map<String, Value> = optional_json(body)?;
    let current = state.queue.figures(&room).await?.settings;
    let settings = merge(&current, changes)?;
    validate(&state, &settings)?;
    if settings != current {
        state.queue.put_room(&room, &settings).await?;
        state.snapshots.settings_written(&room);
        tracing::info!(?settings, "room patched");
    }
    room_view(&state, &room).await
}

/// `current` with the fields of `changes` in place (PUT merges onto the
/// defaults, PATCH onto the room's settings); unknown fields, wrong types
/// and out-of-range numbers are refused.
fn merge(current: &RoomSettings, changes: Map<String, Value>) -> Result<RoomSettings, ApiError> {
    let Value::Object(mut fields) = serde_json::to_value(current).map_err(|e| {
        tracing::error!(error = %e, "settings do not serialize");
        ApiError::Internal
    })?
    else {
        return Err(ApiError::Internal);
    };
    for (name, mut value) in changes {
        integral_floats_as_integers(&mut value);
        fields.insert(name, value);
    }
    serde_json::from_value(Value::Object(fields)).map_err(invalid)
}

/// JSON has one number type: `5.0` is the integer 5 to JSON Schema and to
/// most clients' encoders, but serde reads only `5` into an integer field.
/// Whole numbers within the integer range become integers; float fields
/// read them back unchanged.
pub(super) fn integral_floats_as_integers(value: &mut Value) {
    match value {
        Value::Number(n) if n.is_f64() => {
            let f = n.as_f64().unwrap_or(f64::NAN);
            // 2^64 and -2^63 are exact in f64; the casts below are exact inside them.
            if f.fract() == 0.0 && (0.0..18_446_744_073_709_551_616.0).contains(&f) {
                *value = Value::from(f as u64);
            } else if f.fract() == 0.0 && (-9_223_372_036_854_775_808.0..0.0).contains(&f) {
                *value = Value::from(f as i64);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(integral_floats_as_integers),
        Value::Object(fields) => fields.values_mut().for_each(integral_floats_as_integers),
        _ => {}
    }
}

/// The body of `pause`, `resume` and `close`, which differ only in the
/// state they set (and in their documentation): sets it, lets the snapshots
/// know, and answers the room as it now is.
async fn set_state(
    state: &AppState,
    room: &RoomId,
    to: RoomState,
) -> Result<Json<AdminRoom>, ApiError> {
    state.queue.set_state(room, to).await?;
    state.snapshots.settings_written(room);
    tracing::info!(%room, state = to.as_str(), "room state set");
    room_view(state, room).await
}

/// Pause a room: joins still take places, nobody is admitted.
///
/// Abandoned waiters and ended sessions are still dropped.
#[utoipa::path(
    post,
    path = "/admin/rooms/{room}/pause",
    tag = "admin",
    params(RoomPath),
    security(("admin_key" = [])),
    responses(
        (status = 200, description = "The room as it now is", body = AdminRoom),
        AdminAuth, NoRoom, StoreDown,
    ),
)]
async fn pause(
    _: Admin,
    State(state): State<AppState>,
    Room(room): Room,
) -> Result<Json<AdminRoom>, ApiError> {
    set_state(&state, &room, RoomState::Paused).await
}

/// Open a room (after a pause or a close): admissions resume on the next tick.
///
/// The admission budget never banks more than one second of the rate, so
/// a resume does not flood the site.
#[utoipa::path(
    post,
    path = "/admin/rooms/{room}/resume",
    tag = "admin",
    params(RoomPath),
    security(("admin_key" = [])),
    responses(
        (status = 200, description = "The room as it now is", body = AdminRoom),
        AdminAuth, NoRoom, StoreDown,
    ),
)]
async fn resume(
    _: Admin,
    State(state): State<AppState>,
    Room(room): Room,
) -> Result<Json<AdminRoom>, ApiError> {
    set_state(&state, &room, RoomState::Open).await
}

/// Close a room: joins are answered `closed` and take no place; waiters read `closed`.
///
/// Visitors already inside stay until their session ends.
#[utoipa::path(
    post,
    path = "/admin/rooms/{room}/close",
    tag = "admin",
    params(RoomPath),
    security(("admin_key" = [])),
    responses(
        (status = 200, description = "The room as it now is", body = AdminRoom),
        AdminAuth, NoRoom, StoreDown,
    ),
)]
async fn close(
    _: Admin,
    State(state): State<AppState>,
    Room(room): Room,
) -> Result<Json<AdminRoom>, ApiError> {
    set_state(&state, &room, RoomState::Closed).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => unreachable!(),
        }
    }

    #[test]
    fn merge_changes_only_the_given_fields() {
        let current = RoomSettings {
            max_line: Some(100),
            ..RoomSettings::default()
        };
        let merged = merge(&current, object(json!({"capacity": 3}))).unwrap();
        assert_eq!(merged.capacity, 3);
        assert_eq!(merged.max_line, Some(100));
        let cleared = merge(&current, object(json!({"max_line": null}))).unwrap();
        assert_eq!(cleared.max_line, None);
        assert_eq!(merge(&current, Map::new()).unwrap(), current);
    }

    #[test]
    fn whole_floats_are_integers() {
        let merged = merge(
            &RoomSettings::default(),
            object(
                json!({"capacity": 7.0, "admit_per_second": 2.5, "session_seconds": 60,
                "windows": [{"starts_at": "2030-01-01T00:00:00Z", "ends_at": "2030-01-02T00:00:00Z",
                    "capacity": 3.0}]}),
            ),
        )
        .unwrap();
        assert_eq!(merged.capacity, 7);
        assert_eq!(merged.admit_per_second, 2.5);
        assert_eq!(merged.windows[0].capacity, Some(3));
        for bad in [
            json!({"capacity": 7.5}),
            json!({"capacity": -1.0}),
            json!({"capacity": 1e20}),
        ] {
            assert!(
                merge(&RoomSettings::default(), object(bad.clone())).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn merge_refuses_what_put_refuses() {
        let current = RoomSettings::default();
        for bad in [
            json!({"capacty": 3}),
            json!({"capacity": -1}),
            json!({"capacity": "3"}),
            json!({"capacity": null}),
            json!({"opens_at": "tomorrow"}),
            json!({"method": "lifo"}),
        ] {
            assert!(merge(&current, object(bad.clone())).is_err(), "{bad}");
        }
    }
}
