//! What booking speaks in: performances, seats, holds and bookings as the
//! API shows them, their limits, and the rules of the ids it keeps.

use room::AccountHash;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::ToSchema;

use crate::error::BookingError;

/// The default `hold_seconds` of a performance (field report 003: seven minutes).
pub const DEFAULT_HOLD_SECONDS: u32 = 420;
/// The default `max_seats_per_hold` of a performance.
pub const DEFAULT_MAX_SEATS_PER_HOLD: u32 = 4;
/// The most seats one performance may have.
pub const MAX_SEATS_PER_PERFORMANCE: u64 = 100_000;
/// A performance's settings and seat map, as the admin API takes them
/// (unknown fields refused).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PerformanceSpec {
    /// Shown to visitors (1 to 200 characters, no control characters).
    #[schema(
        min_length = 1,
        max_length = 200,
        pattern = r"^[^\x00-\x1f\x7f-\x9f]+$"
    )]
    pub title: String,
    /// When the performance starts (RFC 3339, years 2000 to 9999).
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime, pattern = r"^[2-9]\d{3}-")]
    pub starts_at: OffsetDateTime,
    /// How long a hold lasts at most (1 to 86,400; default 420).
    #[serde(default = "default_hold_seconds")]
    #[schema(minimum = 1, maximum = 86_400)]
    pub hold_seconds: u32,
    /// Most seats in one hold (1 to 100; default 4).
    #[serde(default = "default_max_seats")]
    #[schema(minimum = 1, maximum = 100)]
    pub max_seats_per_hold: u32,
    /// Most seats one account of the operator's site holds and has booked
    /// in this performance, over all its sessions (1 to 100,000; default
    /// null: no limit). Visitors without an account are not counted.
    #[serde(default)]
    #[schema(minimum = 1, maximum = 100_000)]
    pub max_seats_per_account: Option<u32>,
    /// The seat map, in display order: 1 to 100 sections with distinct
    /// names, at most 100,000 seats in all.
    #[schema(min_items = 1, max_items = 100)]
    pub sections: Vec<SectionSpec>,
}

fn default_hold_seconds() -> u32 {
    DEFAULT_HOLD_SECONDS
}

fn default_max_seats() -> u32 {
    DEFAULT_MAX_SEATS_PER_HOLD
}

/// One section of the seat map: `rows` rows of `seats_per_row` seats, all
/// at one price. Seat ids are `{name}-{row}-{number}`, counted from 1.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SectionSpec {
    /// 1 to 8 ASCII letters or digits, unique in the performance.
    #[schema(pattern = "^[A-Za-z0-9]{1,8}$")]
    pub name: String,
    /// 1 to 1,000.
    #[schema(minimum = 1, maximum = 1_000)]
    pub rows: u32,
    /// 1 to 1,000.
    #[schema(minimum = 1, maximum = 1_000)]
    pub seats_per_row: u32,
    /// In minor units (cents, won), at most 10^12.
    #[schema(minimum = 0, maximum = 1_000_000_000_000_u64)]
    pub price: u64,
}

/// How many seats are in each state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct SeatCounts {
    /// Neither held nor booked.
    pub available: u64,
    /// In a live hold (including one being paid for).
    pub held: u64,
    /// Sold.
    pub booked: u64,
}

/// A performance as the admin API answers it: settings, map and counts.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct Performance {
    /// The performance id.
    pub id: String,
    /// The settings and seat map.
    #[serde(flatten)]
    pub spec: PerformanceSpec,
    /// Seats per state now.
    #[serde(flatten)]
    pub counts: SeatCounts,
}

/// A performance in the visitors' list.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct PerformanceSummary {
    /// The performance id.
    pub id: String,
    /// Its title.
    pub title: String,
    /// When it starts (RFC 3339).
    #[serde(with = "time::serde::rfc3339")]
    pub starts_at: OffsetDateTime,
    /// Seats per state now.
    #[serde(flatten)]
    pub counts: SeatCounts,
}

/// A seat's state as visitors see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum SeatState {
    /// Free to hold.
    Available,
    /// In someone's live hold.
    Held,
    /// Sold.
    Booked,
}

/// One seat of the listing.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub struct Seat {
    /// `{section}-{row}-{number}`.
    pub id: String,
    /// The section's name.
    pub section: String,
    /// Row, from 1.
    pub row: u32,
    /// Seat number in the row, from 1.
    pub number: u32,
    /// In minor units.
    pub price: u64,
    /// Its state now.
    pub state: SeatState,
}

/// Every seat of a performance, in map order, with a tag for conditional GETs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub struct SeatMap {
    /// The performance id.
    pub performance: String,
    /// The seats.
    pub seats: Vec<Seat>,
    /// Changes whenever any seat's state may have changed: usable as an
    /// ETag (it is [`seats_tag`](crate::BookingStore::seats_tag) at the
    /// time of the read, or later).
    #[serde(skip)]
    pub tag: String,
}

/// A live hold, as the hold route answers it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub struct Hold {
    /// UUID v7.
    pub hold_id: String,
    /// The performance id.
    pub performance: String,
    /// The seats held, sorted.
    pub seats: Vec<String>,
    /// Their prices added up, in minor units.
    pub total: u64,
    /// When the hold ends (RFC 3339).
    #[serde(with = "rfc3339_ms")]
    #[schema(value_type = String, format = DateTime)]
    pub expires_at: u64,
}

/// A booking's status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum BookingStatus {
    /// Paid; the seats are sold.
    Confirmed,
    /// Cancelled; the seats are back on sale.
    Cancelled,
}

/// A booking, as the confirm route answers it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Booking {
    /// UUID v7.
    pub booking_id: String,
    /// The performance id.
    pub performance: String,
    /// The seats sold, sorted.
    pub seats: Vec<String>,
    /// Paid, in minor units.
    pub total: u64,
    /// Confirmed, or cancelled later.
    pub status: BookingStatus,
    /// When it was confirmed (RFC 3339).
    #[serde(with = "rfc3339_ms")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: u64,
}

/// A room's seats over all its performances: the promoter's signal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub struct RoomSeats {
    /// Neither held nor booked.
    pub available: u64,
    /// In live holds.
    pub held: u64,
    /// Sold.
    pub booked: u64,
    /// All seats.
    pub total: u64,
}

impl RoomSeats {
    /// Nothing left to sell, ever (every seat booked).
    pub fn sold_out(&self) -> bool {
        self.total > 0 && self.booked >= self.total
    }
}

/// Checks an `Idempotency-Key` header value: 1 to 255 visible ASCII characters.
pub fn validate_idempotency_key(key: &str) -> Result<(), BookingError> {
    if key.is_empty() || key.len() > 255 || !key.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(BookingError::Invalid(
            "Idempotency-Key must be 1 to 255 visible ASCII characters".into(),
        ));
    }
    Ok(())
}

/// The database's text form of a visitor id: 32 lowercase hex digits.
pub(crate) fn visitor_key(visitor: u128) -> String {
    format!("{visitor:032x}")
}

/// The database's text form of an account: its 16 lowercase hex digits.
pub(crate) fn account_key(account: AccountHash) -> String {
    account.to_hex()
}

/// A room id or performance id (the room id rule): else `what` is refused.
pub(crate) fn check_id(id: &str, what: BookingError) -> Result<(), BookingError> {
    if token::is_valid_room(id) {
        Ok(())
    } else {
        Err(what)
    }
}

/// A new UUID v7 whose time part is `now_ms` (the caller's clock).
pub(crate) fn new_id(now_ms: u64) -> String {
    let ts = uuid::Timestamp::from_unix(
        uuid::NoContext,
        now_ms / 1000,
        u32::try_from((now_ms % 1000) * 1_000_000).unwrap_or(0),
    );
    uuid::Uuid::new_v7(ts).to_string()
}

/// Whether `id` is a UUID in its hyphenated text form (else it cannot name
/// a hold or booking, and reads as not found).
pub(crate) fn is_uuid(id: &str) -> bool {
    id.len() == 36 && uuid::Uuid::try_parse(id).is_ok()
}

/// `u64` milliseconds to the `i64` the database stores (saturating).
pub(crate) fn db_ms(ms: u64) -> i64 {
    i64::try_from(ms).unwrap_or(i64::MAX / 4)
}

/// Serializes unix milliseconds as RFC 3339 (UTC, millisecond precision).
pub(crate) mod rfc3339_ms {
    use serde::{Deserialize, Deserializer, Serializer};
    use time::OffsetDateTime;
    use time::format_description::well_known::Rfc3339;

    /// The RFC 3339 text of `ms`.
    pub(crate) fn format(ms: u64) -> String {
        let nanos = i128::from(ms) * 1_000_000;
        OffsetDateTime::from_unix_timestamp_nanos(nanos)
            .ok()
            .and_then(|t| t.format(&Rfc3339).ok())
            .unwrap_or_default()
    }

    pub(crate) fn serialize<S: Serializer>(ms: &u64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format(*ms))
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        let text = String::deserialize(d)?;
        let t = OffsetDateTime::parse(&text, &Rfc3339).map_err(serde::de::Error::custom)?;
        u64::try_from(t.unix_timestamp_nanos() / 1_000_000).map_err(serde::de::Error::custom)
    }
}

/// The demo performance a first start on the embedded defaults puts on
/// sale in the example room: three sections, 160 seats.
pub fn demo_performance() -> PerformanceSpec {
    PerformanceSpec {
        title: "Demo night".into(),
        // A fixed date in the future: the demo sells, it does not perform.
        starts_at: OffsetDateTime::from_unix_timestamp(1_893_492_000)
            .unwrap_or(OffsetDateTime::UNIX_EPOCH),
        hold_seconds: DEFAULT_HOLD_SECONDS,
        max_seats_per_hold: DEFAULT_MAX_SEATS_PER_HOLD,
        max_seats_per_account: None,
        sections: vec![
            SectionSpec {
                name: "A".into(),
                rows: 4,
                seats_per_row: 10,
                price: 150_000,
            },
            SectionSpec {
                name: "B".into(),
                rows: 6,
                seats_per_row: 10,
                price: 110_000,
            },
            SectionSpec {
                name: "C".into(),
                rows: 6,
                seats_per_row: 10,
                price: 77_000,
            },
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idempotency_keys() {
        assert!(validate_idempotency_key("a").is_ok());
        assert!(validate_idempotency_key(&"k".repeat(255)).is_ok());
        assert!(validate_idempotency_key("~!@#$%^&*()_+{}|:\"<>?").is_ok());
        assert!(validate_idempotency_key("").is_err());
        assert!(validate_idempotency_key(&"k".repeat(256)).is_err());
        assert!(validate_idempotency_key("has space").is_err());
        assert!(validate_idempotency_key("tab\t").is_err());
        assert!(validate_idempotency_key("é").is_err());
    }

    #[test]
    fn ids_are_uuid_v7_in_caller_time() {
        let id = new_id(1_700_000_000_123);
        let parsed = uuid::Uuid::parse_str(&id).unwrap();
        assert_eq!(parsed.get_version_num(), 7);
        let (secs, nanos) = parsed.get_timestamp().unwrap().to_unix();
        assert_eq!((secs, nanos / 1_000_000), (1_700_000_000, 123));
        assert!(is_uuid(&id));
        assert!(!is_uuid("not-a-uuid"));
    }

    #[test]
    fn times_round_trip_as_rfc3339() {
        assert_eq!(rfc3339_ms::format(0), "1970-01-01T00:00:00Z");
        let hold = Hold {
            hold_id: "h".into(),
            performance: "p".into(),
            seats: vec![],
            total: 0,
            expires_at: 1_700_000_000_250,
        };
        let json = serde_json::to_value(&hold).unwrap();
        assert_eq!(json["expires_at"], "2023-11-14T22:13:20.25Z");
    }
}
