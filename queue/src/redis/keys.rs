//! Key names of a room in Redis: the only place they are spelled.
//!
//! All keys of a room share the hash tag `{room}`, so every script touches one
//! slot and the same code runs on Redis Cluster. The optional prefix (tests
//! give each test its own) goes before the tag and must hold no braces.
//!
//! The sorted sets hold each visitor as its member (1, 2, 3, ... in order of
//! joining), never as the sequence number its ticket carries (the room's base
//! plus the member): the scripts' prelude says more.
//!
//! The account index (one place per account: `join.lua`) is not among the
//! keys a script is given: the scripts name its keys themselves, after the
//! room hash's name, so they share its tag and slot. Many small keys
//! rather than two big hashes, because Redis keeps a hash of up to
//! `hash-max-listpack-entries` (128 by default) fields as one compact
//! listpack, where a big hash pays a table entry (~50 B) per field:
//!
//! - `wr:{room}:acct:<b>`: a hash, account (its 8 raw bytes) -> member,
//!   `b` the account's first two bytes (big-endian) mod
//!   [`ACCOUNT_BUCKETS`] ([`RoomKeys::account`]);
//! - `wr:{room}:acct-rev:<base>:<member div 128>`: a string, the account
//!   of member `m` at bytes `8 * (m mod 128)` on, eight zero bytes for none
//!   ([`RoomKeys::account_of`]), so whatever ends a place forgets its
//!   account, and a batch of new places writes its accounts at once. The
//!   room's base in the name keeps a room created anew from reading the
//!   entries of an earlier life.

use room::{AccountHash, RoomId};

/// Buckets of the account index: a million accounts fill one with ~61 on
/// average and none near 128, so every bucket stays a listpack up to about
/// 1.5 million accounts in a room.
pub const ACCOUNT_BUCKETS: u16 = 16384;

/// Members per string of the account index's reverse side (consecutive
/// members share one), each an account's 8 bytes.
pub const MEMBERS_PER_REVERSE: u64 = 128;

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

    /// The account index's hash that holds `account` (field: its 8 raw
    /// bytes, value: its member), as `account_key` in the prelude.
    pub fn account(&self, account: &AccountHash) -> String {
        let [a, b, ..] = *account.as_bytes();
        let bucket = u16::from_be_bytes([a, b]) % ACCOUNT_BUCKETS;
        format!("{}acct:{bucket}", self.stem())
    }

    /// The account index's string that holds the account of `member` (at
    /// byte 8 * (member mod `MEMBERS_PER_REVERSE`)) in a room whose base is
    /// `base`, as `reverse_key` in the prelude.
    pub fn account_of(&self, base: u64, member: u64) -> String {
        format!(
            "{}acct-rev:{base}:{}",
            self.stem(),
            member / MEMBERS_PER_REVERSE
        )
    }

    /// What every key name of the room starts with.
    fn stem(&self) -> &str {
        self.room.strip_suffix("room").unwrap_or(&self.room)
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

    #[test]
    fn account_keys_share_the_room_hash_tag() {
        let room = RoomId::parse("concert").unwrap();
        let keys = RoomKeys::new("t1:", &room);
        let account = AccountHash([0xc1, 0x02, 3, 4, 5, 6, 7, 8]);
        // 0xc102 = 49410 = 3 * 16384 + 258.
        assert_eq!(keys.account(&account), "t1:wr:{concert}:acct:258");
        assert_eq!(
            keys.account_of(1_800_000_000_000_000, 300),
            "t1:wr:{concert}:acct-rev:1800000000000000:2"
        );
    }
}
