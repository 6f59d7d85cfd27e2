//! The Redis store: every multi-key change is one Lua script (`lua/*.lua`),
//! so each operation is one atomic step whatever the number of origin
//! instances. This module only assembles keys and arguments and parses
//! replies; the queue's rules live in the scripts.

mod keys;
mod reply;
mod scripts;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{AsyncCommands, Script, Value};

pub use keys::RoomKeys;
use scripts::Scripts;

use crate::queue::{
    PREQUEUE_SPAN, PlaceLimit, QueueStore, RoomFigures, Snapshot, StoreError, TickReport,
};
use crate::room::{RoomId, RoomSettings, RoomState};

/// Most waiters dropped for not polling in one tick of one room.
const MAX_DROPS_PER_TICK: u32 = 10_000;
/// Most visitors admitted in one tick of one room (bounds the script's time;
/// at 10 ticks a second that is still 200,000 a second).
const MAX_ADMITS_PER_TICK: u32 = 20_000;

/// How to reach Redis.
#[derive(Clone, Debug)]
pub struct RedisConfig {
    /// `redis://host:port/db`
    pub url: String,
    /// Put before every key (tests give each test its own); no braces.
    pub prefix: String,
    /// How long one command may take before the request fails with 503.
    pub timeout: Duration,
}

/// The queue on one Redis server.
pub struct RedisStore {
    conn: ConnectionManager,
    prefix: String,
    scripts: Scripts,
    clock: Option<Arc<AtomicU64>>,
}

impl RedisStore {
    /// Connects lazily: the origin starts even when Redis is down, answers
    /// 503 meanwhile, and recovers on its own when Redis comes back.
    pub fn connect(config: &RedisConfig) -> Result<RedisStore, StoreError> {
        if config.prefix.contains(['{', '}']) {
            return Err(StoreError::Protocol(
                "the key prefix must not contain braces".into(),
            ));
        }
        let client = redis::Client::open(config.url.as_str())
            .map_err(|e| StoreError::Unavailable(format!("bad Redis URL: {e}")))?;
        let manager_config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(config.timeout))
            .set_response_timeout(Some(config.timeout))
            .set_number_of_retries(1)
            .set_max_delay(Duration::from_secs(2));
        let conn =
            ConnectionManager::new_lazy_with_config(client, manager_config).map_err(unavailable)?;
        Ok(RedisStore {
            conn,
            prefix: config.prefix.clone(),
            scripts: Scripts::new(),
            clock: None,
        })
    }

    /// Pins the scripts' clock to `clock` (unix ms) instead of Redis `TIME`,
    /// so a test can step time and compare this store with the embedded one.
    /// Production never calls this.
    pub fn with_fixed_clock(mut self, clock: Arc<AtomicU64>) -> RedisStore {
        self.clock = Some(clock);
        self
    }

    fn keys(&self, room: &RoomId) -> RoomKeys {
        RoomKeys::new(&self.prefix, room)
    }

    async fn run(
        &self,
        script: &Script,
        room: &RoomId,
        args: &[&str],
    ) -> Result<Value, StoreError> {
        let keys = self.keys(room);
        let mut call = script.prepare_invoke();
        for key in keys.all() {
            call.key(key);
        }
        match &self.clock {
            Some(ms) => call.arg(ms.load(Ordering::SeqCst)),
            None => call.arg(""),
        };
        for arg in args {
            call.arg(*arg);
        }
        let mut conn = self.conn.clone();
        call.invoke_async(&mut conn).await.map_err(unavailable)
    }
}

/// The windows as the scripts read them: unix ms bounds and short names,
/// fields a window leaves out omitted.
fn windows_for_scripts(s: &RoomSettings) -> String {
    let ms = |t: time::OffsetDateTime| (t.unix_timestamp_nanos() / 1_000_000) as i64;
    let windows: Vec<serde_json::Value> = s
        .windows
        .iter()
        .map(|w| {
            let mut o = serde_json::Map::new();
            o.insert("s".into(), ms(w.starts_at).into());
            o.insert("e".into(), ms(w.ends_at).into());
            if let Some(c) = w.capacity {
                o.insert("c".into(), c.into());
            }
            if let Some(r) = w.admit_per_second {
                o.insert("r".into(), r.into());
            }
            if let Some(x) = w.session_seconds {
                o.insert("x".into(), (u64::from(x) * 1000).into());
            }
            if let Some(m) = w.method {
                o.insert("m".into(), m.as_str().into());
            }
            serde_json::Value::Object(o)
        })
        .collect();
    serde_json::Value::Array(windows).to_string()
}

fn unavailable(e: redis::RedisError) -> StoreError {
    if e.is_io_error() || e.is_timeout() || e.is_connection_dropped() || e.is_connection_refusal() {
        StoreError::Unavailable(e.to_string())
    } else {
        StoreError::Protocol(e.to_string())
    }
}

#[async_trait]
impl QueueStore for RedisStore {
    async fn put_room(&self, room: &RoomId, s: &RoomSettings) -> Result<(), StoreError> {
        let opens_at = s.opens_at_ms().map_or(-1, |ms| ms as i64);
        let as_given = serde_json::to_string(s).map_err(|e| StoreError::Protocol(e.to_string()))?;
        let args = [
            s.capacity.to_string(),
            s.admit_per_second.to_string(),
            (u64::from(s.session_seconds) * 1000).to_string(),
            (u64::from(s.abandon_seconds) * 1000).to_string(),
            opens_at.to_string(),
            s.max_line.unwrap_or(0).to_string(),
            s.method.as_str().to_owned(),
            windows_for_scripts(s),
            as_given,
        ];
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        self.run(&self.scripts.put_room, room, &args).await?;
        let mut conn = self.conn.clone();
        let _: i64 = conn
            .sadd(keys::rooms_index(&self.prefix), room.as_str())
            .await
            .map_err(unavailable)?;
        Ok(())
    }

    async fn set_state(&self, room: &RoomId, state: RoomState) -> Result<(), StoreError> {
        let reply = self
            .run(&self.scripts.set_state, room, &[state.as_str()])
            .await?;
        reply::counter(reply)?
            .ok_or(StoreError::UnknownRoom)
            .map(drop)
    }

    async fn rooms(&self) -> Result<Vec<RoomId>, StoreError> {
        let mut conn = self.conn.clone();
        let ids: Vec<String> = conn
            .smembers(keys::rooms_index(&self.prefix))
            .await
            .map_err(unavailable)?;
        let mut rooms: Vec<RoomId> = ids.iter().filter_map(|id| RoomId::parse(id)).collect();
        rooms.sort();
        Ok(rooms)
    }

    async fn figures(&self, room: &RoomId) -> Result<RoomFigures, StoreError> {
        reply::figures(self.run(&self.scripts.figures, room, &[]).await?)
    }

    async fn join(
        &self,
        room: &RoomId,
        existing: Option<u64>,
        draw: u64,
        limit: Option<&PlaceLimit>,
    ) -> Result<Snapshot, StoreError> {
        let existing = existing.map(|s| s.to_string()).unwrap_or_default();
        let draw = (draw % PREQUEUE_SPAN).to_string();
        let span = PREQUEUE_SPAN.to_string();
        let (holder, max) = limit.map_or(("", 0), |l| (l.holder.as_str(), l.max));
        let max = max.to_string();
        reply::snapshot(
            self.run(
                &self.scripts.join,
                room,
                &[&existing, &draw, &span, holder, &max],
            )
            .await?,
        )
    }

    async fn status(&self, room: &RoomId, seq: u64) -> Result<Snapshot, StoreError> {
        reply::snapshot(
            self.run(&self.scripts.status, room, &[&seq.to_string()])
                .await?,
        )
    }

    async fn leave(&self, room: &RoomId, seq: u64) -> Result<bool, StoreError> {
        let reply = self
            .run(&self.scripts.leave, room, &[&seq.to_string()])
            .await?;
        Ok(reply::counter(reply)?.ok_or(StoreError::UnknownRoom)? > 0)
    }

    async fn session_active(&self, room: &RoomId, seq: u64) -> Result<bool, StoreError> {
        let reply = self
            .run(&self.scripts.session, room, &[&seq.to_string()])
            .await?;
        Ok(reply::counter(reply)?.ok_or(StoreError::UnknownRoom)? == 1)
    }

    async fn tick(&self, room: &RoomId) -> Result<TickReport, StoreError> {
        let drops = MAX_DROPS_PER_TICK.to_string();
        let admits = MAX_ADMITS_PER_TICK.to_string();
        let span = PREQUEUE_SPAN.to_string();
        let reply = self
            .run(&self.scripts.tick, room, &[&drops, &admits, &span])
            .await?;
        reply::tick(reply)?.ok_or(StoreError::UnknownRoom)
    }

    async fn ping(&self) -> Result<(), StoreError> {
        let mut conn = self.conn.clone();
        redis::cmd("PING")
            .query_async::<String>(&mut conn)
            .await
            .map(drop)
            .map_err(unavailable)
    }
}
