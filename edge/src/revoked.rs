//! The sessions this isolate has revoked for the site
//! (`Waiting-Room-Command: revoke`), so their entry tokens stop opening the
//! gate at once rather than when they expire.
//!
//! An entry token stays genuine until its expiry, and the edge cannot ask
//! the origin about every request; the origin refuses a revoked session's
//! tokens anyway (401 `invalid_entry`) and renews none. This memory is the
//! edge's early refusal: per isolate (another isolate or location passes
//! the token on to the origin, which refuses it), bounded, and forgetting a
//! session once every token it can have had has expired.

use std::collections::HashMap;

/// Most sessions remembered; past it the one forgotten soonest goes first.
pub const MAX_REVOKED: usize = 10_000;

/// Revoked sessions by room and sequence number, each with the time
/// (unix seconds) from which no token of it can still be valid.
#[derive(Clone, Debug, Default)]
pub struct Revoked {
    rooms: HashMap<String, HashMap<u64, u64>>,
    len: usize,
}

impl Revoked {
    /// Whether the session `seq` of `room` was revoked and its tokens may
    /// still be unexpired at `now`.
    #[must_use]
    pub fn contains(&self, room: &str, seq: u64, now: u64) -> bool {
        self.rooms
            .get(room)
            .and_then(|sessions| sessions.get(&seq))
            .is_some_and(|&until| now < until)
    }

    /// Remembers that the session `seq` of `room` ended, until `until`.
    pub fn insert(&mut self, room: &str, seq: u64, until: u64, now: u64) {
        if until <= now {
            return;
        }
        if let Some(end) = self.rooms.get_mut(room).and_then(|s| s.get_mut(&seq)) {
            *end = (*end).max(until);
            return;
        }
        if self.len >= MAX_REVOKED {
            self.forget_expired(now);
        }
        if self.len >= MAX_REVOKED {
            self.forget_soonest();
        }
        self.rooms
            .entry(room.to_owned())
            .or_default()
            .insert(seq, until);
        self.len += 1;
    }

    fn forget_expired(&mut self, now: u64) {
        for sessions in self.rooms.values_mut() {
            sessions.retain(|_, &mut until| now < until);
        }
        self.rooms.retain(|_, sessions| !sessions.is_empty());
        self.len = self.rooms.values().map(HashMap::len).sum();
    }

    fn forget_soonest(&mut self) {
        let soonest = self
            .rooms
            .iter()
            .flat_map(|(room, sessions)| {
                sessions
                    .iter()
                    .map(move |(seq, until)| (*until, room, *seq))
            })
            .min()
            .map(|(_, room, seq)| (room.clone(), seq));
        if let Some((room, seq)) = soonest
            && let Some(sessions) = self.rooms.get_mut(&room)
            && sessions.remove(&seq).is_some()
        {
            self.len = self.len.saturating_sub(1);
            if sessions.is_empty() {
                self.rooms.remove(&room);
            }
        }
    }

    /// How many sessions are remembered.
    #[must_use]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether none is.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// Until when a session must be refused, given one of its entry tokens
/// (issued at `issued_at`, expiring at `expires_at`) and the time of the
/// revocation: every token the origin gave it before then has expired by
/// the later of this token's expiry and `now` plus one token lifetime
/// (an entry token lives a room's entry time, cut short at the session's
/// end).
#[must_use]
pub fn refuse_until(issued_at: u64, expires_at: u64, now: u64) -> u64 {
    expires_at.max(now.saturating_add(expires_at.saturating_sub(issued_at)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_until_the_end_only() {
        let mut r = Revoked::default();
        r.insert("concert", 7, 160, 100);
        assert!(r.contains("concert", 7, 100));
        assert!(r.contains("concert", 7, 159));
        assert!(!r.contains("concert", 7, 160));
        assert!(!r.contains("concert", 8, 100), "another session");
        assert!(!r.contains("vip", 7, 100), "another room");
        // Already over: nothing to remember.
        r.insert("concert", 9, 100, 100);
        assert!(!r.contains("concert", 9, 99));
        assert_eq!(r.len(), 1);
        // Again, later: the later end holds, never an earlier one.
        r.insert("concert", 7, 130, 100);
        assert!(r.contains("concert", 7, 150));
        r.insert("concert", 7, 200, 100);
        assert!(r.contains("concert", 7, 199));
    }

    #[test]
    fn bounded_forgetting_the_expired_then_the_soonest() {
        let mut r = Revoked::default();
        for seq in 0..MAX_REVOKED as u64 {
            // Half end at 150, half at 1000 + seq.
            let until = if seq % 2 == 0 { 150 } else { 1_000 + seq };
            r.insert("concert", seq, until, 100);
        }
        assert_eq!(r.len(), MAX_REVOKED);
        // At 200 the first half is over: they make the room.
        r.insert("concert", 1_000_000, 5_000, 200);
        assert_eq!(r.len(), MAX_REVOKED / 2 + 1);
        assert!(r.contains("concert", 1_000_000, 200));

        let mut full = Revoked::default();
        for seq in 0..MAX_REVOKED as u64 {
            full.insert("concert", seq, 1_000 + seq, 100);
        }
        full.insert("concert", 1_000_000, 50_000, 100);
        assert_eq!(full.len(), MAX_REVOKED);
        assert!(!full.contains("concert", 0, 100), "the soonest went");
        assert!(full.contains("concert", 1, 100));
        assert!(full.contains("concert", 1_000_000, 100));
    }

    #[test]
    fn refuses_every_token_the_session_can_have() {
        // A 60 s token issued at 100: tokens given until now (130) live to 190.
        assert_eq!(refuse_until(100, 160, 130), 190);
        // Cut short by the session's end at 140: a little longer than
        // needed, never shorter.
        assert_eq!(refuse_until(130, 140, 135), 145);
        assert_eq!(refuse_until(0, u64::MAX, 10), u64::MAX);
    }
}
