//! Extractors and helpers that hold the cross-cutting checks, so handlers
//! only do the queue's work: the room id in the path, the ticket or entry
//! token a request carries, the JSON body, and cookies.

use std::convert::Infallible;

use axum::body::{Body, Bytes};
use axum::extract::rejection::BytesRejection;
use axum::extract::{FromRequest, FromRequestParts, RawPathParams, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use axum_extra::extract::cookie::CookieJar;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use serde::de::DeserializeOwned;
use token::{ENTRY_TOKEN_HEADER, Kind, TokenError, entry_cookie, ticket_cookie};

use crate::challenge::MAX_ANSWER_LEN;
use crate::error::ApiError;
use crate::identity::{IDENTITY_COOKIE, IDENTITY_HEADER};
use room::RoomId;

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

/// The path's room and the ticket the request presents for it (not yet
/// verified; see [`presented_ticket`]), read from the request's headers in
/// place rather than from a copy of them. A malformed room id is 404
/// `unknown_room`; a malformed ticket is carried, not refused, so the
/// handler decides when it counts.
pub struct RoomTicket {
    /// The room in the path.
    pub room: RoomId,
    /// The ticket presented for it, if any.
    pub presented: Result<Option<Presented>, ApiError>,
}

impl<S: Send + Sync> FromRequestParts<S> for RoomTicket {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let Room(room) = Room::from_request_parts(parts, state).await?;
        let presented = presented_ticket(&parts.headers, &room);
        Ok(RoomTicket { room, presented })
    }
}

/// A request body of at most `LIMIT` bytes (413 `body_too_large` past it),
/// read by the handler's extractor itself: the routes that take one need no
/// body-limit layer, whose per-request cost every request of the router
/// would pay. Never refuses: the handler decides when a bad body counts.
pub struct SmallBody<const LIMIT: usize>(pub Result<Bytes, ApiError>);

impl<S: Send + Sync, const LIMIT: usize> FromRequest<S> for SmallBody<LIMIT> {
    type Rejection = Infallible;

    async fn from_request(request: Request, _: &S) -> Result<Self, Self::Rejection> {
        let body = request.into_body();
        // Most joins and leaves send nothing: skip the collecting.
        if http_body::Body::is_end_stream(&body) {
            return Ok(SmallBody(Ok(Bytes::new())));
        }
        Ok(SmallBody(read_body(body, LIMIT).await))
    }
}

/// Reads `body` whole, refusing it past `limit` bytes, with the errors
/// axum's own `Bytes` extractor gives under a `DefaultBodyLimit`.
async fn read_body(body: Body, limit: usize) -> Result<Bytes, ApiError> {
    match Limited::new(body, limit).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) if e.is::<LengthLimitError>() => Err(ApiError::BodyTooLarge),
        Err(e) => Err(ApiError::MalformedBody(format!(
            "Failed to buffer the request body: {e}"
        ))),
    }
}

/// The identity token a join carries: the `Waiting-Room-Identity` header
/// (apps) first, else the `wr_identity` cookie the operator's site set
/// (browsers). Not checked here: only a room that reads identities does.
pub struct IdentityToken(pub Option<String>);

impl<S: Send + Sync> FromRequestParts<S> for IdentityToken {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        let headers = &parts.headers;
        if let Some(value) = headers.get(IDENTITY_HEADER) {
            // Bytes no JWT holds fail the check, and only where it is made.
            return Ok(IdentityToken(Some(header_text(value.as_bytes()))));
        }
        if !headers.contains_key(header::COOKIE) {
            return Ok(IdentityToken(None));
        }
        Ok(IdentityToken(
            CookieJar::from_headers(headers)
                .get(IDENTITY_COOKIE)
                .map(|c| c.value().to_owned()),
        ))
    }
}

/// The join challenge's answer a join carries (`Waiting-Room-Challenge`),
/// trimmed; not checked here: only a room that asks a challenge does. An
/// answer longer than any valid one fails that check unread.
pub struct ChallengeAnswer(pub Option<String>);

impl<S: Send + Sync> FromRequestParts<S> for ChallengeAnswer {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(ChallengeAnswer(
            parts.headers.get(token::CHALLENGE_HEADER).map(|value| {
                let bytes = value.as_bytes();
                let kept = bytes.get(..MAX_ANSWER_LEN + 1).unwrap_or(bytes);
                header_text(kept)
            }),
        ))
    }
}

/// A header's bytes as trimmed text, invalid UTF-8 read lossily (a check
/// then refuses it). Valid text is checked at word speed first: reading
/// every value lossily cost a join 1,400 instructions (callgrind,
/// `request_cost`).
fn header_text(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(text) => text.trim().to_owned(),
        Err(_) => String::from_utf8_lossy(bytes).trim().to_owned(),
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

/// The ticket a request carries: `Authorization: Bearer` (apps; the scheme
/// in any case, RFC 9110) first, else the room's cookie (browsers). An
/// `Authorization` header of another scheme is not about tickets and is
/// passed over: a browser on a site behind HTTP Basic auth sends one with
/// every request, its first join included. (A broken app that sends its
/// ticket so hears of it from status, 401 `missing_ticket`; its joins take
/// places as any ticketless join, under the per-address cap.)
pub fn presented_ticket(headers: &HeaderMap, room: &RoomId) -> Result<Option<Presented>, ApiError> {
    let malformed = || ApiError::InvalidTicket {
        reason: TokenError::Malformed,
        clear_cookie: None,
    };
    if let Some(value) = headers.get(header::AUTHORIZATION) {
        let value = value.to_str().map_err(|_| malformed())?.trim();
        let (scheme, rest) = value.split_once(' ').unwrap_or((value, ""));
        if scheme.eq_ignore_ascii_case("bearer") {
            let token = rest.trim();
            if token.is_empty() {
                return Err(malformed());
            }
            return Ok(Some(Presented {
                token: token.to_owned(),
                cookie: None,
            }));
        }
    }
    // Apps send no cookies: no jar to build, no name to write.
    if !headers.contains_key(header::COOKIE) {
        return Ok(None);
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
    optional_object(body_bytes(body)?)
}

/// [`optional_json`] for a body already read (see [`SmallBody`]).
pub fn optional_object<T: DeserializeOwned + Default>(bytes: Bytes) -> Result<T, ApiError> {
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
