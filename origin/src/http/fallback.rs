//! What a path no route serves gets. A person types `/admin`,
//! `/book/concert` or `/waiting-room/concert/`: a missing or extra slash on
//! a page's path is a 308 to the page (the query kept); anything else is
//! 404 `not_found`, as the contract's JSON, or for a browser asking for
//! HTML the 404 page.

use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};

use super::pages::{lang, refuse};
use crate::error::ApiError;
use room::RoomId;

/// The router's fallback.
pub async fn fallback(method: Method, uri: Uri, headers: HeaderMap) -> Response {
    let page = matches!(method, Method::GET | Method::HEAD);
    if let Some(to) = page.then(|| canonical(uri.path())).flatten() {
        let to = match uri.query() {
            Some(query) => format!("{to}?{query}"),
            None => to,
        };
        if let Ok(location) = HeaderValue::try_from(to) {
            return (
                StatusCode::PERMANENT_REDIRECT,
                [(header::LOCATION, location)],
            )
                .into_response();
        }
    }
    refuse(ApiError::NotFound, &headers, lang(uri.query(), &headers))
}

/// The page `path` means, when it is one of the pages' paths with a slash
/// missing or one too many. Room ids are checked, so the redirect stays on
/// this site's own pages.
fn canonical(path: &str) -> Option<String> {
    if path == "/admin" {
        return Some("/admin/".to_owned());
    }
    if let Some(id) = path.strip_prefix("/book/") {
        return RoomId::parse(id).map(|room| format!("/book/{room}/"));
    }
    let id = path.strip_prefix("/waiting-room/")?.strip_suffix('/')?;
    RoomId::parse(id).map(|room| format!("/waiting-room/{room}"))
}

#[cfg(test)]
mod tests {
    use super::canonical;

    #[test]
    fn a_missing_or_extra_slash_finds_the_page() {
        assert_eq!(canonical("/admin").as_deref(), Some("/admin/"));
        assert_eq!(
            canonical("/book/concert").as_deref(),
            Some("/book/concert/")
        );
        assert_eq!(
            canonical("/waiting-room/concert/").as_deref(),
            Some("/waiting-room/concert")
        );
    }

    #[test]
    fn anything_else_is_not_a_page() {
        for path in [
            "/",
            "/admin/x",
            "/book/",
            "/book/Concert",
            "/book/concert/x",
            "/book//evil.example",
            "/waiting-room/concert//",
            "/waiting-room//evil.example/",
            "/waiting-room/",
            "/nothing",
        ] {
            assert_eq!(canonical(path), None, "{path}");
        }
    }
}
