//! Rooms: the ground floor both the queue and booking stand on.
//!
//! Plain data with its validation rules, and the clock; nothing here knows
//! the line, the database, HTTP or the store.
//!
//! - [`id`]: the room id ([`RoomId`]), checked once where it enters, and
//!   [`RoomMap`], the map keyed by it.
//! - [`settings`]: a room's settings ([`RoomSettings`]), its state
//!   ([`RoomState`]), how it picks whom to admit ([`QueueingMethod`]), what
//!   a join must show ([`Challenge`]) and its scheduled [`Window`]s.
//! - [`account`]: an account of the operator's site as it is kept: a keyed
//!   hash ([`AccountHash`]), never the raw id.
//! - [`clock`]: the one clock handlers and the promoter read; tests pin it.

pub mod account;
pub mod clock;
pub mod id;
pub mod settings;

pub use account::AccountHash;
pub use id::{RoomId, RoomMap};
pub use settings::{
    Challenge, ChallengeFail, ChallengeKind, IdentityMode, QueueingMethod, RoomSettings, RoomState,
    SettingsError, Window, unix_ms,
};
