//! Accounts of the operator's site: the identity token a join carries,
//! checked with the operator's keys, and the keyed hash of the account it
//! names, which is all the waiting room ever keeps of it.

use room::{AccountHash, IdentityMode, RoomId};
use token::{AccountHasher, IdentityKeys};

use crate::error::ApiError;

/// The cookie the operator's site sets for its own domain; the waiting
/// page's same-site join carries it.
pub const IDENTITY_COOKIE: &str = "wr_identity";

/// The header apps send the identity token in.
pub const IDENTITY_HEADER: &str = "waiting-room-identity";

/// The operator's identity keys and the account hasher.
pub struct Identities {
    /// `None`: the origin was given no identity key.
    keys: Option<IdentityKeys>,
    hasher: AccountHasher,
}

impl Identities {
    /// Checks tokens with `keys` and hashes accounts with `hash_key`.
    pub fn new(keys: Option<IdentityKeys>, hash_key: &[u8]) -> Identities {
        Identities {
            keys,
            hasher: AccountHasher::new(hash_key),
        }
    }

    /// Whether any key was given: a room cannot turn identity on without.
    pub fn has_keys(&self) -> bool {
        self.keys.as_ref().is_some_and(|k| !k.is_empty())
    }

    /// The account a join names in a room of `mode`: `None` where the room
    /// does not read identities or an optional one was not given. A token
    /// that does not verify is refused even where it is optional, and a
    /// required one that is missing is refused; neither changes anything.
    pub fn account(
        &self,
        mode: IdentityMode,
        presented: Option<&str>,
        room: &RoomId,
        now_secs: u64,
    ) -> Result<Option<AccountHash>, ApiError> {
        match (mode, presented) {
            (IdentityMode::Off, _) | (IdentityMode::Optional, None) => Ok(None),
            (IdentityMode::Required, None) => Err(ApiError::IdentityRequired),
            (_, Some(jwt)) => {
                // A room turns identity on only with keys (the admin API and
                // the rooms file refuse it otherwise).
                let Some(keys) = &self.keys else {
                    return Err(ApiError::InvalidIdentity(
                        "this origin has no identity keys".into(),
                    ));
                };
                let identity = keys
                    .verify(jwt, room.as_str(), now_secs)
                    .map_err(|e| ApiError::InvalidIdentity(e.to_string()))?;
                Ok(Some(AccountHash(
                    self.hasher.hash(room.as_str(), &identity.sub),
                )))
            }
        }
    }
}
