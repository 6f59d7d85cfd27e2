//! A queue store on a clock the benchmark steps itself, embedded or on a
//! Redis the caller names, for `draw_bench` and `eta_bench`.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use clap::ValueEnum;
use origin::queue::memory::MemoryStore;
use origin::queue::redis::{RedisConfig, RedisStore};
use origin::queue::{QueueStore, StoreError};

/// Which store a run uses: `Memory`, the embedded in-process store, or
/// `Redis`, a Redis server with the run's keys under their own prefix.
// The variants go without doc comments of their own: clap would print them
// in --help.
#[allow(missing_docs)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum StoreKind {
    Memory,
    Redis,
}

/// A store of `kind` whose time is `clock` (unix ms). With Redis: the one
/// at `url`, every key under `prefix`, each call allowed `timeout`.
pub fn pinned_store(
    kind: StoreKind,
    url: &str,
    prefix: &str,
    clock: Arc<AtomicU64>,
    timeout: Duration,
) -> Result<Arc<dyn QueueStore>, StoreError> {
    Ok(match kind {
        StoreKind::Memory => Arc::new(MemoryStore::with_fixed_clock(clock)),
        StoreKind::Redis => Arc::new(
            RedisStore::connect(&RedisConfig {
                url: url.to_owned(),
                prefix: prefix.to_owned(),
                timeout,
                cluster: false,
            })?
            .with_fixed_clock(clock),
        ),
    })
}

/// Deletes every key under the run's prefix.
pub async fn delete_keys(url: &str, prefix: &str) -> redis::RedisResult<()> {
    let client = redis::Client::open(url)?;
    let mut conn = client.get_multiplexed_async_connection().await?;
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{prefix}*"))
        .query_async(&mut conn)
        .await?;
    if !keys.is_empty() {
        redis::cmd("DEL")
            .arg(keys)
            .query_async::<()>(&mut conn)
            .await?;
    }
    Ok(())
}
