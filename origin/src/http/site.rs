//! Which browser contexts may change state. An auto-submitted form or a
//! script on another site must not join, leave, hold or book on a visitor's
//! behalf with the visitor's cookies: state-changing routes ask for
//! [`SameSite`] in their signature, which refuses (403 `cross_site`) a
//! request a browser marks as cross-site (`Sec-Fetch-Site: cross-site`), or
//! whose `Origin` is neither the site's own nor an allowed one. Requests
//! without `Origin` (apps, curl) are unaffected: they carry no ambient
//! cookies a third party could ride on.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderName, header};

use crate::error::ApiError;
use crate::state::AppState;

/// `Sec-Fetch-Site`, named once: a name given as text is parsed again on
/// every lookup, and every join looks.
const SEC_FETCH_SITE: HeaderName = HeaderName::from_static("sec-fetch-site");

/// Proof that the request does not come from another site's page.
pub struct SameSite;

impl FromRequestParts<AppState> for SameSite {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<SameSite, ApiError> {
        check(&parts.headers, &state.allowed_origins)?;
        Ok(SameSite)
    }
}

/// The rule: `Sec-Fetch-Site` decides when the browser sent it; otherwise
/// an `Origin`, when present, must be the site's own (its authority equals
/// `Host`) or listed in `allowed` (`scheme://host[:port]`).
pub fn check(headers: &HeaderMap, allowed: &[String]) -> Result<(), ApiError> {
    if let Some(site) = headers.get(SEC_FETCH_SITE) {
        // `same-origin`, `same-site` and `none` (typed URL, bookmark) are the
        // site's own; the edge forwards it unchanged, so this holds behind it.
        return if site.as_bytes().eq_ignore_ascii_case(b"cross-site") {
            Err(ApiError::CrossSite)
        } else {
            Ok(())
        };
    }
    let Some(origin) = headers.get(header::ORIGIN) else {
        return Ok(());
    };
    let origin = origin.to_str().map_err(|_| ApiError::CrossSite)?.trim();
    if allowed
        .iter()
        .any(|a| a.trim_end_matches('/').eq_ignore_ascii_case(origin))
    {
        return Ok(());
    }
    // `null` (sandboxed frames, file: pages) has no authority: never ours.
    let authority = origin
        .split_once("://")
        .map(|(_, rest)| rest)
        .ok_or(ApiError::CrossSite)?;
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default();
    if !host.is_empty() && authority.eq_ignore_ascii_case(host) {
        Ok(())
    } else {
        Err(ApiError::CrossSite)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn the_rule_table() {
        let allowed = vec!["https://tickets.example".to_owned()];
        let cases: &[(&[(&str, &str)], bool)] = &[
            (&[], true),                                  // an app
            (&[("sec-fetch-site", "same-origin")], true), // the site's own page
            (&[("sec-fetch-site", "none")], true),        // typed URL
            (&[("sec-fetch-site", "same-site")], true),   // a sibling subdomain
            (&[("sec-fetch-site", "cross-site")], false), // another site's page
            (&[("sec-fetch-site", "Cross-Site")], false),
            (
                &[
                    ("sec-fetch-site", "cross-site"),
                    ("origin", "https://tickets.example"),
                ],
                false, // the browser's word wins
            ),
            (
                &[
                    ("origin", "http://127.0.0.1:8080"),
                    ("host", "127.0.0.1:8080"),
                ],
                true,
            ),
            (
                &[
                    ("origin", "https://evil.example"),
                    ("host", "127.0.0.1:8080"),
                ],
                false,
            ),
            (&[("origin", "null"), ("host", "127.0.0.1:8080")], false),
            (
                &[
                    ("origin", "https://tickets.example"),
                    ("host", "origin.internal"),
                ],
                true,
            ),
            (
                &[("origin", "https://tickets.example.evil"), ("host", "x")],
                false,
            ),
            (&[("origin", "http://127.0.0.1:8080")], false), // no Host to be the site's own
        ];
        for (pairs, ok) in cases {
            let mut h = HeaderMap::new();
            for (name, value) in pairs.iter() {
                h.insert(
                    axum::http::HeaderName::from_static(name),
                    HeaderValue::from_str(value).unwrap(),
                );
            }
            assert_eq!(check(&h, &allowed).is_ok(), *ok, "{pairs:?}");
        }
    }
}
