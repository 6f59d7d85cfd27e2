//! The room id, validated once where it enters, and the map keyed by it.

use std::fmt;

/// A room id: `^[a-z0-9][a-z0-9-]{0,63}$`, checked once at the edge of the
/// program so every other layer can trust it (it is safe inside store keys,
/// cookie names and URLs).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RoomId(String);

impl RoomId {
    /// Validates `raw`; `None` when it is not a room id. The rule is the
    /// token crate's, so the origin and the edge agree on what a room is.
    pub fn parse(raw: &str) -> Option<RoomId> {
        token::is_valid_room(raw).then(|| RoomId(raw.to_owned()))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A map keyed by room, for the maps every queue request looks up. Rooms
/// are created by the operator, and a request mostly only looks its room
/// up; the one map a client's room enters unchecked (the join lanes, while
/// its join is at the store) holds no more keys than joins in flight, which
/// the per-address join limit bounds. So no client can fill such a map
/// with keys chosen to collide, and a fast hash with a per-process random
/// seed (foldhash) does where the default SipHash cost a status poll about
/// 300 instructions.
pub type RoomMap<V> = std::collections::HashMap<RoomId, V, foldhash::fast::RandomState>;

impl fmt::Display for RoomId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn room_ids() {
        for ok in ["a", "concert", "0", "a-b-c", &"a".repeat(64)] {
            assert!(RoomId::parse(ok).is_some(), "{ok}");
        }
        for bad in [
            "",
            "-a",
            "A",
            "a_b",
            "a b",
            "é",
            "a/b",
            "{a}",
            &"a".repeat(65),
        ] {
            assert!(RoomId::parse(bad).is_none(), "{bad}");
        }
    }
}
