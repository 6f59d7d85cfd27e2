//! The edge's settings: read once per isolate from the worker's `[vars]`
//! and secrets by [`EdgeConfig::from_vars`], checked, and turned into the
//! shapes the gate matches against.
//!
//! This module never reads the environment itself: the caller passes a
//! lookup function, so native tests need no Workers runtime. Error messages
//! name the variable and the rule, never a secret's value.

use std::fmt;

use serde::Deserialize;
use token::{Keyring, MIN_SECRET_LEN, Secret};

use crate::path;

/// The path prefix of the queue API, which always passes to the origin.
pub const QUEUE_PREFIX: &str = "/queue/";

/// The path prefix the edge answers itself: `/waiting-room/{room}` is the
/// room's waiting page, for links and web views (the `page` URL of the
/// JSON 429).
pub const PAGE_PREFIX: &str = "/waiting-room/";

/// The path prefix of the origin's admin API (a string prefix: `/admin`,
/// `/admin/rooms`, `/administrator`), which the edge hides (404) from
/// anyone without the bypass secret.
pub const ADMIN_PREFIX: &str = "/admin";

/// Most prefixes in `ROOMS` and `BYPASS_PATHS` together; every request is
/// matched against all of them.
pub const MAX_PREFIXES: usize = 256;

/// Longest `PAGE_TITLE`, in characters.
pub const MAX_TITLE_CHARS: usize = 80;

/// What held visitors get while the origin's queue API cannot be reached.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum FailMode {
    /// Let protected requests through to the origin (the site stays open;
    /// the line is skipped while the queue is down).
    Open,
    /// Keep holding them: the waiting page keeps retrying until the queue
    /// answers (nobody gets in around the line).
    Closed,
}

/// One room and the path prefixes it protects, as written in `ROOMS`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoomRule {
    /// The room id (`^[a-z0-9][a-z0-9-]{0,63}$`), as known to the origin.
    pub room: String,
    /// Path prefixes, e.g. `["/book/", "/api/"]`.
    pub paths: Vec<String>,
}

/// How the waiting page looks: the operator's title and accent colour.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct PageStyle {
    /// `PAGE_TITLE`: shown as the heading and `<title>`; `None` uses the
    /// built-in "Waiting room" in the visitor's language.
    pub title: Option<String>,
    /// `PAGE_COLOR`: `#rgb` or `#rrggbb`; `None` uses the built-in blue.
    pub color: Option<String>,
    /// `TURNSTILE_SITE_KEY`: the origin's `--turnstile-site-key`, so the
    /// page can show the widget in a room that asks for Turnstile; `None`:
    /// the page has no widget and Turnstile rooms cannot be joined through
    /// the edge's page.
    pub turnstile_site_key: Option<String>,
}

/// Everything the gate needs to decide, parsed and checked.
pub struct EdgeConfig {
    /// `ORIGIN_URL` without a trailing `/`, e.g. `https://origin.example.com`.
    pub origin: String,
    /// `ROOMS`, in the order given.
    pub rooms: Vec<RoomRule>,
    /// `FAIL_MODE` (default [`FailMode::Closed`]).
    pub fail_mode: FailMode,
    /// `BYPASS_PATHS`, normalized.
    pub bypass_paths: Vec<String>,
    /// `SIGNING_KEYS`: verifies entry tokens.
    pub keys: Keyring,
    /// `EDGE_SECRET`: sent to the origin as `Waiting-Room-Edge`.
    pub edge_secret: String,
    /// `PAGE_TITLE` and `PAGE_COLOR`.
    pub page: PageStyle,
    /// `BYPASS_SECRET` (kept as a digest, compared in constant time), or
    /// `None` when bypass by header is off.
    bypass: Option<Secret>,
    /// Every room prefix, normalized, with the index of its room, longest
    /// first, so the first match is the most specific.
    protected: Vec<(String, usize)>,
}

impl fmt::Debug for EdgeConfig {
    /// Everything but the secrets.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EdgeConfig")
            .field("origin", &self.origin)
            .field("rooms", &self.rooms)
            .field("fail_mode", &self.fail_mode)
            .field("bypass_paths", &self.bypass_paths)
            .field("keys", &self.keys)
            .field("bypass_secret_set", &self.bypass.is_some())
            .field("page", &self.page)
            .finish_non_exhaustive()
    }
}

/// Why the configuration was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConfigError {
    /// A required variable is unset or empty.
    Missing(&'static str),
    /// A variable is set but breaks a rule.
    Invalid {
        /// The variable's name.
        var: &'static str,
        /// What is wrong, in words (never a secret's value).
        reason: String,
    },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::Missing(var) => write!(f, "{var} is not set (see docs/edge.md)"),
            ConfigError::Invalid { var, reason } => write!(f, "{var} is invalid: {reason}"),
        }
    }
}

impl std::error::Error for ConfigError {}

fn invalid(var: &'static str, reason: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        var,
        reason: reason.into(),
    }
}

/// The variable's value, trimmed; `None` when unset or blank.
fn optional(get: &impl Fn(&str) -> Option<String>, var: &'static str) -> Option<String> {
    get(var)
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
}

fn required(
    get: &impl Fn(&str) -> Option<String>,
    var: &'static str,
) -> Result<String, ConfigError> {
    optional(get, var).ok_or(ConfigError::Missing(var))
}

impl EdgeConfig {
    /// Parses the worker's variables, looked up by name through `get`
    /// (`[vars]` and secrets alike):
    ///
    /// | name | | |
    /// |---|---|---|
    /// | `ORIGIN_URL` | required | `http(s)://host[:port]`, no path |
    /// | `ROOMS` | required | JSON `[{"room": "concert", "paths": ["/book/"]}]` |
    /// | `FAIL_MODE` | `closed` | `open` or `closed` |
    /// | `BYPASS_PATHS` | `[]` | JSON list of path prefixes never gated |
    /// | `SIGNING_KEYS` | required, secret | the origin's `kid:secret,...` |
    /// | `EDGE_SECRET` | required, secret | ≥ 16 bytes, sent as `Waiting-Room-Edge` |
    /// | `BYPASS_SECRET` | off, secret | ≥ 16 bytes when set |
    /// | `PAGE_TITLE` | built-in | at most 80 characters |
    /// | `PAGE_COLOR` | built-in | `#rgb` or `#rrggbb` |
    /// | `TURNSTILE_SITE_KEY` | off | `[A-Za-z0-9_-]`, at most 100 |
    ///
    /// # Errors
    ///
    /// The first variable that is missing or breaks its rule.
    pub fn from_vars(get: impl Fn(&str) -> Option<String>) -> Result<EdgeConfig, ConfigError> {
        let origin = parse_origin(&required(&get, "ORIGIN_URL")?)?;
        let rooms = parse_rooms(&required(&get, "ROOMS")?)?;
        let fail_mode = match optional(&get, "FAIL_MODE").as_deref() {
            None | Some("closed") => FailMode::Closed,
            Some("open") => FailMode::Open,
            Some(_) => return Err(invalid("FAIL_MODE", "must be \"open\" or \"closed\"")),
        };
        let bypass_paths = match optional(&get, "BYPASS_PATHS") {
            None => Vec::new(),
            Some(raw) => {
                let list: Vec<String> = serde_json::from_str(&raw).map_err(|e| {
                    invalid(
                        "BYPASS_PATHS",
                        format!("expected a JSON list of path prefixes ({e})"),
                    )
                })?;
                list.iter()
                    .map(|p| check_prefix("BYPASS_PATHS", p))
                    .collect::<Result<Vec<_>, _>>()?
            }
        };
        let keys = Keyring::parse(&required(&get, "SIGNING_KEYS")?)
            .map_err(|e| invalid("SIGNING_KEYS", e.to_string()))?;
        let edge_secret = check_secret("EDGE_SECRET", required(&get, "EDGE_SECRET")?)?;
        let bypass = optional(&get, "BYPASS_SECRET")
            .map(|s| check_secret("BYPASS_SECRET", s))
            .transpose()?
            .map(Secret::new);
        let page = PageStyle {
            title: optional(&get, "PAGE_TITLE")
                .map(|t| check_title(&t).map(|()| t))
                .transpose()?,
            color: optional(&get, "PAGE_COLOR")
                .map(|c| check_color(&c).map(|()| c.to_ascii_lowercase()))
                .transpose()?,
            turnstile_site_key: optional(&get, "TURNSTILE_SITE_KEY")
                .map(|k| check_site_key(&k).map(|()| k))
                .transpose()?,
        };

        let mut protected = Vec::new();
        for (index, rule) in rooms.iter().enumerate() {
            for prefix in &rule.paths {
                let normalized = check_prefix("ROOMS", prefix)?;
                if let Some((_, other)) = protected.iter().find(|(p, _)| *p == normalized) {
                    let other: &RoomRule = rooms.get(*other).unwrap_or(rule);
                    return Err(invalid(
                        "ROOMS",
                        format!(
                            "path {prefix:?} is listed for both {:?} and {:?}",
                            other.room, rule.room
                        ),
                    ));
                }
                protected.push((normalized, index));
            }
        }
        if protected.len() + bypass_paths.len() > MAX_PREFIXES {
            return Err(invalid(
                "ROOMS",
                format!("at most {MAX_PREFIXES} prefixes in ROOMS and BYPASS_PATHS together"),
            ));
        }
        protected.sort_by_key(|(prefix, _)| std::cmp::Reverse(prefix.len()));

        Ok(EdgeConfig {
            origin,
            rooms,
            fail_mode,
            bypass_paths,
            keys,
            edge_secret,
            page,
            bypass,
            protected,
        })
    }

    /// The room protecting `normalized` (a path from [`path::normalize`]):
    /// the one with the longest matching prefix.
    #[must_use]
    pub fn room_for(&self, normalized: &str) -> Option<&str> {
        self.protected
            .iter()
            .find(|(prefix, _)| path::has_prefix(normalized, prefix))
            .and_then(|(_, index)| self.rooms.get(*index))
            .map(|rule| rule.room.as_str())
    }

    /// The configured room called `room`, if any.
    #[must_use]
    pub fn room(&self, room: &str) -> Option<&str> {
        self.rooms
            .iter()
            .find(|rule| rule.room == room)
            .map(|rule| rule.room.as_str())
    }

    /// Whether `normalized` falls under a `BYPASS_PATHS` prefix.
    #[must_use]
    pub fn is_bypass_path(&self, normalized: &str) -> bool {
        self.bypass_paths
            .iter()
            .any(|prefix| path::has_prefix(normalized, prefix))
    }

    /// Whether a `Waiting-Room-Bypass` header value equals `BYPASS_SECRET`
    /// (surrounding whitespace ignored), compared in constant time. Always
    /// false when no bypass secret is set.
    #[must_use]
    pub fn is_bypass_secret(&self, presented: &str) -> bool {
        self.bypass
            .as_ref()
            .is_some_and(|secret| secret.matches(presented.trim()))
    }
}

/// `http(s)://authority` with at most a trailing `/`: where requests are
/// forwarded. A path would be ambiguous (prefix it or not?), so none.
fn parse_origin(raw: &str) -> Result<String, ConfigError> {
    const VAR: &str = "ORIGIN_URL";
    let rest = raw
        .strip_prefix("https://")
        .or_else(|| raw.strip_prefix("http://"))
        .ok_or_else(|| invalid(VAR, "must start with http:// or https://"))?;
    let authority = rest.strip_suffix('/').unwrap_or(rest);
    if authority.is_empty() {
        return Err(invalid(VAR, "has no host"));
    }
    if authority.contains(['/', '?', '#']) {
        return Err(invalid(
            VAR,
            "must be scheme and host only (no path, query or fragment)",
        ));
    }
    if authority.contains('@') {
        return Err(invalid(VAR, "must not carry credentials"));
    }
    if !authority
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b".-:[]_".contains(&b))
    {
        return Err(invalid(VAR, "host has characters a host name cannot have"));
    }
    Ok(raw.strip_suffix('/').unwrap_or(raw).to_owned())
}

fn parse_rooms(raw: &str) -> Result<Vec<RoomRule>, ConfigError> {
    const VAR: &str = "ROOMS";
    let rooms: Vec<RoomRule> = serde_json::from_str(raw).map_err(|e| {
        invalid(
            VAR,
            format!(
                "expected JSON like [{{\"room\": \"concert\", \"paths\": [\"/book/\"]}}] ({e})"
            ),
        )
    })?;
    if rooms.is_empty() {
        return Err(invalid(VAR, "lists no room"));
    }
    for (i, rule) in rooms.iter().enumerate() {
        if !token::is_valid_room(&rule.room) {
            return Err(invalid(
                VAR,
                format!(
                    "room {:?} is not a room id (^[a-z0-9][a-z0-9-]{{0,63}}$)",
                    rule.room
                ),
            ));
        }
        if rooms.iter().take(i).any(|r| r.room == rule.room) {
            return Err(invalid(
                VAR,
                format!("room {:?} is listed twice", rule.room),
            ));
        }
        if rule.paths.is_empty() {
            return Err(invalid(
                VAR,
                format!("room {:?} protects no path", rule.room),
            ));
        }
    }
    Ok(rooms)
}

/// Checks a path prefix and returns its normalized form.
fn check_prefix(var: &'static str, prefix: &str) -> Result<String, ConfigError> {
    if !prefix.starts_with('/') {
        return Err(invalid(var, format!("prefix {prefix:?} must start with /")));
    }
    if prefix.len() > 256 || !prefix.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(invalid(
            var,
            format!("prefix {prefix:?} must be at most 256 printable ASCII characters"),
        ));
    }
    if prefix.contains(['?', '#']) {
        return Err(invalid(
            var,
            format!("prefix {prefix:?} must be a path (no ? or #)"),
        ));
    }
    let normalized = path::normalize(prefix);
    // A folder prefix keeps its slash; a bare "/book" stays a string prefix.
    let normalized = if prefix.ends_with('/') || normalized == "/" {
        normalized
    } else {
        normalized.trim_end_matches('/').to_owned()
    };
    for owned in [QUEUE_PREFIX, PAGE_PREFIX] {
        if var == "ROOMS" && path::has_prefix(&normalized, owned) {
            return Err(invalid(
                var,
                format!("prefix {prefix:?} is under {owned}, which is never gated"),
            ));
        }
    }
    Ok(normalized)
}

fn check_secret(var: &'static str, secret: String) -> Result<String, ConfigError> {
    if secret.len() < MIN_SECRET_LEN {
        return Err(invalid(
            var,
            format!(
                "is {} bytes; use at least {MIN_SECRET_LEN} random bytes",
                secret.len()
            ),
        ));
    }
    // It travels in an HTTP header.
    if !secret.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(invalid(
            var,
            "must be printable ASCII without spaces (it is sent as a header)",
        ));
    }
    Ok(secret)
}

fn check_title(title: &str) -> Result<(), ConfigError> {
    if title.chars().count() > MAX_TITLE_CHARS || title.chars().any(char::is_control) {
        return Err(invalid(
            "PAGE_TITLE",
            format!("must be at most {MAX_TITLE_CHARS} characters on one line"),
        ));
    }
    Ok(())
}

fn check_color(color: &str) -> Result<(), ConfigError> {
    let hex = color.strip_prefix('#').unwrap_or("");
    if matches!(hex.len(), 3 | 6) && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(())
    } else {
        Err(invalid("PAGE_COLOR", "must be #rgb or #rrggbb"))
    }
}

/// A Turnstile site key goes into the page's script config: only the
/// characters Cloudflare's keys are made of.
fn check_site_key(key: &str) -> Result<(), ConfigError> {
    if !key.is_empty()
        && key.len() <= 100
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        Ok(())
    } else {
        Err(invalid(
            "TURNSTILE_SITE_KEY",
            "must be 1 to 100 of A-Z a-z 0-9 _ -",
        ))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    pub(crate) const KEYS: &str = "k1:edge-test-secret-0123456789";

    fn vars(overrides: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let mut map: HashMap<String, String> = [
            ("ORIGIN_URL", "http://127.0.0.1:8080"),
            (
                "ROOMS",
                r#"[{"room":"concert","paths":["/book/","/api/"]},{"room":"vip","paths":["/book/vip/"]}]"#,
            ),
            ("SIGNING_KEYS", KEYS),
            ("EDGE_SECRET", "edge-secret-0123456789"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        for (k, v) in overrides {
            map.insert((*k).to_owned(), (*v).to_owned());
        }
        move |name| map.get(name).cloned()
    }

    #[test]
    fn minimal_config_parses_with_defaults() {
        let cfg = EdgeConfig::from_vars(vars(&[])).expect("valid");
        assert_eq!(cfg.origin, "http://127.0.0.1:8080");
        assert_eq!(cfg.fail_mode, FailMode::Closed);
        assert!(cfg.bypass_paths.is_empty());
        assert!(!cfg.is_bypass_secret("anything-at-all-long"));
        assert_eq!(cfg.page, PageStyle::default());
    }

    #[test]
    fn longest_prefix_wins() {
        let cfg = EdgeConfig::from_vars(vars(&[])).expect("valid");
        assert_eq!(cfg.room_for("/book/vip/seat"), Some("vip"));
        assert_eq!(cfg.room_for("/book/vip"), Some("vip"));
        assert_eq!(cfg.room_for("/book/x"), Some("concert"));
        assert_eq!(cfg.room_for("/api/"), Some("concert"));
        assert_eq!(cfg.room_for("/"), None);
        assert_eq!(cfg.room_for("/books"), None);
    }

    #[test]
    fn every_setting_is_read() {
        let cfg = EdgeConfig::from_vars(vars(&[
            ("ORIGIN_URL", " https://origin.example.com/ "),
            ("FAIL_MODE", "open"),
            ("BYPASS_PATHS", r#"["/static/", "/Health"]"#),
            ("BYPASS_SECRET", "staff-bypass-secret-0123"),
            ("PAGE_TITLE", "Tickets — 공연"),
            ("PAGE_COLOR", "#AA3300"),
            ("TURNSTILE_SITE_KEY", "0x4AAAAAAA_site-key"),
        ]))
        .expect("valid");
        assert_eq!(cfg.origin, "https://origin.example.com");
        assert_eq!(cfg.fail_mode, FailMode::Open);
        assert_eq!(cfg.bypass_paths, ["/static/", "/health"]);
        assert!(cfg.is_bypass_path("/static/app.js"));
        assert!(cfg.is_bypass_path("/healthz"));
        assert!(cfg.is_bypass_secret("staff-bypass-secret-0123"));
        assert!(!cfg.is_bypass_secret("staff-bypass-secret-0124"));
        assert!(!cfg.is_bypass_secret(""));
        assert_eq!(cfg.page.title.as_deref(), Some("Tickets — 공연"));
        assert_eq!(cfg.page.color.as_deref(), Some("#aa3300"));
        assert_eq!(
            cfg.page.turnstile_site_key.as_deref(),
            Some("0x4AAAAAAA_site-key")
        );
    }

    #[test]
    fn bad_settings_are_refused_with_the_variable_named() {
        let cases: &[(&str, &str)] = &[
            ("ORIGIN_URL", ""),
            ("ORIGIN_URL", "ftp://x"),
            ("ORIGIN_URL", "http://"),
            ("ORIGIN_URL", "http://x/path"),
            ("ORIGIN_URL", "http://user:pw@x"),
            ("ORIGIN_URL", "http://x y"),
            ("ROOMS", ""),
            ("ROOMS", "not json"),
            ("ROOMS", "[]"),
            ("ROOMS", r#"[{"room":"Bad","paths":["/a/"]}]"#),
            ("ROOMS", r#"[{"room":"a","paths":[]}]"#),
            ("ROOMS", r#"[{"room":"a","paths":["a/"]}]"#),
            ("ROOMS", r#"[{"room":"a","paths":["/a/?x"]}]"#),
            ("ROOMS", r#"[{"room":"a","paths":["/queue/"]}]"#),
            ("ROOMS", r#"[{"room":"a","paths":["/waiting-room/a"]}]"#),
            ("ROOMS", r#"[{"room":"a","paths":["/a/"],"typo":1}]"#),
            (
                "ROOMS",
                r#"[{"room":"a","paths":["/a/"]},{"room":"a","paths":["/b/"]}]"#,
            ),
            (
                "ROOMS",
                r#"[{"room":"a","paths":["/a/"]},{"room":"b","paths":["/A/"]}]"#,
            ),
            ("FAIL_MODE", "sometimes"),
            ("BYPASS_PATHS", "/static/"),
            ("BYPASS_PATHS", r#"["static"]"#),
            ("SIGNING_KEYS", ""),
            ("SIGNING_KEYS", "k1:short"),
            ("EDGE_SECRET", ""),
            ("EDGE_SECRET", "short"),
            ("EDGE_SECRET", "has a space in it, long enough"),
            ("BYPASS_SECRET", "short"),
            ("PAGE_TITLE", "line\nbreak"),
            ("PAGE_COLOR", "red"),
            ("PAGE_COLOR", "#12345g"),
            ("PAGE_COLOR", "#1234;}body{x"),
            ("TURNSTILE_SITE_KEY", "key\"</script>"),
            ("TURNSTILE_SITE_KEY", "a b"),
        ];
        for (var, value) in cases {
            let err = EdgeConfig::from_vars(vars(&[(var, value)]))
                .expect_err(&format!("{var}={value:?} should be refused"));
            let message = err.to_string();
            assert!(message.starts_with(var), "{var}={value:?}: {message}");
        }
    }

    #[test]
    fn errors_never_echo_secrets() {
        let secret = "k1:tiny";
        let err = EdgeConfig::from_vars(vars(&[("SIGNING_KEYS", secret)])).expect_err("short");
        assert!(!err.to_string().contains("tiny"), "{err}");
        let err = EdgeConfig::from_vars(vars(&[("EDGE_SECRET", "hush hush hush hush")]))
            .expect_err("space");
        assert!(!err.to_string().contains("hush"), "{err}");
        let cfg = EdgeConfig::from_vars(vars(&[("BYPASS_SECRET", "staff-bypass-secret-0123")]))
            .expect("valid");
        let debug = format!("{cfg:?}");
        assert!(!debug.contains("staff-bypass") && !debug.contains("edge-secret"));
    }
}
