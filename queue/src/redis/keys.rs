//! Key names of a room in Redis: the only place they are spelled.
//!
//! All keys of a room share the hash tag `{room}`, so every script touches one
//! slot and the same code runs on Redis Cluster. The optional prefix (tests
//! give each test its own) goes before the tag and must hold no braces.
//!
//! The sorted sets hold each visitor as its member (1, 2, 3, ... in order of
//! joining), never as the sequence number its ticket carries (the room's base
//! plus the member): the scripts' prelude says more.

use room::RoomId;

/// How many "still polling" bitmaps a room keeps, one per generation of
/// abandon time / 6, reused in turn (`KEYS[10..17]`); more than the
/// generations an abandon time spans, so a reused one is always dead.
pub const POLL_RING: usize = 8;

/// The polled ring's key names, slot by slot.
const POLLED: [&str; POLL_RING] = [
    "polled:0", "polled:1", "polled:2", "polled:3", "polled:4", "polled:5", "polled:6", "polled:7",
];

/// The keys every queue script takes, in `KEYS[1..]` order.
#[derive(Debug, Clone)]
pub struct RoomKeys {
    /// Hash: settings, counters (field `seq`: the last member given),
    /// admission budget, achieved rate.
    pub room: String,
    /// Sorted set: a visitor's member, scored by its order in line.
    pub waiting: String,
    /// Sorted set of a waiter's last poll (ms), as earlier versions kept
    /// it: only the tick reads it, to move what it holds into the bitmaps
    /// below and delete it.
    pub seen: String,
    /// Sorted set: an admitted visitor's member, scored by its session's end (ms).
    pub active: String,
    /// Hash: client -> places it holds now (the per-client cap); a client
    /// holding nothing has no field.
    pub holders: String,
    /// Sorted set: a join time (ms), scored by the member that joined then;
    /// one a second at most.
    pub marks: String,
    /// Hash: member -> client, for each place given under the cap, so the
    /// step that ends a place gives it back to its client.
    pub held_by: String,
    /// Bitmap: bit `member` is set while the member waits in line.
    pub present: String,
    /// Bitmap the tick computes (waiting, not polling lately) and deletes.
    pub stale: String,
    /// Bitmaps: bit `member` set when the member polled during a generation
    /// (the ring's slot `k mod POLL_RING` holds generation `k`).
    pub polled: [String; POLL_RING],
    /// Sorted set: a member that left the line, scored by when (ms); kept
    /// a minute, so every instance's snapshot hears of it.
    pub departed: String,
}

impl RoomKeys {
    /// The keys of `room` under `prefix`.
    pub fn new(prefix: &str, room: &RoomId) -> RoomKeys {
        // Built by hand, not format!: on Redis every script call builds
        // these 18 names, and format! spent ~1,300 instructions on each.
        let mut stem = String::with_capacity(prefix.len() + room.as_str().len() + 6);
        stem.push_str(prefix);
        stem.push_str("wr:{");
        stem.push_str(room.as_str());
        stem.push_str("}:");
        let key = |kind: &str| {
            let mut key = String::with_capacity(stem.len() + kind.len());
            key.push_str(&stem);
            key.push_str(kind);
            key
        };
        RoomKeys {
            room: key("room"),
            waiting: key("waiting"),
            seen: key("seen"),
            active: key("active"),
            // Not "holders": that key (left by earlier versions) counted
            // places ever given, which must not be read as places held.
            holders: key("holding"),
            marks: key("marks"),
            held_by: key("held-by"),
            present: key("present"),
            stale: key("stale"),
            polled: POLLED.map(key),
            departed: key("departed"),
        }
    }

    /// The keys in the order the scripts expect them.
    pub fn all(&self) -> Vec<&str> {
        let mut keys = vec![
            self.room.as_str(),
            &self.waiting,
            &self.seen,
            &self.active,
            &self.holders,
            &self.marks,
            &self.held_by,
            &self.present,
            &self.stale,
        ];
        keys.extend(self.polled.iter().map(String::as_str));
        keys.push(&self.departed);
        keys
    }
}

/// The set of every room id under `prefix` (its own slot: only single-key
/// commands touch it).
pub fn rooms_index(prefix: &str) -> String {
    format!("{prefix}wr:rooms")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_share_the_room_hash_tag() {
        let room = RoomId::parse("concert").unwrap();
        let keys = RoomKeys::new("t1:", &room);
        assert_eq!(keys.all().len(), 10 + POLL_RING);
        for key in keys.all() {
            assert!(key.starts_with("t1:wr:{concert}:"), "{key}");
        }
        assert_eq!(keys.room, "t1:wr:{concert}:room");
        assert_eq!(keys.holders, "t1:wr:{concert}:holding");
        assert_eq!(keys.polled[0], "t1:wr:{concert}:polled:0");
        assert_eq!(keys.polled[7], "t1:wr:{concert}:polled:7");
        assert_eq!(keys.departed, "t1:wr:{concert}:departed");
        assert_eq!(rooms_index("t1:"), "t1:wr:rooms");
    }
}
