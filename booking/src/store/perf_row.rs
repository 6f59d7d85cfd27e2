//! A performance's row as the store reads it (its settings and the map's
//! shape), the cache entry holds use it from, and the seat id rules its
//! map answers by. Below the store and its operations: the store's cache
//! holds these rows, and the operations read them.

use std::sync::Arc;

use crate::model::PerformanceSpec;

/// How long a hold may use a cached performance row. This process drops
/// its entry when it changes the performance; another instance's change is
/// seen within this time (and a claim checks the prices it charges against
/// the seat rows it locks, so a stale price never reaches a hold).
pub(crate) const PERF_TTL: std::time::Duration = std::time::Duration::from_secs(1);

/// A cached performance row and when it was read.
pub(crate) type CachedPerf = (std::time::Instant, Arc<PerfRow>);

/// A performance's row: its settings and the map's shape.
#[derive(Clone, Debug)]
pub(crate) struct PerfRow {
    pub(crate) pkey: i64,
    pub(crate) id: String,
    pub(crate) spec: PerformanceSpec,
    pub(crate) total: u64,
}

impl PerfRow {
    /// The hold length in milliseconds.
    pub(crate) fn hold_ms(&self) -> u64 {
        u64::from(self.spec.hold_seconds) * 1000
    }

    /// The price of `seat`, or `None` when the map has no such seat.
    pub(crate) fn price_of(&self, seat: &str) -> Option<u64> {
        let (section, row, number) = parse_seat_id(seat)?;
        let s = self.spec.sections.iter().find(|s| s.name == section)?;
        (row <= s.rows && number <= s.seats_per_row).then_some(s.price)
    }
}

/// Splits `{section}-{row}-{number}` (canonical decimal, from 1).
pub(crate) fn parse_seat_id(id: &str) -> Option<(&str, u32, u32)> {
    let mut parts = id.split('-');
    let (section, row, number) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || !valid_section_name(section) {
        return None;
    }
    Some((section, canonical_number(row)?, canonical_number(number)?))
}

fn canonical_number(text: &str) -> Option<u32> {
    if text.is_empty() || text.len() > 4 || text.starts_with('0') {
        return None;
    }
    text.bytes()
        .all(|b| b.is_ascii_digit())
        .then(|| text.parse().ok())
        .flatten()
}

pub(crate) fn valid_section_name(name: &str) -> bool {
    (1..=8).contains(&name.len()) && name.bytes().all(|b| b.is_ascii_alphanumeric())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seat_ids() {
        assert_eq!(parse_seat_id("A-3-12"), Some(("A", 3, 12)));
        assert_eq!(parse_seat_id("Bal2-1-1"), Some(("Bal2", 1, 1)));
        for bad in [
            "A-03-1", "A-0-1", "A-1", "A-1-1-1", "-1-1", "A-1-x", "Á-1-1", "A-1-+1",
        ] {
            assert_eq!(parse_seat_id(bad), None, "{bad}");
        }
    }
}
