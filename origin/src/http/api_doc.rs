//! The OpenAPI 3 document of the whole API, served at `/openapi.json`.
//!
//! Routes are registered through `utoipa_axum`, so each route and its
//! description come from the same `#[utoipa::path]` attribute next to the
//! handler; this module holds what the routes share: the document's header,
//! the security schemes, the error body, the room path parameter, and the
//! route that serves the document.

use std::sync::OnceLock;

use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{IntoParams, Modify, OpenApi, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::state::AppState;

/// The document's header and shared components; the paths come from the
/// routers (see [`super::openapi`], which assembles the whole document).
#[derive(OpenApi)]
#[openapi(
    info(
        title = "Waiting room origin",
        description = "The queue API browsers and apps poll, the admin API operators \
            tune rooms with, and the operations endpoints. Errors are always \
            `{\"error\": {\"code\", \"message\"}}`.",
        license(name = "Apache-2.0", identifier = "Apache-2.0"),
    ),
    tags(
        (name = "queue", description = "Join a room's line, poll where you stand, leave."),
        (name = "admin", description = "Create, tune, pause, resume and close rooms; live figures. \
            Needs `Authorization: Bearer <admin key>`."),
        (name = "booking", description = "What an admitted visitor does: list performances and \
            seats, hold seats, pay and book, read or cancel the booking. Needs the room's entry \
            token (cookie `wr_entry_{room}` or header `Entry-Token`)."),
        (name = "operations", description = "Health, readiness, metrics and this document."),
    ),
    components(schemas(ErrorBody, ErrorDetail)),
    modifiers(&SecuritySchemes),
)]
pub struct ApiDoc;

struct SecuritySchemes;

impl Modify for SecuritySchemes {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "admin_key",
            bearer("The origin's `--admin-key` / `WR_ADMIN_KEY`."),
        );
        components.add_security_scheme(
            "entry_token",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
                "Entry-Token",
                "The entry token a status gave once admitted. Browsers send it in the \
                 cookie `wr_entry_{room}` instead.",
            ))),
        );
        components.add_security_scheme(
            "ticket",
            bearer(
                "The ticket a join gave (apps). Browsers send it in the cookie \
                 `wr_ticket_{room}` instead, which works on every queue route too.",
            ),
        );
    }
}

fn bearer(description: &str) -> SecurityScheme {
    SecurityScheme::Http(
        HttpBuilder::new()
            .scheme(HttpAuthScheme::Bearer)
            .description(Some(description))
            .build(),
    )
}

/// Every error: a machine-readable code and a human message.
#[derive(Serialize, ToSchema)]
pub struct ErrorBody {
    /// What went wrong.
    pub error: ErrorDetail,
}

/// A join refused until it solves the room's challenge (428
/// `challenge_required`): the error, and what to solve.
#[derive(Serialize, ToSchema)]
pub struct ChallengeRequiredBody {
    /// `challenge_required`.
    pub error: ErrorDetail,
    /// What to solve before joining again.
    pub challenge: crate::challenge::Ask,
}

/// The error's code and message.
#[derive(Serialize, ToSchema)]
pub struct ErrorDetail {
    /// snake_case, stable: e.g. `unknown_room`, `invalid_ticket`,
    /// `invalid_admin_key`, `malformed_json`, `invalid_body`,
    /// `body_too_large`, `rate_limited`, `too_many_places`, `store_unavailable`.
    #[schema(pattern = "^[a-z][a-z_]*$")]
    pub code: String,
    /// For humans; may change.
    pub message: String,
}

/// The room in the path. Anything that is not a room id, or names no room,
/// is 404 `unknown_room`.
#[derive(IntoParams)]
#[into_params(parameter_in = Path)]
#[allow(dead_code)] // read by the documentation only; handlers use `extract::Room`
pub struct RoomPath {
    /// The room's id.
    #[param(pattern = "^[a-z0-9][a-z0-9-]{0,63}$", example = "concert")]
    room: String,
}

/// `{room}` and `{performance}` in the path (the booking API's and the seat map's routes).
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(super) struct PerformancePath {
    /// The room's id.
    #[param(pattern = "^[a-z0-9][a-z0-9-]{0,63}$", example = "concert")]
    #[allow(dead_code)] // read by the `Entry` extractors
    room: String,
    /// The performance's id.
    #[param(pattern = "^[a-z0-9][a-z0-9-]{0,63}$", example = "evening")]
    pub(super) performance: String,
}

/// A status poll's `Prefer` header (RFC 7240): `wait=N` lets the origin
/// hold the poll of a waiter it cannot let in soon until the sale changes,
/// for at most min(N, the poll interval, 20) seconds. Anything else in it
/// is ignored.
#[derive(IntoParams)]
#[into_params(parameter_in = Header)]
#[allow(dead_code)] // read by the documentation only; the handler reads the header itself
pub struct PreferWait {
    /// `wait=N`, N in seconds.
    #[param(rename = "Prefer", example = "wait=20", required = false)]
    prefer: Option<String>,
}

/// The join challenge's answer, in a room that asks one.
#[derive(IntoParams)]
#[into_params(parameter_in = Header)]
#[allow(dead_code)] // read by the documentation only; the handler reads the header itself
pub struct ChallengeHeader {
    /// Proof of work: `<seed>.<nonce>` (nonce 1 to 32 of `[A-Za-z0-9_-]`),
    /// where SHA-256 of that text starts with the asked zero bits; Turnstile:
    /// the widget's token (at most 2048 characters). Ignored in a room
    /// without a challenge.
    #[param(rename = "Waiting-Room-Challenge", required = false)]
    waiting_room_challenge: Option<String>,
}

/// The route that serves the document.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(openapi_json))
}

/// This OpenAPI document.
#[utoipa::path(
    get,
    path = "/openapi.json",
    tag = "operations",
    responses(
        (status = 200, description = "The OpenAPI 3 document of this API", body = Object),
    ),
)]
async fn openapi_json() -> Response {
    static DOC: OnceLock<String> = OnceLock::new();
    let doc = DOC.get_or_init(|| {
        super::openapi()
            .to_json()
            .unwrap_or_else(|e| serde_json::json!({"error": e.to_string()}).to_string())
    });
    let mut response = doc.as_str().into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}
