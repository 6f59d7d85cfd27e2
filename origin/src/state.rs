//! What every handler shares: the queue's store, the clock, the signing
//! keys, the admin key, the Turnstile verifier and the abuse limits. Built
//! once at start.

use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use token::{Keyring, Secret};

use crate::history::History;
use crate::holds::Holds;
use crate::identity::Identities;
use crate::latency::Latency;
use crate::limits::clients::ClientPolicy;
use crate::limits::map_loads::MapLoads;
use crate::limits::sessions::SessionLimits;
use crate::limits::strikes::Strikes;
use crate::outlook::Outlooks;
use crate::sessions::Sessions;
use crate::turnstile::Turnstile;
use booking::BookingStore;
use queue::QueueStore;
use queue::joins::{DEFAULT_JOIN_WINDOW, Joins};
use queue::snapshot::Snapshots;
use room::clock::Clock;

/// The application state handed to every handler: one pointer to
/// [`Shared`], which it reads through (`state.queue`, ...). The router
/// clones the state for every extractor and middleware that asks for it,
/// several times a request, so a clone is one reference count, not one per
/// field; the `with_*` setters write through `Arc::make_mut` (they run
/// before the state is shared).
#[derive(Clone)]
pub struct AppState(Arc<Shared>);

/// What [`AppState`] points to.
#[derive(Clone)]
pub struct Shared {
    /// The line (Redis or embedded).
    pub queue: Arc<dyn QueueStore>,
    /// What handlers and the promoter take "now" from.
    pub clock: Clock,
    /// The sale: performances, seats, holds, bookings; `None`: this origin
    /// sells nothing (booking routes are 404).
    pub booking: Option<Arc<BookingStore>>,
    /// Rooms' session rules and sessions' addresses (entry renewal, shared
    /// sessions).
    pub sessions: Arc<Sessions>,
    /// Booking's recent latency per room, which adaptive admission follows.
    pub latency: Arc<Latency>,
    /// Origins besides the site's own whose pages may change state
    /// (`scheme://host[:port]`, from `--allowed-origins`).
    pub allowed_origins: Arc<[String]>,
    /// Signs tickets and entry tokens (first key) and verifies them (all keys).
    pub keys: Arc<Keyring>,
    /// The operator's identity keys and the account hasher (rooms whose
    /// `identity` is on).
    pub identities: Arc<Identities>,
    /// Checks Turnstile tokens (rooms whose `challenge` is `turnstile`).
    pub turnstile: Arc<Turnstile>,
    /// The admin API's key; `None`: the admin API refuses every call.
    pub admin_key: Option<Arc<Secret>>,
    /// Who a client is and how much it may do (join rate, places per address).
    pub clients: Arc<ClientPolicy>,
    /// Refused admin calls per client address, which throttle key guessing.
    pub admin_strikes: Arc<Strikes>,
    /// Whether cookies carry `Secure` (from `--cookie-secure`, never from
    /// what a request says).
    pub secure_cookies: bool,
    /// The bearer key `/metrics` asks for; `None`: open.
    pub metrics_key: Option<Arc<Secret>>,
    /// Every room's recent figures, for the operator's console.
    pub history: Arc<History>,
    /// Joins, gathered into batches per room on their way to `queue`.
    pub joins: Joins,
    /// Per-room status snapshots (`--status-snapshot`); off unless turned on.
    pub snapshots: Arc<Snapshots>,
    /// Status polls held while a sale is on (`Prefer: wait`), and their cap.
    pub holds: Arc<Holds>,
    /// Whether `/` lists the rooms (`--lobby`).
    pub lobby: bool,
    /// What one session may do how often (booking writes).
    pub session_limits: Arc<SessionLimits>,
    /// Seat map loads per session, and their limit.
    pub seat_map_loads: Arc<MapLoads>,
    /// Every selling room's outlook figures, kept by the sale loop.
    pub outlooks: Arc<Outlooks>,
}

impl AppState {
    /// Builds the state from its parts, with no admin key, no abuse limits,
    /// an open `/metrics`, and cookies without `Secure` (plain-http loopback).
    pub fn new(queue: Arc<dyn QueueStore>, keys: Keyring) -> AppState {
        AppState(Arc::new(Shared {
            joins: Joins::new(queue.clone(), DEFAULT_JOIN_WINDOW),
            queue,
            clock: Clock::System,
            booking: None,
            latency: Arc::new(Latency::default()),
            sessions: Arc::new(Sessions::default()),
            allowed_origins: Arc::from(Vec::new()),
            keys: Arc::new(keys),
            // No identity keys, and accounts hashed with a key of this
            // process's own until the start-up sets the operator's.
            identities: Arc::new(Identities::new(None, &rand::random::<[u8; 32]>())),
            turnstile: Arc::new(Turnstile::unconfigured()),
            admin_key: None,
            clients: Arc::new(ClientPolicy::default()),
            admin_strikes: Arc::new(Strikes::default()),
            secure_cookies: false,
            metrics_key: None,
            history: Arc::new(History::default()),
            snapshots: Arc::new(Snapshots::off()),
            holds: Arc::new(Holds::default()),
            lobby: false,
            session_limits: Arc::new(SessionLimits::default()),
            seat_map_loads: Arc::new(MapLoads::default()),
            outlooks: Arc::new(Outlooks::default()),
        }))
    }

    /// Turns the admin API on with this key.
    pub fn with_admin_key(mut self, key: &str) -> AppState {
        self.admin_key = Some(Arc::new(Secret::new(key)));
        self
    }

    /// Checks identity tokens with `identities`.
    pub fn with_identities(mut self, identities: Identities) -> AppState {
        self.identities = Arc::new(identities);
        self
    }

    /// Checks Turnstile tokens with `turnstile`.
    pub fn with_turnstile(mut self, turnstile: Turnstile) -> AppState {
        self.turnstile = Arc::new(turnstile);
        self
    }

    /// Reads time from `clock` (tests pin it).
    pub fn with_clock(mut self, clock: Clock) -> AppState {
        self.clock = clock;
        self
    }

    /// Sells through `booking`.
    pub fn with_booking(mut self, booking: Arc<BookingStore>) -> AppState {
        self.booking = Some(booking);
        self
    }

    /// Lets pages of these origins change state too.
    pub fn with_allowed_origins(mut self, origins: Vec<String>) -> AppState {
        self.allowed_origins = Arc::from(origins);
        self
    }

    /// Marks cookies `Secure` (`true`) or not.
    pub fn with_secure_cookies(mut self, secure: bool) -> AppState {
        self.secure_cookies = secure;
        self
    }

    /// Asks `/metrics` callers for this bearer key.
    pub fn with_metrics_key(mut self, key: &str) -> AppState {
        self.metrics_key = Some(Arc::new(Secret::new(key)));
        self
    }

    /// Batches joins within `window` (zero: every join goes alone).
    pub fn with_join_window(mut self, window: std::time::Duration) -> AppState {
        self.joins = Joins::new(self.queue.clone(), window);
        self
    }

    /// Answers far-back status polls from per-room snapshots refreshed every
    /// `tick` (the promoter's interval).
    pub fn with_status_snapshots(mut self, tick: std::time::Duration) -> AppState {
        self.snapshots = Arc::new(Snapshots::new(tick));
        self
    }

    /// Holds at most `max` status polls at once (0: none).
    pub fn with_max_held_polls(mut self, max: usize) -> AppState {
        self.holds = Arc::new(Holds::new(max));
        self
    }

    /// Lists the rooms at `/` (`true`) or not.
    pub fn with_lobby(mut self, lobby: bool) -> AppState {
        self.lobby = lobby;
        self
    }

    /// Limits each session's booking writes to these rather than the defaults.
    pub fn with_session_limits(mut self, limits: SessionLimits) -> AppState {
        self.session_limits = Arc::new(limits);
        self
    }

    /// Lets one session load the seat map `per_minute` times a minute (in
    /// bursts; 0: no limit).
    pub fn with_seat_map_per_minute(mut self, per_minute: u32) -> AppState {
        self.seat_map_loads = Arc::new(MapLoads::new(per_minute));
        self
    }

    /// Sets the abuse limits and the edge secret.
    pub fn with_clients(mut self, clients: ClientPolicy) -> AppState {
        self.clients = Arc::new(clients);
        self
    }
}

impl Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

impl DerefMut for AppState {
    /// Copies the fields first if the state is already shared (a setter
    /// called on a clone changes that clone only).
    fn deref_mut(&mut self) -> &mut Shared {
        Arc::make_mut(&mut self.0)
    }
}
