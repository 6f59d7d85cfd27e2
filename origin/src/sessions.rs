//! How an admitted session is carried, so that one admission cannot serve
//! a crowd of bots:
//!
//! - Entry tokens are short-lived (the room's `entry_seconds`, a minute by
//!   default) and renewed while the session runs: by status calls and by
//!   every protected answer. A session that ended (left, booked, expired)
//!   gets no renewal, so a copied token dies within its lifetime.
//! - A session seen from more distinct client addresses than the room's
//!   `max_session_addresses` is ended, logged and counted.
//!
//! The rooms' settings a request needs are cached here, refreshed from the store about
//! every second (and at once by this instance's admin calls). Addresses are
//! counted per instance: behind a load balancer that spreads one session
//! over instances each sees a part, which only makes the rule gentler.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, RwLock};

use crate::limits::clients::ClientKey;
use queue::QueueStore;
use room::{Challenge, IdentityMode, RoomId, RoomSettings};

/// Sessions whose addresses are remembered at most; past it the oldest
/// half (by session end) is forgotten.
const MAX_WATCHED: usize = 200_000;

/// A room's session rules, as cached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SessionRules {
    /// Entry token lifetime, seconds.
    pub entry_seconds: u64,
    /// Most distinct client addresses one session may be seen from.
    pub max_addresses: usize,
    /// Whether joins name an account (the room's `identity`).
    pub identity: IdentityMode,
    /// What a join must show before it takes a place.
    pub challenge: Challenge,
}

impl Default for SessionRules {
    fn default() -> Self {
        let d = RoomSettings::default();
        SessionRules::of(&d)
    }
}

impl SessionRules {
    /// The rules a room's settings give.
    pub fn of(settings: &RoomSettings) -> SessionRules {
        SessionRules {
            entry_seconds: u64::from(settings.entry_seconds),
            max_addresses: settings.max_session_addresses as usize,
            identity: settings.identity,
            challenge: settings.challenge(),
        }
    }
}

/// When an entry token issued at `now` (unix seconds) for a session that
/// ends at `until_ms` expires: a lifetime from now, never past the session.
pub fn entry_expiry(now: u64, until_ms: u64, rules: SessionRules) -> u64 {
    now.saturating_add(rules.entry_seconds).min(until_ms / 1000)
}

/// What a session was seen from.
struct Seen {
    until_ms: u64,
    addresses: HashSet<ClientKey>,
}

/// What a room's pages show of its settings (its display settings, the
/// visit's length, the line's cap), as cached.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Look {
    /// The name visitors see; `None`: the room id.
    pub name: Option<String>,
    /// The pages' accent colour.
    pub color: Option<String>,
    /// A logo's path on the site.
    pub logo: Option<String>,
    /// The prices' currency (ISO 4217).
    pub currency: String,
    /// How long a visit lasts once let in, in seconds.
    pub session_seconds: u32,
    /// How many places the line ever gives.
    pub max_line: Option<u64>,
}

impl Look {
    /// The currency unless a room names one.
    pub const DEFAULT_CURRENCY: &str = "KRW";

    /// How `settings` say the room looks.
    pub fn of(settings: &RoomSettings) -> Look {
        Look {
            name: settings.display_name.clone(),
            color: settings.color.clone(),
            logo: settings.logo.clone(),
            currency: settings
                .currency
                .clone()
                .unwrap_or_else(|| Look::DEFAULT_CURRENCY.to_owned()),
            session_seconds: settings.session_seconds,
            max_line: settings.max_line,
        }
    }
}

/// The per-instance memory of rooms' rules and sessions' addresses.
#[derive(Default)]
pub struct Sessions {
    rules: RwLock<HashMap<RoomId, SessionRules>>,
    looks: RwLock<HashMap<RoomId, Arc<Look>>>,
    seen: Mutex<HashMap<(RoomId, u64), Seen>>,
}

/// What watching an address concluded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Watch {
    /// Within the room's limit.
    Fine,
    /// Seen from more addresses than allowed: end the session.
    Shared,
}

impl Sessions {
    /// The room's rules (the defaults until its settings were seen).
    pub fn rules(&self, room: &RoomId) -> SessionRules {
        self.known(room).unwrap_or_default()
    }

    /// The room's rules, read from the store the first time this instance
    /// meets the room (after that the refresh keeps them current).
    pub async fn rules_for(&self, room: &RoomId, queue: &dyn QueueStore) -> SessionRules {
        self.known_for(room, queue).await.unwrap_or_default()
    }

    /// The room's rules, when this instance knows the room.
    pub fn known(&self, room: &RoomId) -> Option<SessionRules> {
        self.rules.read().ok().and_then(|r| r.get(room).copied())
    }

    /// The room's rules, read from the store the first time this instance
    /// meets the room. Unlike [`Sessions::rules_for`] a store that cannot
    /// say is an error, never the default: a room that requires identities
    /// or a challenge must not let a join through unchecked.
    pub async fn known_for(
        &self,
        room: &RoomId,
        queue: &dyn QueueStore,
    ) -> Result<SessionRules, queue::StoreError> {
        if let Some(rules) = self.known(room) {
            return Ok(rules);
        }
        let figures = queue.figures(room).await?;
        self.learn(room, &figures.settings);
        Ok(SessionRules::of(&figures.settings))
    }

    /// Learns a room's settings.
    pub fn learn(&self, room: &RoomId, settings: &RoomSettings) {
        if let Ok(mut rules) = self.rules.write() {
            rules.insert(room.clone(), SessionRules::of(settings));
        }
        let look = Look::of(settings);
        if let Ok(mut looks) = self.looks.write()
            && looks.get(room).is_none_or(|l| **l != look)
        {
            looks.insert(room.clone(), Arc::new(look));
        }
    }

    /// How the room's pages look, read from the store the first time this
    /// instance meets the room (after that the refresh keeps it current).
    pub async fn look_for(
        &self,
        room: &RoomId,
        queue: &dyn QueueStore,
    ) -> Result<Arc<Look>, queue::StoreError> {
        if let Some(look) = self.looks.read().ok().and_then(|l| l.get(room).cloned()) {
            return Ok(look);
        }
        let figures = queue.figures(room).await?;
        self.learn(room, &figures.settings);
        Ok(Arc::new(Look::of(&figures.settings)))
    }

    /// Records that the session `seq` (ending at `until_ms`) was used from
    /// `client` at `now_ms`.
    pub fn watch(
        &self,
        room: &RoomId,
        seq: u64,
        until_ms: u64,
        client: ClientKey,
        now_ms: u64,
    ) -> Watch {
        let limit = self.rules(room).max_addresses;
        let Ok(mut seen) = self.seen.lock() else {
            return Watch::Fine;
        };
        if seen.len() >= MAX_WATCHED {
            seen.retain(|_, s| s.until_ms > now_ms);
            if seen.len() >= MAX_WATCHED {
                let mut ends: Vec<u64> = seen.values().map(|s| s.until_ms).collect();
                ends.sort_unstable();
                if let Some(&cut) = ends.get(ends.len() / 2) {
                    seen.retain(|_, s| s.until_ms > cut);
                }
            }
        }
        let entry = seen.entry((room.clone(), seq)).or_insert_with(|| Seen {
            until_ms,
            addresses: HashSet::new(),
        });
        entry.until_ms = until_ms;
        entry.addresses.insert(client);
        if entry.addresses.len() > limit {
            Watch::Shared
        } else {
            Watch::Fine
        }
    }

    /// Forgets a session (it ended).
    pub fn forget(&self, room: &RoomId, seq: u64) {
        if let Ok(mut seen) = self.seen.lock() {
            seen.remove(&(room.clone(), seq));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{IpAddr, Ipv4Addr};

    fn client(n: u8) -> ClientKey {
        ClientKey::of(IpAddr::V4(Ipv4Addr::new(203, 0, 113, n)), 64)
    }

    #[test]
    fn a_token_lives_a_lifetime_but_never_past_the_session() {
        let rules = SessionRules {
            entry_seconds: 60,
            max_addresses: 3,
            identity: IdentityMode::Off,
            challenge: Challenge::default(),
        };
        assert_eq!(entry_expiry(1_000, 2_000_000, rules), 1_060);
        assert_eq!(entry_expiry(1_000, 1_030_000, rules), 1_030);
    }

    #[test]
    fn a_session_from_too_many_addresses_is_shared() {
        let sessions = Sessions::default();
        let room = RoomId::parse("r").unwrap();
        for n in 1..=3 {
            assert_eq!(sessions.watch(&room, 7, 9_000, client(n), 0), Watch::Fine);
        }
        assert_eq!(
            sessions.watch(&room, 7, 9_000, client(2), 0),
            Watch::Fine,
            "again"
        );
        assert_eq!(
            sessions.watch(&room, 8, 9_000, client(9), 0),
            Watch::Fine,
            "another"
        );
        assert_eq!(sessions.watch(&room, 7, 9_000, client(4), 0), Watch::Shared);
        sessions.forget(&room, 7);
        assert_eq!(sessions.watch(&room, 7, 9_000, client(4), 0), Watch::Fine);
    }

    #[test]
    fn rules_follow_the_settings() {
        let sessions = Sessions::default();
        let room = RoomId::parse("r").unwrap();
        assert_eq!(sessions.rules(&room).entry_seconds, 60);
        let settings = RoomSettings {
            entry_seconds: 15,
            max_session_addresses: 1,
            ..RoomSettings::default()
        };
        sessions.learn(&room, &settings);
        assert_eq!(
            sessions.rules(&room),
            SessionRules {
                entry_seconds: 15,
                max_addresses: 1,
                identity: IdentityMode::Off,
                challenge: RoomSettings::default().challenge(),
            }
        );
    }
}
