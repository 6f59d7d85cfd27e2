//! `GET /queue/{room}/about`: what the room's pages tell visitors beyond
//! their place (its display name, accent colour, logo, currency, how long
//! a visit lasts, the line's cap), for the waiting page wherever it is
//! served (the edge renders its own and asks here, under `/queue/*`, which
//! the edge passes through) and for apps. From the instance's cache of room
//! settings: no store call once the room is known.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::api_doc::RoomPath;
use super::extract::Room;
use super::responses::{NoRoom, StoreDown};
use crate::error::ApiError;
use crate::state::AppState;

/// The route.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(about))
}

/// What a room's pages tell visitors about it.
#[derive(Serialize, ToSchema)]
struct AboutBody<'a> {
    /// The name visitors see; null: show the room id.
    #[schema(required = true)]
    name: Option<&'a str>,
    /// The accent colour, `#rgb` or `#rrggbb`; null: the pages' own.
    #[schema(required = true)]
    color: Option<&'a str>,
    /// A logo: a path on the site; null: none.
    #[schema(required = true)]
    logo: Option<&'a str>,
    /// The currency prices are in (ISO 4217).
    #[schema(example = "KRW")]
    currency: &'a str,
    /// How long a visit lasts once let in, in seconds.
    session_seconds: u32,
    /// How many places the line ever gives; null: no cap.
    #[schema(required = true)]
    max_line: Option<u64>,
}

/// What the room's pages tell visitors: its display name, accent colour,
/// logo and currency (room settings `display_name`, `color`, `logo`,
/// `currency`), how long a visit lasts and the line's cap. Public and
/// cacheable for a minute.
#[utoipa::path(
    get,
    path = "/queue/{room}/about",
    tag = "queue",
    params(RoomPath),
    responses(
        (status = 200, description = "About the room", body = AboutBody,
            headers(("Cache-Control" = String, description = "`public, max-age=60`"))),
        NoRoom, StoreDown,
    ),
)]
async fn about(State(state): State<AppState>, Room(room): Room) -> Result<Response, ApiError> {
    if !super::queue::room_exists(&state, &room).await? {
        return Err(ApiError::UnknownRoom);
    }
    let look = state.sessions.look_for(&room, state.queue.as_ref()).await?;
    let mut response = Json(AboutBody {
        name: look.name.as_deref(),
        color: look.color.as_deref(),
        logo: look.logo.as_deref(),
        currency: &look.currency,
        session_seconds: look.session_seconds,
        max_line: look.max_line,
    })
    .into_response();
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=60"),
    );
    Ok(response)
}
