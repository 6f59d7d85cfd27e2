//! Reading the request headers the gate cares about: `Accept` (page or
//! JSON), `Accept-Language` (English or Korean) and `Cookie` (entry tokens).
//!
//! Lenient, bounded parsers: a header that makes no sense is read as absent,
//! never as an error, and never panics.

/// What kind of answer a held request gets.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Want {
    /// The waiting page (a browser navigation).
    Page,
    /// The JSON 429 (an API call or an app).
    Json,
}

/// The waiting page's language.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Lang {
    /// English (the default).
    En,
    /// Korean.
    Ko,
}

impl Lang {
    /// The BCP 47 tag, for `<html lang>`.
    #[must_use]
    pub fn tag(self) -> &'static str {
        match self {
            Lang::En => "en",
            Lang::Ko => "ko",
        }
    }
}

/// Most list entries looked at in one header; a longer list is cut there.
const MAX_ITEMS: usize = 32;

/// A comma-separated list of `value;q=x` items, as `(value, q)` with `q` in
/// thousandths, so no floating point is needed. A missing or malformed `q`
/// is 1000; `q` above 1 is clamped.
fn weighted(header: &str) -> impl Iterator<Item = (&str, u16)> {
    header.split(',').take(MAX_ITEMS).filter_map(|item| {
        let mut parts = item.split(';');
        let value = parts.next()?.trim();
        if value.is_empty() {
            return None;
        }
        let q = parts
            .filter_map(|p| p.trim().strip_prefix("q="))
            .map(parse_q)
            .next()
            .unwrap_or(1000);
        Some((value, q))
    })
}

/// Parses an HTTP quality value (`0`, `0.5`, `1.000`) into thousandths.
fn parse_q(raw: &str) -> u16 {
    let raw = raw.trim();
    let (whole, frac) = raw.split_once('.').unwrap_or((raw, ""));
    let whole: u16 = match whole {
        "0" => 0,
        "1" => 1000,
        _ => return 1000,
    };
    let mut frac_value: u16 = 0;
    let mut scale: u16 = 100;
    for c in frac.bytes().take(3) {
        if !c.is_ascii_digit() {
            return 1000;
        }
        frac_value += u16::from(c - b'0') * scale;
        scale /= 10;
    }
    (whole + frac_value).min(1000)
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

/// English or Korean, whichever `Accept-Language` ranks higher (ties go to
/// the one listed first); English when neither is listed.
#[must_use]
pub fn lang(accept_language: Option<&str>) -> Lang {
    let mut best: Option<(Lang, u16)> = None;
    for (tag, q) in weighted(accept_language.unwrap_or("")) {
        let primary = tag.split('-').next().unwrap_or("").to_ascii_lowercase();
        let found = match primary.as_str() {
            "ko" => Lang::Ko,
            "en" => Lang::En,
            _ => continue,
        };
        if q > 0 && best.is_none_or(|(_, best_q)| q > best_q) {
            best = Some((found, q));
        }
    }
    best.map_or(Lang::En, |(l, _)| l)
}

/// Most cookies of one name tried; browsers send one per path and domain,
/// and more than a handful is abuse.
pub const MAX_SAME_NAME_COOKIES: usize = 4;

/// The values of every cookie called `name` in a `Cookie` header, at most
/// [`MAX_SAME_NAME_COOKIES`], with surrounding double quotes removed.
pub fn cookie_values<'a>(cookie: &'a str, name: &'a str) -> impl Iterator<Item = &'a str> {
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
    fn language() {
        let cases: &[(Option<&str>, Lang)] = &[
            (None, Lang::En),
            (Some(""), Lang::En),
            (Some("ko-KR,ko;q=0.9,en-US;q=0.8,en;q=0.7"), Lang::Ko),
            (Some("en-US,en;q=0.9,ko;q=0.8"), Lang::En),
            (Some("fr-FR, ko;q=0.5"), Lang::Ko),
            (Some("fr-FR, de"), Lang::En),
            (Some("en;q=0.2, ko;q=0.3"), Lang::Ko),
            (Some("ko;q=0, en;q=0.1"), Lang::En),
            (Some("KO"), Lang::Ko),
            (Some("*"), Lang::En),
        ];
        for (header, expected) in cases {
            assert_eq!(lang(*header), *expected, "{header:?}");
        }
    }

    #[test]
    fn q_values() {
        assert_eq!(parse_q("0"), 0);
        assert_eq!(parse_q("1"), 1000);
        assert_eq!(parse_q("0.5"), 500);
        assert_eq!(parse_q("0.123"), 123);
        assert_eq!(parse_q("0.1239"), 123);
        assert_eq!(parse_q("1.000"), 1000);
        assert_eq!(parse_q("1.5"), 1000);
        assert_eq!(parse_q("7"), 1000);
        assert_eq!(parse_q("0.x"), 1000);
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
