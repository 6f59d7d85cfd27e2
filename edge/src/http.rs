//! Reading the request headers the gate cares about: `Accept` (page or
//! JSON), `Accept-Language` (English or Korean) and `Cookie` (entry tokens).
//!
//! Lenient, bounded parsers: a header that makes no sense is read as
//! absent, never as an error, and never panics. The q-value list reader and
//! the language choice are the pages crate's, so the edge and the origin
//! pick a visitor's language the same way.

/// The waiting page's language (the pages crate owns which ones exist).
pub use pages::Lang;
use pages::weighted;

/// What kind of answer a held request gets.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Want {
    /// The waiting page (a browser navigation).
    Page,
    /// The JSON 429 (an API call or an app).
    Json,
}

/// Page or JSON, from `Accept` and `Sec-Fetch-Mode`.
///
/// The best `q` given to an HTML type (`text/html`, `application/xhtml+xml`)
/// is compared with the best given to a JSON type (`application/json`,
/// `application/*+json`); the higher wins, and a tie goes to the page when
/// HTML was named at all. Wildcards name neither. With neither named, a
/// browser navigation (`Sec-Fetch-Mode: navigate`) gets the page and
/// everything else (curl's `*/*`, scripts, apps) gets JSON: a machine that
/// did not ask for HTML is better served by the queue's URLs.
#[must_use]
pub fn want(accept: Option<&str>, sec_fetch_mode: Option<&str>) -> Want {
    let mut html: Option<u16> = None;
    let mut json: Option<u16> = None;
    for (media, q) in weighted(accept.unwrap_or("")) {
        let media = media.to_ascii_lowercase();
        let slot = if media == "text/html" || media == "application/xhtml+xml" {
            &mut html
        } else if media == "application/json"
            || (media.starts_with("application/") && media.ends_with("+json"))
        {
            &mut json
        } else {
            continue;
        };
        *slot = Some(slot.map_or(q, |old| old.max(q)));
    }
    let navigate = sec_fetch_mode.is_some_and(|m| m.trim().eq_ignore_ascii_case("navigate"));
    match (html.filter(|q| *q > 0), json.filter(|q| *q > 0)) {
        (Some(h), Some(j)) if j > h => Want::Json,
        (Some(_), _) => Want::Page,
        (None, Some(_)) => Want::Json,
        (None, None) if navigate => Want::Page,
        (None, None) => Want::Json,
    }
}

/// Most cookies of one name tried; browsers send one per path and domain,
/// and more than a handful is abuse.
pub const MAX_SAME_NAME_COOKIES: usize = 4;

/// The values of every cookie called `name` in a `Cookie` header, at most
/// [`MAX_SAME_NAME_COOKIES`], with surrounding double quotes removed.
pub fn cookie_values<'a>(cookie: &'a str, name: &str) -> impl Iterator<Item = &'a str> {
    cookie
        .split(';')
        .filter_map(move |pair| {
            let (key, value) = pair.split_once('=')?;
            (key.trim() == name).then(|| {
                let value = value.trim();
                value
                    .strip_prefix('"')
                    .and_then(|v| v.strip_suffix('"'))
                    .unwrap_or(value)
            })
        })
        .take(MAX_SAME_NAME_COOKIES)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHROME_NAV: &str =
        "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,*/*;q=0.8";

    #[test]
    fn page_or_json() {
        let cases: &[(Option<&str>, Option<&str>, Want)] = &[
            (Some(CHROME_NAV), Some("navigate"), Want::Page),
            (Some(CHROME_NAV), None, Want::Page),
            (Some("application/json"), None, Want::Json),
            (Some("application/json"), Some("navigate"), Want::Json),
            (Some("application/problem+json"), None, Want::Json),
            (Some("APPLICATION/JSON; charset=utf-8"), None, Want::Json),
            (Some("text/html;q=0.5, application/json"), None, Want::Json),
            (Some("application/json;q=0.5, text/html"), None, Want::Page),
            (Some("application/json, text/html"), None, Want::Page),
            (Some("text/html;q=0, application/json"), None, Want::Json),
            (Some("*/*"), None, Want::Json),
            (Some("*/*"), Some("navigate"), Want::Page),
            (None, None, Want::Json),
            (None, Some("navigate"), Want::Page),
            (Some(""), Some("cors"), Want::Json),
            (Some(",,;;q=,"), None, Want::Json),
            (Some("text/html;q=abc"), None, Want::Page),
        ];
        for (accept, mode, expected) in cases {
            assert_eq!(want(*accept, *mode), *expected, "{accept:?} {mode:?}");
        }
    }

    #[test]
    fn cookies() {
        let header =
            "a=1; wr_entry_concert=tok1;wr_entry_concert=\"tok2\"; wr_entry_concertx=no; =; junk";
        let found: Vec<_> = cookie_values(header, "wr_entry_concert").collect();
        assert_eq!(found, ["tok1", "tok2"]);
        let many = "x=1; ".to_string() + &"x=2; ".repeat(100);
        assert_eq!(cookie_values(&many, "x").count(), MAX_SAME_NAME_COOKIES);
        assert_eq!(cookie_values("", "x").count(), 0);
    }
}
