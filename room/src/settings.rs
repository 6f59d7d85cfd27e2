//! A room's settings and state: whether it lets people in, how it picks
//! whom to admit, its scheduled windows, and their validation.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::ToSchema;

/// Whether a room lets people in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum RoomState {
    /// Joins take places and the promoter admits.
    Open,
    /// Joins take places, nobody is admitted; abandoned waiters and ended
    /// sessions are still dropped.
    Paused,
    /// Joins are answered `closed` and take no place.
    Closed,
}

impl RoomState {
    /// The name used in the API and in the store.
    pub fn as_str(self) -> &'static str {
        match self {
            RoomState::Open => "open",
            RoomState::Paused => "paused",
            RoomState::Closed => "closed",
        }
    }

    /// Inverse of [`RoomState::as_str`].
    pub fn parse(raw: &str) -> Option<RoomState> {
        match raw {
            "open" => Some(RoomState::Open),
            "paused" => Some(RoomState::Paused),
            "closed" => Some(RoomState::Closed),
            _ => None,
        }
    }
}

/// How a room picks whom to admit next; an operator can switch it live.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum QueueingMethod {
    /// In order of join (the default).
    #[default]
    Fifo,
    /// Each tick admits a random draw among those waiting: a lottery.
    Random,
    /// The gate is off: everyone who joins is admitted at once.
    Passthrough,
    /// Nobody joins; waiters are told the room is closed to new places.
    Reject,
}

impl QueueingMethod {
    /// The name used in the API and in the store.
    pub fn as_str(self) -> &'static str {
        match self {
            QueueingMethod::Fifo => "fifo",
            QueueingMethod::Random => "random",
            QueueingMethod::Passthrough => "passthrough",
            QueueingMethod::Reject => "reject",
        }
    }

    /// Inverse of [`QueueingMethod::as_str`].
    pub fn parse(raw: &str) -> Option<QueueingMethod> {
        match raw {
            "fifo" => Some(QueueingMethod::Fifo),
            "random" => Some(QueueingMethod::Random),
            "passthrough" => Some(QueueingMethod::Passthrough),
            "reject" => Some(QueueingMethod::Reject),
            _ => None,
        }
    }
}

/// Whether a join must name an account of the operator's site (an identity
/// token): with it, every browser and app of one account shares one place.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum IdentityMode {
    /// Identity tokens are not read: one place per browser or app.
    #[default]
    Off,
    /// A join may carry one (then one place per account); an invalid one is
    /// still refused.
    Optional,
    /// Every join must carry a valid one: an invite-only presale, or a sale
    /// for the site's signed-in accounts only.
    Required,
}

impl IdentityMode {
    /// The name used in the API and the rooms file.
    pub fn as_str(self) -> &'static str {
        match self {
            IdentityMode::Off => "off",
            IdentityMode::Optional => "optional",
            IdentityMode::Required => "required",
        }
    }

    /// Whether identity tokens are read at all.
    pub fn is_on(self) -> bool {
        self != IdentityMode::Off
    }
}

/// What a join must show before it takes a place, so that a place costs a
/// bot real work while a person barely notices.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ChallengeKind {
    /// Nothing: a join is one request (the default).
    #[default]
    Off,
    /// A proof of work: a SHA-256 with `challenge_bits` leading zero bits
    /// over a seed the origin issued.
    Pow,
    /// Cloudflare Turnstile: the widget's token, checked with Cloudflare.
    Turnstile,
}

impl ChallengeKind {
    /// The name used in the API and the rooms file.
    pub fn as_str(self) -> &'static str {
        match self {
            ChallengeKind::Off => "off",
            ChallengeKind::Pow => "pow",
            ChallengeKind::Turnstile => "turnstile",
        }
    }
}

/// What a Turnstile room does when Cloudflare's verify URL fails or does
/// not answer in time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ChallengeFail {
    /// Joins are refused (503) until it answers again: no place unchecked
    /// (the default).
    #[default]
    Closed,
    /// Joins take places unchecked: the sale goes on, bots included.
    Open,
}

/// A room's join challenge, as the join reads it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Challenge {
    /// Which challenge.
    pub kind: ChallengeKind,
    /// Proof-of-work difficulty: leading zero bits.
    pub bits: u8,
    /// A Turnstile room's answer when the verify URL fails.
    pub fail: ChallengeFail,
}

/// A scheduled phase of an event: between `starts_at` and `ends_at` the
/// given settings replace the room's own (fields left out keep the room's).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Window {
    /// Start of the window (inclusive).
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime, pattern = r"^[2-9]\d{3}-")]
    pub starts_at: OffsetDateTime,
    /// End of the window (exclusive).
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime, pattern = r"^[2-9]\d{3}-")]
    pub ends_at: OffsetDateTime,
    /// Capacity during the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1, maximum = 1_000_000)]
    pub capacity: Option<u32>,
    /// Admit rate during the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(exclusive_minimum = 0, maximum = 1_000_000)]
    pub admit_per_second: Option<f64>,
    /// Session length for visitors admitted during the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1, maximum = 86_400)]
    pub session_seconds: Option<u32>,
    /// Queueing method during the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<QueueingMethod>,
}

/// A room's settings, as the admin API and the `--rooms` file spell them.
/// Missing fields take the defaults below; unknown fields are refused so a
/// typo never passes silently.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, default)]
pub struct RoomSettings {
    /// Most visitors inside at once.
    #[schema(minimum = 1, maximum = 1_000_000)]
    pub capacity: u32,
    /// Visitors let in per second, at most.
    #[schema(exclusive_minimum = 0, maximum = 1_000_000)]
    pub admit_per_second: f64,
    /// How long an entry lasts, from admission.
    #[schema(minimum = 1, maximum = 86_400)]
    pub session_seconds: u32,
    /// How long a waiter who stopped polling keeps the place.
    #[schema(minimum = 3, maximum = 86_400)]
    pub abandon_seconds: u32,
    /// Before this instant the room is a pre-queue: places are drawn at random
    /// at the opening.
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime, pattern = r"^[2-9]\d{3}-")]
    pub opens_at: Option<OffsetDateTime>,
    /// How many places the line ever gives (`None`: no cap).
    #[schema(minimum = 1, maximum = 9_007_199_254_740_991_u64)]
    pub max_line: Option<u64>,
    /// How the next visitors are picked.
    pub method: QueueingMethod,
    /// Scheduled phases, in time order, not overlapping.
    #[schema(max_items = 32)]
    pub windows: Vec<Window>,
    /// How long one entry token lasts, in seconds: short, and renewed while
    /// the session runs (status calls, every protected answer), so a copied
    /// token dies within this once its session ends.
    #[schema(minimum = 10, maximum = 3_600)]
    pub entry_seconds: u32,
    /// A session seen from more distinct client addresses than this is
    /// ended: one admission shared among bots.
    #[schema(minimum = 1, maximum = 1_000)]
    pub max_session_addresses: u32,
    /// Adaptive admission: the booking API's p99 latency to hold, in
    /// milliseconds. While booking is slower the admit rate falls, and it
    /// recovers when booking is fast again. `null` (the default): off.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 10, maximum = 60_000)]
    pub target_booking_p99_ms: Option<u32>,
    /// Whether joins name an account of the operator's site: `off` (the
    /// default), `optional` or `required`. The origin refuses a room with
    /// identity on while it has no identity key to check tokens with.
    pub identity: IdentityMode,
    /// What a join must show before it takes a place: `off` (the default),
    /// `pow` (proof of work) or `turnstile`. A join with a valid ticket for
    /// a standing place (or an account's) needs none.
    pub challenge: ChallengeKind,
    /// Proof-of-work difficulty, in leading zero bits of SHA-256: each bit
    /// doubles the work (20: about a million hashes, a second or two in a
    /// browser).
    #[schema(minimum = 8, maximum = 32)]
    pub challenge_bits: u8,
    /// A Turnstile room's answer when the verify URL fails or times out:
    /// `closed` (joins refused, the default) or `open` (joins pass unchecked).
    pub challenge_fail: ChallengeFail,
    /// The room's name as visitors see it on its pages and the room list
    /// (1 to 80 characters); `null`: the room id.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(
        min_length = 1,
        max_length = 80,
        pattern = r"^[^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f][^\x00-\x1f\x7f-\x9f]*$"
    )]
    pub display_name: Option<String>,
    /// The accent colour of the room's pages, `#rgb` or `#rrggbb`; `null`:
    /// the pages' own.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(pattern = "^#([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$")]
    pub color: Option<String>,
    /// A logo shown on the room's pages: a path on the site itself (`/…`,
    /// the pages load images from their own site only); `null`: none.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 300, pattern = "^/([A-Za-z0-9._~%-][A-Za-z0-9._~/%-]*)?$")]
    pub logo: Option<String>,
    /// The currency prices are in (ISO 4217, e.g. `KRW`, `USD`), formatted
    /// for the visitor's language; `null`: `KRW`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(pattern = "^[A-Z]{3}$")]
    pub currency: Option<String>,
}

impl Default for RoomSettings {
    fn default() -> Self {
        RoomSettings {
            capacity: 100,
            admit_per_second: 10.0,
            session_seconds: 420,
            abandon_seconds: 60,
            opens_at: None,
            max_line: None,
            method: QueueingMethod::Fifo,
            windows: Vec::new(),
            entry_seconds: 60,
            max_session_addresses: 3,
            target_booking_p99_ms: None,
            identity: IdentityMode::Off,
            challenge: ChallengeKind::Off,
            challenge_bits: Self::DEFAULT_CHALLENGE_BITS,
            challenge_fail: ChallengeFail::Closed,
            display_name: None,
            color: None,
            logo: None,
            currency: None,
        }
    }
}

/// A setting out of its range.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct SettingsError {
    /// The offending field.
    pub field: &'static str,
    /// What is wrong, in words an operator can act on.
    pub message: String,
}

impl RoomSettings {
    /// Shortest abandon time: clients poll at least every second and the
    /// poll interval stays under a third of it.
    pub const MIN_ABANDON_SECONDS: u32 = 3;
    /// Longest session or abandon time (a day).
    pub const MAX_SECONDS: u32 = 86_400;
    /// Highest admit rate and capacity accepted; beyond this a typo is likelier
    /// than a real event.
    pub const MAX_RATE: f64 = 1_000_000.0;

    /// Proof-of-work difficulty unless set.
    pub const DEFAULT_CHALLENGE_BITS: u8 = 20;

    /// The join challenge these settings ask for.
    pub fn challenge(&self) -> Challenge {
        Challenge {
            kind: self.challenge,
            bits: self.challenge_bits,
            fail: self.challenge_fail,
        }
    }

    /// Checks every range; the first failure wins.
    pub fn validate(&self) -> Result<(), SettingsError> {
        let err = |field, message: &str| {
            Err(SettingsError {
                field,
                message: message.to_owned(),
            })
        };
        if self.capacity == 0 || f64::from(self.capacity) > Self::MAX_RATE {
            return err("capacity", "must be between 1 and 1000000");
        }
        if !self.admit_per_second.is_finite()
            || self.admit_per_second <= 0.0
            || self.admit_per_second > Self::MAX_RATE
        {
            return err("admit_per_second", "must be above 0 and at most 1000000");
        }
        if self.session_seconds == 0 || self.session_seconds > Self::MAX_SECONDS {
            return err("session_seconds", "must be between 1 and 86400");
        }
        if self.abandon_seconds < Self::MIN_ABANDON_SECONDS
            || self.abandon_seconds > Self::MAX_SECONDS
        {
            return err("abandon_seconds", "must be between 3 and 86400");
        }
        if let Some(at) = self.opens_at
            && !(2000..=9999).contains(&at.year())
        {
            return err("opens_at", "must be a date between the years 2000 and 9999");
        }
        if self.max_line.is_some_and(|n| n == 0 || n > Self::MAX_LINE) {
            return err(
                "max_line",
                "must be between 1 and 9007199254740991 (2^53-1), or null for no cap",
            );
        }
        if !(10..=3_600).contains(&self.entry_seconds) {
            return err("entry_seconds", "must be between 10 and 3600");
        }
        if !(1..=1_000).contains(&self.max_session_addresses) {
            return err("max_session_addresses", "must be between 1 and 1000");
        }
        if self
            .target_booking_p99_ms
            .is_some_and(|ms| !(10..=60_000).contains(&ms))
        {
            return err(
                "target_booking_p99_ms",
                "must be between 10 and 60000 milliseconds, or null for off",
            );
        }
        if !(8..=32).contains(&self.challenge_bits) {
            return err("challenge_bits", "must be between 8 and 32");
        }
        if self.display_name.as_deref().is_some_and(|n| {
            let chars = n.chars().count();
            chars == 0 || chars > 80 || n.trim().is_empty() || n.chars().any(char::is_control)
        }) {
            return err(
                "display_name",
                "must be 1 to 80 characters, not only spaces, no control characters",
            );
        }
        if self.color.as_deref().is_some_and(|c| !is_color(c)) {
            return err("color", "must be #rgb or #rrggbb (hex digits)");
        }
        if self.logo.as_deref().is_some_and(|l| !is_site_path(l)) {
            return err(
                "logo",
                "must be a path on the site (/…, at most 300 of A-Z a-z 0-9 . _ ~ / % -), not //",
            );
        }
        if self
            .currency
            .as_deref()
            .is_some_and(|c| c.len() != 3 || !c.bytes().all(|b| b.is_ascii_uppercase()))
        {
            return err(
                "currency",
                "must be an ISO 4217 code: three capital letters",
            );
        }
        if self.windows.len() > Self::MAX_WINDOWS {
            return err("windows", "at most 32 windows");
        }
        for (i, w) in self.windows.iter().enumerate() {
            if w.starts_at >= w.ends_at {
                return err("windows", "each window must start before it ends");
            }
            if i > 0
                && self
                    .windows
                    .get(i - 1)
                    .is_some_and(|p| p.ends_at > w.starts_at)
            {
                return err("windows", "windows must be in time order and not overlap");
            }
            // A window's values obey the room's own ranges.
            let merged = RoomSettings {
                windows: Vec::new(),
                ..self.in_window(w)
            };
            merged.validate().map_err(|e| SettingsError {
                field: "windows",
                message: format!("window {}: {}", i + 1, e),
            })?;
        }
        Ok(())
    }

    /// Largest line cap: the stores keep numbers a Lua script can hold exactly.
    pub const MAX_LINE: u64 = (1 << 53) - 1;

    /// Most scheduled windows per room.
    pub const MAX_WINDOWS: usize = 32;

    /// These settings with a window's values in place.
    pub fn in_window(&self, w: &Window) -> RoomSettings {
        RoomSettings {
            capacity: w.capacity.unwrap_or(self.capacity),
            admit_per_second: w.admit_per_second.unwrap_or(self.admit_per_second),
            session_seconds: w.session_seconds.unwrap_or(self.session_seconds),
            method: w.method.unwrap_or(self.method),
            ..self.clone()
        }
    }

    /// The opening instant in unix milliseconds.
    pub fn opens_at_ms(&self) -> Option<u64> {
        self.opens_at
            .map(|at| u64::try_from(unix_ms(at)).unwrap_or(0))
    }
}

/// `#rgb` or `#rrggbb`.
fn is_color(c: &str) -> bool {
    c.strip_prefix('#')
        .is_some_and(|hex| matches!(hex.len(), 3 | 6) && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// A path on the site itself: `/…` (not `//`, another site), of URL-safe
/// characters a page can put in an attribute unescaped.
fn is_site_path(p: &str) -> bool {
    p.len() <= 300
        && p.starts_with('/')
        && !p.starts_with("//")
        && p.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._~/%-".contains(&b))
}

/// An instant in unix milliseconds, the stores' unit of time. Both stores
/// compute every opening and window bound with this one function, so they
/// agree to the millisecond.
pub fn unix_ms(t: OffsetDateTime) -> i64 {
    i64::try_from(t.unix_timestamp_nanos() / 1_000_000).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_validate() {
        assert_eq!(RoomSettings::default().validate(), Ok(()));
    }

    #[test]
    fn out_of_range_settings() {
        let bad = [
            RoomSettings {
                capacity: 0,
                ..Default::default()
            },
            RoomSettings {
                admit_per_second: 0.0,
                ..Default::default()
            },
            RoomSettings {
                admit_per_second: f64::NAN,
                ..Default::default()
            },
            RoomSettings {
                session_seconds: 0,
                ..Default::default()
            },
            RoomSettings {
                abandon_seconds: 2,
                ..Default::default()
            },
            RoomSettings {
                challenge_bits: 7,
                ..Default::default()
            },
            RoomSettings {
                challenge_bits: 33,
                ..Default::default()
            },
            RoomSettings {
                max_line: Some(0),
                ..Default::default()
            },
            RoomSettings {
                max_line: Some(RoomSettings::MAX_LINE + 1),
                ..Default::default()
            },
        ];
        for s in bad {
            assert!(s.validate().is_err(), "{s:?}");
        }
    }

    #[test]
    fn how_a_room_looks() {
        let look =
            |name: Option<&str>, color: Option<&str>, logo: Option<&str>, cur: Option<&str>| {
                RoomSettings {
                    display_name: name.map(str::to_owned),
                    color: color.map(str::to_owned),
                    logo: logo.map(str::to_owned),
                    currency: cur.map(str::to_owned),
                    ..Default::default()
                }
                .validate()
                .map_err(|e| e.field)
            };
        assert_eq!(
            look(
                Some("Spring tour — 봄 공연"),
                Some("#a30"),
                Some("/static/logo.svg"),
                Some("USD")
            ),
            Ok(())
        );
        assert_eq!(look(None, Some("#AA3300"), None, None), Ok(()));
        for name in ["", "   ", "a\nb", &"x".repeat(81)] {
            assert_eq!(
                look(Some(name), None, None, None),
                Err("display_name"),
                "{name:?}"
            );
        }
        for color in ["red", "#12", "#1234", "#ggg", "aa3300", "#aa3300;x"] {
            assert_eq!(look(None, Some(color), None, None), Err("color"), "{color}");
        }
        for logo in [
            "logo.png",
            "//evil.example/x.png",
            "https://x/y.png",
            "/a b.png",
            "/a\"b",
            "/javascript:x",
        ] {
            assert_eq!(look(None, None, Some(logo), None), Err("logo"), "{logo}");
        }
        assert_eq!(
            look(None, None, Some(&format!("/{}", "a".repeat(300))), None),
            Err("logo")
        );
        for cur in ["usd", "US", "USDT", "₩"] {
            assert_eq!(look(None, None, None, Some(cur)), Err("currency"), "{cur}");
        }
    }
}
