//! Which browser contexts may change state. An auto-submitted form or a
//! script on another site must not join, leave, hold or book on a visitor's
//! behalf with the visitor's cookies: state-changing routes ask for
//! [`SameSite`] in their signature, which refuses (403 `cross_site`) a
//! request a browser marks as cross-site (`Sec-Fetch-Site: cross-site`), or
//! whose `Origin` is neither the site's own nor an allowed one (a sibling
//! subdomain's page included, unless allowed). Requests
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

/// The rule: a browser's `Sec-Fetch-Site: cross-site` is refused and its
/// `same-origin` or `none` (typed URL, bookmark) accepted, whatever `Host`
/// says (the edge or a proxy may have changed it; the browser vouches that
/// the page is the site's own). Otherwise (`same-site`, or no such header)
/// an `Origin`, when present, must be the site's own (its authority equals
/// `Host`) or listed in `allowed` (`scheme://host[:port]`): a sibling
/// subdomain is another site's page unless the operator lists it (its
/// SameSite=Lax cookies would ride along).
pub fn check(headers: &HeaderMap, allowed: &[String]) -> Result<(), ApiError> {
    if let Some(site) = headers.get(SEC_FETCH_SITE) {
        let site = site.as_bytes();
        if site.eq_ignore_ascii_case(b"cross-site") {
            return Err(ApiError::CrossSite);
        }
        if site.eq_ignore_ascii_case(b"same-origin") || site.eq_ignore_ascii_case(b"none") {
            return Ok(());
        }
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
            (&[("sec-fetch-site", "same-site")], true),   // no Origin: as an app
            (
                &[
                    ("sec-fetch-site", "same-site"),
                    ("origin", "https://ugc.tickets.example"),
                    ("host", "tickets.example"),
                ],
                false, // a sibling subdomain's page, not listed
            ),
            (
                &[
                    ("sec-fetch-site", "same-site"),
                    ("origin", "https://tickets.example"),
                    ("host", "api.tickets.example"),
                ],
                true, // a sibling the operator allowed
            ),
            (
                &[
                    ("sec-fetch-site", "same-origin"),
                    ("origin", "https://tickets.example"),
                    ("host", "origin.internal"),
                ],
                true, // the site's own page, behind a proxy that renamed Host
            ),
            (
                &[
                    ("sec-fetch-site", "bogus"),
                    ("origin", "https://evil.example"),
                    ("host", "x"),
                ],
                false, // an unknown value proves nothing: the Origin decides
            ),
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
