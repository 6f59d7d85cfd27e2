//! URL paths as the gate sees them: the normalized form that prefixes are
//! matched against, the same-site check for where an admitted visitor is
//! sent, and percent-encoding for the URLs the edge hands out.
//!
//! Pure string work on attacker-controlled input: no I/O, no panics, every
//! loop bounded by the input's length.

/// Longest path or target, in bytes, the gate works on. A longer path is
/// refused whole (414, [`TooLong`]): cutting it short could turn it into
/// another path (`/x/aaaa…/..%2f..%2fbook/` cut inside the `a`s loses the
/// `..` that lead to `/book/`). Nor is a longer target offered as a
/// redirect.
pub const MAX_PATH_LEN: usize = 2048;

/// How many rounds of percent-decoding [`normalize`] and [`safe_target`]
/// apply. One more than any sane client sends, so a double-encoded
/// `%252e%252e` is seen through too.
const DECODE_ROUNDS: usize = 3;

/// One round of percent-decoding; malformed escapes are kept as they are.
fn percent_decode_once(input: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(input.len());
    let mut i = 0;
    while let Some(&b) = input.get(i) {
        if b == b'%' {
            let hi = input.get(i + 1).and_then(|c| hex_value(*c));
            let lo = input.get(i + 2).and_then(|c| hex_value(*c));
            if let (Some(hi), Some(lo)) = (hi, lo) {
                out.push(hi << 4 | lo);
                i += 3;
                continue;
            }
        }
        out.push(b);
        i += 1;
    }
    out
}

fn hex_value(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// Percent-decodes until nothing changes, at most [`DECODE_ROUNDS`] times.
fn decode_fully(input: &[u8]) -> Vec<u8> {
    let mut current = input.to_vec();
    for _ in 0..DECODE_ROUNDS {
        if !current.contains(&b'%') {
            break;
        }
        let next = percent_decode_once(&current);
        if next == current {
            break;
        }
        current = next;
    }
    current
}

/// A path longer than [`MAX_PATH_LEN`]: the gate matches no part of it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TooLong;

/// One way an origin may read a path. Origins disagree: some decode `%2F`
/// into a separator, some read `\` as `/`, some (Tomcat and other servlet
/// containers) drop `;params` from every segment, so `/static/..;/book/`
/// is `/book/` to them and `/static/..;/book/` to others.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Reading {
    /// As resolved as any origin: percent-decoded (repeatedly), `\` read
    /// as `/`, `;params` dropped from each segment (so `..;x` is `..`),
    /// then empty, `.` and `..` segments resolved. The form prefixes in
    /// the settings are kept in.
    Resolved,
    /// Decoded and `\` read as `/`, `;params` kept: an origin that
    /// decodes but knows no path parameters.
    Decoded,
    /// As received: only `/` separates, nothing is decoded or dropped. What
    /// a strict origin (axum, most frameworks) routes on.
    Literal,
}

impl Reading {
    /// Every reading, the most resolved first.
    pub const ALL: [Reading; 3] = [Reading::Resolved, Reading::Decoded, Reading::Literal];
}

/// A path as each [`Reading`] sees it, all in matching form (see
/// [`read`]); the gate lets a request by a rule only when every reading
/// agrees, and holds it when any reading is protected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Readings([String; 3]);

impl Readings {
    /// Reads `path` every way.
    ///
    /// # Errors
    ///
    /// [`TooLong`] when the path is longer than [`MAX_PATH_LEN`].
    pub fn of(path: &str) -> Result<Readings, TooLong> {
        if path.len() > MAX_PATH_LEN {
            return Err(TooLong);
        }
        Ok(Readings(Reading::ALL.map(|reading| read(path, reading))))
    }

    /// The [`Reading::Resolved`] form.
    #[must_use]
    pub fn resolved(&self) -> &str {
        let [resolved, ..] = &self.0;
        resolved
    }

    /// Every reading, the most resolved first.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(String::as_str)
    }
}

/// The [`Reading::Resolved`] form of `path`: what prefixes in the settings
/// are stored as, and the form that serves the edge's own routes.
///
/// Anything an origin could read as a protected path matches the protected
/// prefix in one of the [`Readings`]; the price is that an odd-looking path
/// is sometimes gated when it need not be, never the other way round. The
/// request itself is forwarded as received.
///
/// No length limit here (the settings' prefixes are short); requests go
/// through [`Readings::of`], which refuses long paths.
#[must_use]
pub fn normalize(path: &str) -> String {
    read(path, Reading::Resolved)
}

/// `path` as `reading` sees it, in matching form: segments joined by single
/// `/`, `.` and `..` resolved (never above the root), a trailing `/` kept,
/// ASCII lowercased (some origins ignore case; prefixes are lowercased too).
#[must_use]
pub fn read(path: &str, reading: Reading) -> String {
    let decoded = match reading {
        Reading::Resolved | Reading::Decoded => decode_fully(path.as_bytes()),
        Reading::Literal => path.as_bytes().to_vec(),
    };
    let is_separator = |b: &u8| *b == b'/' || (*b == b'\\' && reading != Reading::Literal);
    let strip_params = |segment: &'_ [u8]| -> usize {
        match reading {
            Reading::Resolved => segment
                .iter()
                .position(|b| *b == b';')
                .unwrap_or(segment.len()),
            Reading::Decoded | Reading::Literal => segment.len(),
        }
    };

    let mut segments: Vec<&[u8]> = Vec::new();
    let mut trailing_slash = false;
    for segment in decoded.split(is_separator) {
        let segment = segment.get(..strip_params(segment)).unwrap_or(segment);
        // "/book/" and "/book/." and "/book/x/.." all end in a directory.
        trailing_slash = matches!(segment, b"" | b"." | b"..");
        match segment {
            b"" | b"." => {}
            b".." => {
                segments.pop();
            }
            other => segments.push(other),
        }
    }

    let mut out = Vec::with_capacity(decoded.len() + 1);
    for segment in &segments {
        out.push(b'/');
        out.extend_from_slice(segment);
    }
    if out.is_empty() || trailing_slash {
        out.push(b'/');
    }
    out.make_ascii_lowercase();
    String::from_utf8_lossy(&out).into_owned()
}

/// Whether `normalized` (from [`normalize`]) falls under `prefix` (itself
/// normalized). A prefix ending in `/` also covers the path without it, so
/// `/book/` protects `/book` too.
#[must_use]
pub fn has_prefix(normalized: &str, prefix: &str) -> bool {
    normalized.starts_with(prefix)
        || prefix
            .strip_suffix('/')
            .is_some_and(|folder| !folder.is_empty() && normalized == folder)
}

/// Checks a place to send an admitted visitor: `Some` when `target` is a
/// same-site path (with an optional query), `None` otherwise.
///
/// Accepted: printable ASCII, at most [`MAX_PATH_LEN`] bytes, starting with
/// a single `/`. Refused: anything a browser could resolve to another site,
/// such as `//evil`, `/\evil`, `\\evil`, `https://evil`, `javascript:`,
/// whitespace or control characters (browsers drop tabs and newlines, so
/// `/\t/evil` would become `//evil`), a fragment, and the same tricks
/// percent-encoded once or several times (`/%2F%2Fevil`, `%2F%5Cevil`).
#[must_use]
pub fn safe_target(target: &str) -> Option<&str> {
    let bytes = target.as_bytes();
    if bytes.is_empty() || bytes.len() > MAX_PATH_LEN {
        return None;
    }
    if !bytes.iter().all(|b| b.is_ascii_graphic())
        || bytes.contains(&b'\\')
        || bytes.contains(&b'#')
    {
        return None;
    }
    // Every decoded reading must still be a plain same-site path.
    let mut current = bytes.to_vec();
    for _ in 0..=DECODE_ROUNDS {
        match current.as_slice() {
            [b'/', second, ..] if *second == b'/' || *second == b'\\' => return None,
            [b'/', ..] => {}
            _ => return None,
        }
        if current.iter().any(|b| b.is_ascii_control() || *b == b'\\') {
            return None;
        }
        let next = percent_decode_once(&current);
        if next == current {
            break;
        }
        current = next;
    }
    Some(target)
}

/// Decodes one `application/x-www-form-urlencoded` value (`+` is a space).
#[must_use]
pub fn form_decode(value: &str) -> String {
    let spaced: Vec<u8> = value
        .bytes()
        .map(|b| if b == b'+' { b' ' } else { b })
        .collect();
    String::from_utf8_lossy(&percent_decode_once(&spaced)).into_owned()
}

/// The decoded value of the first `name=` parameter in a query string
/// (without the leading `?`).
#[must_use]
pub fn query_param(query: &str, name: &str) -> Option<String> {
    query.split('&').find_map(|pair| {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        (key == name).then(|| form_decode(value))
    })
}

/// Percent-encodes everything but RFC 3986's unreserved characters, for a
/// value placed in a query string.
#[must_use]
pub fn percent_encode(value: &str) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(value.len() * 3);
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            // Writing to a String cannot fail.
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_resolves_what_origins_might() {
        let cases = [
            ("/", "/"),
            ("", "/"),
            ("/book/concert", "/book/concert"),
            ("/Book/Concert", "/book/concert"),
            ("//book//concert", "/book/concert"),
            ("/book/./concert", "/book/concert"),
            ("/static/../book/x", "/book/x"),
            ("/static/%2e%2e/book/x", "/book/x"),
            ("/static/%252e%252e/book/x", "/book/x"),
            ("/static/..%2fbook/x", "/book/x"),
            ("/static\\..\\book\\x", "/book/x"),
            ("/%62ook/x", "/book/x"),
            ("/../../book/", "/book/"),
            ("/book/", "/book/"),
            ("/book/.", "/book/"),
            ("/book/x/..", "/book/"),
            ("/book%2F", "/book/"),
            ("/a%zz", "/a%zz"),
            ("/a%", "/a%"),
        ];
        for (input, want) in cases {
            assert_eq!(normalize(input), want, "normalize({input:?})");
        }
    }

    #[test]
    fn path_parameters_are_dropped_when_resolved() {
        let cases = [
            ("/book;jsessionid=1/concert", "/book/concert"),
            ("/static/..;/book/x", "/book/x"),
            ("/static/..;x=1/book/x", "/book/x"),
            ("/static/%2e%2e%3b/book/x", "/book/x"),
            ("/book/;x", "/book/"),
            ("/book/x/..;", "/book/"),
            ("/;/book", "/book"),
            ("/app.css;v=2", "/app.css"),
        ];
        for (input, want) in cases {
            assert_eq!(normalize(input), want, "normalize({input:?})");
        }
    }

    #[test]
    fn each_reading_resolves_its_own_way() {
        let cases = [
            (
                "/static/..;/Book/x",
                ["/book/x", "/static/..;/book/x", "/static/..;/book/x"],
            ),
            (
                "/book/..%2Fstatic/x",
                ["/static/x", "/static/x", "/book/..%2fstatic/x"],
            ),
            (
                "/book\\..\\static",
                ["/static", "/static", "/book\\..\\static"],
            ),
            ("/a;b/../c/./", ["/c/", "/c/", "/c/"]),
            ("", ["/", "/", "/"]),
        ];
        for (input, want) in cases {
            let readings = Readings::of(input).expect("short");
            assert_eq!(readings.iter().collect::<Vec<_>>(), want, "{input:?}");
            assert_eq!(readings.resolved(), normalize(input));
        }
    }

    #[test]
    fn long_paths_are_refused_not_cut() {
        let at_limit = format!("/{}", "a".repeat(MAX_PATH_LEN - 1));
        assert!(Readings::of(&at_limit).is_ok());
        let over = format!("/x/{}/..%2f..%2fbook/concert", "a".repeat(MAX_PATH_LEN));
        assert_eq!(Readings::of(&over), Err(TooLong));
        // normalize itself never cuts: the climb back is still seen.
        assert_eq!(normalize(&over), "/book/concert");
    }

    #[test]
    fn normalize_survives_junk() {
        for input in ["%", "%%%", "/\u{0}/..", "/é/%ff%fe", &"/a".repeat(5000)] {
            let out = normalize(input);
            assert!(out.starts_with('/'), "{input:?} -> {out:?}");
        }
    }

    #[test]
    fn prefix_covers_the_folder_itself() {
        assert!(has_prefix("/book/x", "/book/"));
        assert!(has_prefix("/book", "/book/"));
        assert!(!has_prefix("/bookx", "/book/"));
        assert!(has_prefix("/bookx", "/book"));
        assert!(has_prefix("/anything", "/"));
        assert!(!has_prefix("/", "/book/"));
    }

    #[test]
    fn safe_targets_are_same_site_paths() {
        let good = [
            "/",
            "/book/concert",
            "/book/concert?seat=12&x=%20y",
            "/a/b%2Fc",
            "/%E2%82%AC",
        ];
        for t in good {
            assert_eq!(safe_target(t), Some(t), "{t:?} should be accepted");
        }
        let bad = [
            "",
            "//evil.example",
            "/\\evil.example",
            "\\\\evil.example",
            "\\/evil.example",
            "https://evil.example/",
            "javascript:alert(1)",
            "evil.example",
            "/%2Fevil.example",
            "/%2F%2Fevil.example",
            "%2F%2Fevil.example",
            "/%5Cevil.example",
            "/%252F%252Fevil.example",
            "/%09/evil.example",
            "/\t/evil.example",
            "/ /evil",
            "/\n/evil",
            "/book#frag",
            "/é",
            "/%00",
        ];
        for t in bad {
            assert_eq!(safe_target(t), None, "{t:?} should be refused");
        }
        assert_eq!(safe_target(&format!("/{}", "a".repeat(MAX_PATH_LEN))), None);
    }

    #[test]
    fn query_params_decode() {
        assert_eq!(
            query_param("a=1&to=%2Fbook%2Fx%3Fy%3D1&to=/second", "to").as_deref(),
            Some("/book/x?y=1")
        );
        assert_eq!(query_param("to", "to").as_deref(), Some(""));
        assert_eq!(query_param("a=1", "to"), None);
        assert_eq!(form_decode("a+b%2B"), "a b+");
    }

    #[test]
    fn percent_encode_round_trips() {
        for v in ["/book/concert?seat=1&x=a b", "é/%", ""] {
            assert_eq!(form_decode(&percent_encode(v)), v);
        }
        assert_eq!(percent_encode("/a?b=c"), "%2Fa%3Fb%3Dc");
    }
}
