//! The waiting room's origin: the queue API, the promoter that admits
//! visitors, and the signed tickets and entry tokens.
//!
//! # Layout
//! - [`config`]: every operator setting (clap flags with `WR_` variables).
//! - [`room`]: room ids, settings and their validation; the `--rooms` file.
//! - [`queue`]: the line: the store trait, the promoter, pacing (ETA and poll
//!   interval) and the Redis store with its Lua scripts (`queue/redis/lua`).
//! - [`http`]: the router, one module per resource (`queue`, `health`), the
//!   extractors, and the entry check protected routes use.
//! - [`error`]: the one error type and its JSON shape.
//! - [`state`]: what handlers share.
//!
//! The token format itself lives in the `token` crate, shared with the edge.

pub mod config;
pub mod error;
pub mod http;
pub mod queue;
pub mod room;
pub mod state;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use token::Keyring;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::config::Config;
use crate::queue::QueueStore;
use crate::queue::redis::{RedisConfig, RedisStore};
use crate::state::AppState;

/// Start-up failed; the message says what to fix.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// A flag or file has a bad value.
    #[error("configuration: {0}")]
    Config(String),
    /// The store refused a start-up step.
    #[error("store: {0}")]
    Store(#[from] queue::StoreError),
}

/// The signing keys from `--signing-keys`, or a random one for this process.
pub fn keyring(config: &Config) -> Result<Keyring, StartError> {
    match &config.signing_keys {
        Some(spec) => {
            Keyring::parse(spec).map_err(|e| StartError::Config(format!("--signing-keys: {e}")))
        }
        None => {
            tracing::warn!(
                "no --signing-keys: signing with a random key; tokens die with this process \
                 and other instances (and the edge) cannot verify them"
            );
            let secret: [u8; 32] = rand::random();
            Keyring::new(vec![("dev".to_owned(), secret.to_vec())])
                .map_err(|e| StartError::Config(e.to_string()))
        }
    }
}

/// The queue's store from the configuration.
pub fn store(config: &Config) -> Result<Arc<dyn QueueStore>, StartError> {
    let Some(url) = &config.redis_url else {
        return Err(StartError::Config(
            "--redis-url is required (e.g. redis://127.0.0.1:6379)".into(),
        ));
    };
    let store = RedisStore::connect(&RedisConfig {
        url: url.clone(),
        prefix: config.redis_prefix.clone(),
        timeout: config.redis_timeout(),
        cluster: config.redis_cluster,
    })?;
    Ok(Arc::new(store))
}

/// Creates or updates the rooms of the `--rooms` file.
pub async fn apply_rooms_file(config: &Config, store: &dyn QueueStore) -> Result<(), StartError> {
    let Some(path) = &config.rooms else {
        return Ok(());
    };
    let text = std::fs::read_to_string(path)
        .map_err(|e| StartError::Config(format!("--rooms {}: {e}", path.display())))?;
    let specs = room::parse_rooms_file(&text)
        .map_err(|e| StartError::Config(format!("--rooms {}: {e}", path.display())))?;
    for spec in &specs {
        store.put_room(&spec.id, &spec.settings).await?;
        tracing::info!(room = %spec.id, "room configured");
    }
    Ok(())
}

/// Serves the app and runs the promoter until `shutdown` completes, then
/// lets in-flight requests finish and stops the promoter cleanly.
pub async fn run(
    state: AppState,
    listener: TcpListener,
    tick: Duration,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let cancel = CancellationToken::new();
    let tasks = TaskTracker::new();
    tasks.spawn(queue::promoter::run(
        state.store.clone(),
        tick,
        cancel.clone(),
    ));
    let stop = cancel.clone();
    let served = http::serve(listener, http::app(state), async move {
        shutdown.await;
        stop.cancel();
    })
    .await;
    cancel.cancel();
    tasks.close();
    tasks.wait().await;
    served
}
