//! `GET /queue/{room}/draw`: the room's pre-queue draw, so anyone can check
//! it ([`queue::draw`]): the commitment (SHA-256 of the secret seed) from
//! the moment the room has an opening, before its first pre-queue join; the
//! seed from the opening on. With the seed and the tickets' sequence
//! numbers anyone recomputes the order the pre-queue was let in.
//!
//! A room that never had an opening has no draw: 404 `no_draw`.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use tracing::instrument;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::api_doc::RoomPath;
use super::extract::Room;
use super::queue::rfc3339_ms;
use super::responses::{NoRoomOrDraw, StoreDown};
use crate::error::ApiError;
use crate::state::AppState;
use queue::draw::to_hex;

/// The draw route.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(room_draw))
}

/// A room's pre-queue draw.
#[derive(Serialize, ToSchema)]
struct DrawBody {
    /// SHA-256 of the seed's 32 bytes (lowercase hex): fixed before the
    /// room's first pre-queue join.
    #[schema(example = "630dcd2966c4336691125448bbb25b4ff412a49c732db2c8abc1b8581bd710dd")]
    commitment: String,
    /// The seed (lowercase hex, 32 bytes), from the opening on; null before.
    #[schema(required = true)]
    seed: Option<String>,
    /// The opening that reveals the seed (RFC 3339).
    #[schema(format = DateTime)]
    opens_at: String,
}

/// The room's pre-queue draw, for anyone to check.
///
/// A pre-queue place's draw value is HMAC-SHA256(key = the seed, message =
/// its ticket's sequence number as decimal ASCII); the pre-queue is let in
/// by draw value ascending (bytes compared as unsigned), ties by sequence
/// number. The commitment is fixed before the room's first pre-queue join;
/// the seed is null until the opening.
#[utoipa::path(
    get,
    path = "/queue/{room}/draw",
    tag = "queue",
    params(RoomPath),
    responses(
        (status = 200, description = "The draw's commitment, and its seed once the room has opened",
            body = DrawBody),
        NoRoomOrDraw, StoreDown,
    ),
)]
#[instrument(skip_all, fields(%room))]
async fn room_draw(State(state): State<AppState>, Room(room): Room) -> Result<Response, ApiError> {
    let view = state.queue.draw(&room).await?.ok_or(ApiError::NoDraw)?;
    let body = DrawBody {
        commitment: to_hex(&view.commitment),
        seed: view.seed.map(|s| to_hex(&s)),
        opens_at: rfc3339_ms(view.opens_at_ms).ok_or(ApiError::Internal)?,
    };
    let mut response = Json(body).into_response();
    // The seed appears at the opening: a cached answer would hide it.
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}
