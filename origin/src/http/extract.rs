//! Extractors and helpers that hold the cross-cutting checks, so handlers
//! only do the queue's work: the room id in the path, the ticket or entry
//! token a request carries, the JSON body, and cookies.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{FromRequestParts, RawPathParams};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum_extra::extract::cookie::{Cookie, CookieJar, SameSite};
use serde::de::DeserializeOwned;
use token::{ENTRY_TOKEN_HEADER, Kind, TokenError, entry_cookie, ticket_cookie};

use crate::error::ApiError;
use crate::room::RoomId;

/// The room named in the path's `{room}` segment (other segments may
/// follow); a malformed id is 404 `unknown_room`.
pub struct Room(pub RoomId);

impl<S: Send + Sync> FromRequestParts<S> for Room {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let params = RawPathParams::from_request_parts(parts, state)
            .await
            .map_err(|_| ApiError::UnknownRoom)?;
        params
            .iter()
            .find(|(name, _)| *name == "room")
            .and_then(|(_, raw)| RoomId::parse(raw))
            .map(Room)
            .ok_or(ApiError::UnknownRoom)
    }
}

/// A token as presented, and whether it came from a cookie (which a refusal
/// then deletes).
pub struct Presented {
    /// The token text.
    pub token: String,
    /// The cookie it came from, if any.
    pub cookie: Option<String>,
}

/// The ticket a request carries: `Authorization: Bearer` (apps) first, else
/// the room's cookie (browsers). An `Authorization` header of another scheme
/// is refused rather than ignored, so a broken client hears about it.
pub fn presented_ticket(headers: &HeaderMap, room: &RoomId) -> Result<Option<Presented>, ApiError> {
    if let Some(value) = headers.get(header::AUTHORIZATION) {
        let token = value
            .to_str()
            .ok()
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .ok_or(ApiError::InvalidTicket {
                reason: TokenError::Malformed,
                clear_cookie: None,
            })?;
        return Ok(Some(Presented {
            token: token.to_owned(),
            cookie: None,
        }));
    }
    let name = ticket_cookie(room.as_str());
    Ok(CookieJar::from_headers(headers)
        .get(&name)
        .map(|c| Presented {
            token: c.value().to_owned(),
            cookie: Some(name),
        }))
}

/// The entry token a protected request carries: the `Entry-Token` header
/// first, else the room's cookie.
pub fn presented_entry(headers: &HeaderMap, room: &RoomId) -> Option<String> {
    if let Some(value) = headers.get(ENTRY_TOKEN_HEADER) {
        return Some(value.to_str().unwrap_or_default().trim().to_owned());
    }
    CookieJar::from_headers(headers)
        .get(&entry_cookie(room.as_str()))
        .map(|c| c.value().to_owned())
}

/// Verifies a presented token of `kind` for `room` at `now` (unix seconds).
pub fn verify(
    keys: &token::Keyring,
    token: &str,
    kind: Kind,
    room: &RoomId,
    now: u64,
) -> Result<token::Claims, TokenError> {
    keys.verify(token, kind, room.as_str(), now)
}

/// Parses an optional JSON object body: empty means `T::default()`. Bytes
/// that are not JSON are 400; JSON of the wrong shape is 422; too long is 413.
pub fn optional_json<T: DeserializeOwned + Default>(
    body: Result<Bytes, BytesRejection>,
) -> Result<T, ApiError> {
    let bytes = body_bytes(body)?;
    // Only a truly empty body is "no body": whitespace alone is not JSON,
    // and a client that sends it as `application/json` has a bug to hear about.
    if bytes.is_empty() {
        return Ok(T::default());
    }
    parse_object(&bytes)
}

/// Parses a JSON object body that must be there: empty or not JSON is 400,
/// JSON of the wrong shape 422, too long 413.
pub fn required_json<T: DeserializeOwned>(
    body: Result<Bytes, BytesRejection>,
) -> Result<T, ApiError> {
    let bytes = body_bytes(body)?;
    if bytes.is_empty() {
        return Err(ApiError::MalformedBody("a JSON body is required".into()));
    }
    parse_object(&bytes)
}

fn body_bytes(body: Result<Bytes, BytesRejection>) -> Result<Bytes, ApiError> {
    body.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::BodyTooLarge
        } else {
            ApiError::MalformedBody(rejection.body_text())
        }
    })
}

fn parse_object<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    // Syntax first, shape second: `{"a":` is malformed (400) even though a
    // typed parse would stop at the unknown field (422).
    let value: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| ApiError::MalformedBody(e.to_string()))?;
    // serde would also read a struct from an array; bodies are objects.
    if !value.is_object() {
        return Err(ApiError::InvalidBody("expected a JSON object".into()));
    }
    serde_json::from_value(value).map_err(|e| ApiError::InvalidBody(e.to_string()))
}

/// A `Set-Cookie` value: HttpOnly, SameSite=Lax, Path=/, and Secure when
/// `secure` (the state's `secure_cookies`, from configuration).
pub fn set_cookie(name: String, value: String, max_age_secs: u64, secure: bool) -> HeaderValue {
    let cookie = Cookie::build((name, value))
        .http_only(true)
        .same_site(SameSite::Lax)
        .path("/")
        .secure(secure)
        .max_age(time::Duration::seconds(
            i64::try_from(max_age_secs).unwrap_or(i64::MAX),
        ))
        .build();
    // Names are validated room ids and values base64url tokens.
    HeaderValue::from_str(&cookie.to_string()).unwrap_or(HeaderValue::from_static(""))
}

/// A `Set-Cookie` value that deletes the cookie.
pub fn clear_cookie(name: String) -> HeaderValue {
    set_cookie(name, String::new(), 0, false)
}
