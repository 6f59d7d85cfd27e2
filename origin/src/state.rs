//! What every handler shares: the queue's store and the signing keys. Built
//! once at start.

use std::sync::Arc;

use token::Keyring;

use crate::queue::QueueStore;

/// The application state handed to every handler.
#[derive(Clone)]
pub struct AppState {
    /// The line (Redis or embedded).
    pub store: Arc<dyn QueueStore>,
    /// Signs tickets and entry tokens (first key) and verifies them (all keys).
    pub keys: Arc<Keyring>,
}

impl AppState {
    /// Builds the state from its parts.
    pub fn new(store: Arc<dyn QueueStore>, keys: Keyring) -> AppState {
        AppState {
            store,
            keys: Arc::new(keys),
        }
    }
}
