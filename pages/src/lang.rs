//! The pages' languages, English and Korean, and how a request picks one:
//! a `?lang=` the visitor chose, else `Accept-Language`, else English.
//!
//! Also the reader of weighted header lists (`value;q=x, ...`), which
//! `Accept-Language` needs here and the edge's `Accept` reading shares, so
//! there is one q-value parser. Lenient and bounded: what makes no sense is
//! read as absent, never as an error, and never panics.

/// A page's language.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Lang {
    /// English (the default).
    En,
    /// Korean.
    Ko,
}

impl Lang {
    /// Every language, in the order pages list them.
    pub const ALL: [Lang; 2] = [Lang::En, Lang::Ko];

    /// The BCP 47 tag, for `<html lang>` and `Intl` formats.
    #[must_use]
    pub fn tag(self) -> &'static str {
        match self {
            Lang::En => "en",
            Lang::Ko => "ko",
        }
    }

    /// The language a tag names by its primary subtag (`ko`, `ko-KR`,
    /// `EN`); `None` for any other.
    #[must_use]
    pub fn from_tag(tag: &str) -> Option<Lang> {
        let primary = tag.trim().split('-').next().unwrap_or("");
        if primary.eq_ignore_ascii_case("ko") {
            Some(Lang::Ko)
        } else if primary.eq_ignore_ascii_case("en") {
            Some(Lang::En)
        } else {
            None
        }
    }

    /// English or Korean, whichever `Accept-Language` ranks higher (ties go
    /// to the one listed first); English when neither is listed.
    #[must_use]
    pub fn from_accept_language(accept_language: Option<&str>) -> Lang {
        let mut best: Option<(Lang, u16)> = None;
        for (tag, q) in weighted(accept_language.unwrap_or("")) {
            let Some(found) = Lang::from_tag(tag) else {
                continue;
            };
            if q > 0 && best.is_none_or(|(_, best_q)| q > best_q) {
                best = Some((found, q));
            }
        }
        best.map_or(Lang::En, |(l, _)| l)
    }

    /// `en` or `ko`, whichever is this language's: a page's words.
    pub(crate) fn pick<T: ?Sized>(self, en: &'static T, ko: &'static T) -> &'static T {
        match self {
            Lang::En => en,
            Lang::Ko => ko,
        }
    }

    /// The visitor's explicit choice (`?lang=`) when it names a language,
    /// else [`Lang::from_accept_language`].
    #[must_use]
    pub fn choose(chosen: Option<&str>, accept_language: Option<&str>) -> Lang {
        chosen
            .and_then(Lang::from_tag)
            .unwrap_or_else(|| Lang::from_accept_language(accept_language))
    }
}

/// Most list entries looked at in one header; a longer list is cut there.
const MAX_ITEMS: usize = 32;

/// A comma-separated list of `value;q=x` items, as `(value, q)` with `q` in
/// thousandths, so no floating point is needed. A missing or malformed `q`
/// is 1000; `q` above 1 is clamped. At most 32 items are read.
pub fn weighted(header: &str) -> impl Iterator<Item = (&str, u16)> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn language_from_the_header() {
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
            assert_eq!(Lang::from_accept_language(*header), *expected, "{header:?}");
        }
    }

    #[test]
    fn an_explicit_choice_wins_when_it_names_a_language() {
        assert_eq!(Lang::choose(Some("ko"), Some("en")), Lang::Ko);
        assert_eq!(Lang::choose(Some("en"), Some("ko")), Lang::En);
        assert_eq!(Lang::choose(Some("fr"), Some("ko")), Lang::Ko);
        assert_eq!(Lang::choose(Some(""), None), Lang::En);
        assert_eq!(Lang::choose(None, Some("ko-KR")), Lang::Ko);
        for lang in Lang::ALL {
            assert_eq!(Lang::from_tag(lang.tag()), Some(lang));
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
    fn lists_are_bounded() {
        let long = "a, ".repeat(100);
        assert_eq!(weighted(&long).count(), MAX_ITEMS);
        assert_eq!(weighted(",,;;q=,").count(), 0);
    }
}
