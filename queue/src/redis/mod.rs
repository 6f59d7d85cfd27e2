//! The Redis store: every multi-key change is one Lua script (`lua/*.lua`),
//! so each operation is one atomic step whatever the number of origin
//! instances. This module only assembles keys and arguments and names the
//! type each reply decodes to (`reply`); the queue's rules live in the
//! scripts.
//!
//! The same code runs on one Redis server or on a Redis Cluster (`conn`):
//! every script touches only its room's keys, which share the hash tag
//! `{room}` and so one slot, and the room index `wr:rooms` is only ever read
//! or written by single-key commands.

mod conn;
mod keys;
mod reply;
mod scripts;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use redis::{AsyncCommands, ErrorKind, FromRedisValue, RedisError, Script, ServerErrorKind};

use conn::Conn;
pub use keys::RoomKeys;
use reply::{Counter, DrawSeen, Joins, Observed, PendingDraw, Reply, Ticked};
use scripts::Scripts;

use crate::draw::{self, DRAW_CHUNK, DrawView};
use crate::store::{
    DEPARTURES_KEPT_MS, JoinRequest, Joined, MAX_ADMITS_PER_TICK, MAX_DROPS_PER_TICK, Observation,
    PREQUEUE_SPAN, Proof, QueueStore, RoomFigures, SaleSignal, Snapshot, StoreError, TickReport,
    Watch,
};
use room::{RoomId, RoomSettings, RoomState, unix_ms};

/// How to reach Redis.
#[derive(Clone, Debug)]
pub struct RedisConfig {
    /// `redis://host:port/db`; with `cluster`, one or more seed nodes of the
    /// cluster, comma-separated.
    pub url: String,
    /// Put before every key (tests give each test its own); no braces.
    pub prefix: String,
    /// How long one store call may take before the request fails with 503.
    pub timeout: Duration,
    /// Talk to a Redis Cluster rather than one server.
    pub cluster: bool,
}

/// The queue on one Redis server or a Redis Cluster. Cheap to clone (a
/// clone shares the connection).
#[derive(Clone)]
pub struct RedisStore {
    conn: Conn,
    prefix: String,
    scripts: Arc<Scripts>,
    timeout: Duration,
    clock: Option<Arc<AtomicU64>>,
    /// Every new draw seed, when a test pins it; random otherwise.
    fixed_seed: Option<draw::Seed>,
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
        let urls: Vec<&str> = config
            .url
            .split(',')
            .map(str::trim)
            .filter(|u| !u.is_empty())
            .collect();
        let bad_url = |e: RedisError| StoreError::Unavailable(format!("bad Redis URL: {e}"));
        let conn = match (config.cluster, urls.as_slice()) {
            (_, []) => return Err(StoreError::Unavailable("no Redis URL".into())),
            (false, [url]) => Conn::single(url, config.timeout).map_err(bad_url)?,
            (false, _) => {
                return Err(StoreError::Unavailable(
                    "several Redis URLs are only accepted for a cluster (--redis-cluster)".into(),
                ));
            }
            (true, seeds) => Conn::cluster(seeds, config.timeout).map_err(bad_url)?,
        };
        Ok(RedisStore {
            conn,
            prefix: config.prefix.clone(),
            scripts: Arc::new(Scripts::new()),
            timeout: config.timeout,
            clock: None,
            fixed_seed: None,
        })
    }

    /// Pins the scripts' clock to `clock` (unix ms) instead of Redis `TIME`,
    /// so a test can step time and compare this store with the embedded one.
    /// Production never calls this.
    pub fn with_fixed_clock(mut self, clock: Arc<AtomicU64>) -> RedisStore {
        self.clock = Some(clock);
        self
    }

    /// Gives every new draw seed as `seed`, so a test can compare this
    /// store's draws with the embedded one's. Production never calls this.
    pub fn with_fixed_seed(mut self, seed: draw::Seed) -> RedisStore {
        self.fixed_seed = Some(seed);
        self
    }

    /// A seed for a room that may need a new one (hex, as the scripts take it).
    fn fresh_seed(&self) -> String {
        draw::to_hex(&self.fixed_seed.unwrap_or_else(draw::new_seed))
    }

    fn keys(&self, room: &RoomId) -> RoomKeys {
        RoomKeys::new(&self.prefix, room)
    }

    /// Runs one script on `room`'s keys with the clock argument first and
    /// decodes its reply as `T`. A script's unknown-room answer becomes
    /// `StoreError::UnknownRoom` here ([`Reply`]), so no decoder has to look
    /// for it.
    async fn run<T: FromRedisValue>(
        &self,
        script: &Script,
        room: &RoomId,
        args: &[&str],
    ) -> Result<T, StoreError> {
        self.run_with(script, room, |call| {
            for arg in args {
                call.arg(*arg);
            }
        })
        .await
    }

    /// [`RedisStore::run`], the arguments after the clock written by `args`
    /// straight into the command (numbers without a `String` each: a batch
    /// of joins has four arguments a join).
    async fn run_with<T: FromRedisValue>(
        &self,
        script: &Script,
        room: &RoomId,
        args: impl FnOnce(&mut redis::ScriptInvocation<'_>),
    ) -> Result<T, StoreError> {
        let keys = self.keys(room);
        let mut call = script.prepare_invoke();
        for key in keys.all() {
            call.key(key);
        }
        match &self.clock {
            Some(ms) => call.arg(ms.load(Ordering::SeqCst)),
            None => call.arg(""),
        };
        args(&mut call);
        let mut conn = self.conn.clone();
        // EVALSHA, and after a NOSCRIPT (a restarted or new node) SCRIPT LOAD
        // and EVALSHA again; on a cluster SCRIPT LOAD goes to every node.
        let reply = self
            .within(call.invoke_async::<Reply<T>>(&mut conn))
            .await?;
        reply.0
    }

    /// Runs one store call under the store's deadline. The client's own
    /// timeouts bound each command, not a call that first waits for a
    /// reconnection, so without this a request could hang on a stopped
    /// Redis for several timeouts.
    async fn within<T>(
        &self,
        call: impl Future<Output = redis::RedisResult<T>>,
    ) -> Result<T, StoreError> {
        match tokio::time::timeout(self.timeout, call).await {
            Ok(result) => result.map_err(store_error),
            Err(_) => Err(StoreError::Unavailable(format!(
                "no answer within {} ms",
                self.timeout.as_millis()
            ))),
        }
    }
}

/// How long a tick waits for the draw it started before it returns.
const DRAW_WAIT: Duration = Duration::from_millis(250);

impl RedisStore {
    /// Applies a room's pre-queue draw: the draw values computed here (on a
    /// blocking thread), the scores written in chunks of [`DRAW_CHUNK`],
    /// then the draw marked applied.
    async fn apply_draw(&self, room: &RoomId, d: PendingDraw) -> Result<(), StoreError> {
        let started = std::time::Instant::now();
        let (seed, lo, hi, base) = (d.seed, d.lo, d.hi, d.base);
        let scores = tokio::task::spawn_blocking(move || draw::drawn_scores(&seed, base, lo, hi))
            .await
            .map_err(|e| StoreError::Protocol(format!("the draw's thread failed: {e}")))?;
        // Plain ZADDs on the waiting set (one key: its slot on a cluster):
        // XX keeps members who left out, LT never moves a member up from a
        // drawn score, and the scores depend on nothing but the seed and the
        // member, so any instance writing them, twice or late, writes the
        // same. Each holds Redis for a few ms.
        let waiting = self.keys(room).waiting;
        for chunk in scores.chunks(DRAW_CHUNK) {
            let mut zadd = redis::cmd("ZADD");
            zadd.arg(&waiting).arg("XX").arg("LT");
            for &(member, score) in chunk {
                zadd.arg(score).arg(member);
            }
            let mut conn = self.conn.clone();
            let _: i64 = self.within(zadd.query_async(&mut conn)).await?;
        }
        // Then the draw is marked applied, if the room still has this seed.
        let seed_hex = draw::to_hex(&d.seed);
        let hi = d.hi.to_string();
        let _: Counter = self
            .run(&self.scripts.draw, room, &["apply", &seed_hex, &hi, "1"])
            .await?;
        tracing::info!(%room, places = scores.len(), ms = started.elapsed().as_millis() as u64, "the pre-queue draw is applied");
        Ok(())
    }
}

/// The minute a seed expiring at `expires_at_ms` expires in: the one its
/// solution's `sol:<base>:<minute>` hash is named by (the prelude).
fn seed_minute(expires_at_ms: u64) -> u64 {
    expires_at_ms / 60_000
}

/// Each join's kind as `join.lua` reads the batch (its ARGV[3]): `p` plain,
/// `a` with an account, `w` with a solution (and its seed's minute), `s`
/// with a solution whose seed expires in the minute of the last `w`'s (the
/// minute not sent again), `f` any other. A solution shown a second time
/// in the batch goes as `f`, so the script's short way needs no check
/// against the batch's own solutions.
fn join_kinds(joins: &[JoinRequest]) -> Vec<u8> {
    // Which joins show a solution an earlier join showed, found by sorting:
    // hashing each solution (SipHash) cost a pow join 550 instructions
    // (callgrind, `request_cost`), more than the sort of a batch.
    let mut solutions: Vec<([u8; 8], usize)> = joins
        .iter()
        .enumerate()
        .filter_map(|(i, join)| match join.proof {
            Proof::Solved { key, .. } => Some((key, i)),
            _ => None,
        })
        .collect();
    solutions.sort_unstable();
    let mut repeats = vec![false; joins.len()];
    for pair in solutions.windows(2) {
        if let [(earlier, _), (key, i)] = pair
            && earlier == key
            && let Some(repeat) = repeats.get_mut(*i)
        {
            *repeat = true;
        }
    }
    let mut minute = None;
    joins
        .iter()
        .zip(repeats)
        .map(|(join, repeat)| {
            let solved = match join.proof {
                Proof::Solved { expires_at_ms, .. } => Some(seed_minute(expires_at_ms)),
                _ => None,
            };
            if join.existing.is_some() || join.limit.is_some() || repeat {
                return b'f';
            }
            match (join.account.is_some(), join.proof, solved) {
                (false, Proof::NotAsked, _) => b'p',
                (true, Proof::NotAsked, _) => b'a',
                (false, _, Some(m)) if minute == Some(m) => b's',
                (false, _, Some(m)) => {
                    minute = Some(m);
                    b'w'
                }
                _ => b'f',
            }
        })
        .collect()
}

/// The windows as the scripts read them: unix ms bounds and short names,
/// fields a window leaves out omitted.
fn windows_for_scripts(s: &RoomSettings) -> String {
    let windows: Vec<serde_json::Value> = s
        .windows
        .iter()
        .map(|w| {
            let mut o = serde_json::Map::new();
            o.insert("s".into(), unix_ms(w.starts_at).into());
            o.insert("e".into(), unix_ms(w.ends_at).into());
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

/// Sorts a Redis error into "retry later" and "this code is wrong".
///
/// Only errors that mean the request or the reply itself is wrong are
/// `Protocol` (500); everything else (I/O, timeouts, a node loading its data
/// or failing over, a cluster without quorum, a script killed for running
/// long, memory full, a NOSCRIPT that outlived the reload because a node
/// changed in between) is `Unavailable` (503, retried), because a client
/// retrying an outage is harmless and an outage reported as a bug is not.
fn store_error(e: RedisError) -> StoreError {
    match e.kind() {
        ErrorKind::Parse
        | ErrorKind::UnexpectedReturnType
        | ErrorKind::Server(
            ServerErrorKind::ResponseError
            | ServerErrorKind::CrossSlot
            | ServerErrorKind::ExecAbort,
        ) => StoreError::Protocol(e.to_string()),
        _ => StoreError::Unavailable(e.to_string()),
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
            self.fresh_seed(),
        ];
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        self.run::<()>(&self.scripts.put_room, room, &args).await?;
        let mut conn = self.conn.clone();
        let _: i64 = self
            .within(conn.sadd(keys::rooms_index(&self.prefix), room.as_str()))
            .await?;
        Ok(())
    }

    async fn set_state(&self, room: &RoomId, state: RoomState) -> Result<(), StoreError> {
        self.run::<Counter>(&self.scripts.set_state, room, &[state.as_str()])
            .await
            .map(drop)
    }

    async fn set_sale(&self, room: &RoomId, sale: SaleSignal) -> Result<(), StoreError> {
        sale.check()?;
        // Rust's float text is the shortest that reads back exactly, so the
        // scripts compute with the very factor the embedded store does.
        let factor = sale.rate_factor.to_string();
        self.run::<Counter>(
            &self.scripts.set_sale,
            room,
            &[reply::seats_text(sale.seats), &factor],
        )
        .await
        .map(drop)
    }

    async fn rooms(&self) -> Result<Vec<RoomId>, StoreError> {
        let mut conn = self.conn.clone();
        let ids: Vec<String> = self
            .within(conn.smembers(keys::rooms_index(&self.prefix)))
            .await?;
        let mut rooms: Vec<RoomId> = ids.iter().filter_map(|id| RoomId::parse(id)).collect();
        rooms.sort();
        Ok(rooms)
    }

    async fn figures(&self, room: &RoomId) -> Result<RoomFigures, StoreError> {
        self.run(&self.scripts.figures, room, &[]).await
    }

    async fn join_many(
        &self,
        room: &RoomId,
        joins: &[JoinRequest],
    ) -> Result<Vec<Joined>, StoreError> {
        let Joins(answers) = self
            .run_with(&self.scripts.join, room, |call| {
                call.arg(PREQUEUE_SPAN);
                let kinds = join_kinds(joins);
                call.arg(kinds.iter().map(|&k| char::from(k)).collect::<String>());
                call.arg(self.fresh_seed());
                for (join, &kind) in joins.iter().zip(&kinds) {
                    match (kind, &join.account) {
                        (b'p', _) => continue,
                        (b'w', _) => {
                            // The minute first: the solutions of a 'w' join
                            // and the 's' joins after it lie side by side.
                            if let Proof::Solved { key, expires_at_ms } = join.proof {
                                call.arg(seed_minute(expires_at_ms)).arg(&key[..]);
                            }
                            continue;
                        }
                        (b's', _) => {
                            if let Proof::Solved { key, .. } = join.proof {
                                call.arg(&key[..]);
                            }
                            continue;
                        }
                        (b'a', Some(account)) => {
                            call.arg(&account.as_bytes()[..]);
                            continue;
                        }
                        _ => {}
                    }
                    match join.existing {
                        Some(seq) => call.arg(seq),
                        None => call.arg(""),
                    };
                    match &join.limit {
                        Some(limit) => call.arg(limit.holder.as_str()).arg(limit.max),
                        None => call.arg("").arg(0u32),
                    };
                    match &join.account {
                        Some(account) => call.arg(&account.as_bytes()[..]),
                        None => call.arg(""),
                    };
                    match join.proof {
                        Proof::NotAsked => call.arg("").arg(""),
                        Proof::Missing => call.arg("!").arg(""),
                        Proof::Solved { key, expires_at_ms } => {
                            call.arg(&key[..]).arg(seed_minute(expires_at_ms))
                        }
                    };
                }
            })
            .await?;
        if answers.len() != joins.len() {
            return Err(StoreError::Protocol(format!(
                "{} joins gave {} answers",
                joins.len(),
                answers.len()
            )));
        }
        Ok(answers)
    }

    async fn status(&self, room: &RoomId, seq: u64) -> Result<Snapshot, StoreError> {
        self.run(&self.scripts.status, room, &[&seq.to_string()])
            .await
    }

    async fn leave(&self, room: &RoomId, seq: u64) -> Result<bool, StoreError> {
        let kept = DEPARTURES_KEPT_MS.to_string();
        let Counter(left) = self
            .run(&self.scripts.leave, room, &[&seq.to_string(), &kept])
            .await?;
        Ok(left > 0)
    }

    async fn session_active(&self, room: &RoomId, seq: u64) -> Result<bool, StoreError> {
        let Counter(active) = self
            .run(&self.scripts.session, room, &[&seq.to_string()])
            .await?;
        Ok(active == 1)
    }

    async fn tick(&self, room: &RoomId) -> Result<TickReport, StoreError> {
        let drops = MAX_DROPS_PER_TICK.to_string();
        let admits = MAX_ADMITS_PER_TICK.to_string();
        let span = PREQUEUE_SPAN.to_string();
        let Ticked { report, draw } = self
            .run(&self.scripts.tick, room, &[&drops, &admits, &span])
            .await?;
        if let Some(pending) = draw {
            // Nobody was let in; the first tick after the draw is applied
            // lets the drawn pre-queue in. A pre-queue of some thousands is
            // drawn before this tick ends; a larger one goes on in the
            // background (a million takes seconds), so the promoter's other
            // rooms do not wait for it.
            let (store, id) = (self.clone(), room.clone());
            let applying = tokio::spawn(async move {
                let applied = store.apply_draw(&id, pending).await;
                if let Err(e) = &applied {
                    tracing::warn!(room = %id, error = %e, "the pre-queue draw failed; another tick tries again");
                }
                applied
            });
            match tokio::time::timeout(DRAW_WAIT, applying).await {
                Ok(Ok(applied)) => applied?,
                Ok(Err(e)) => {
                    return Err(StoreError::Protocol(format!("the draw's task failed: {e}")));
                }
                Err(_) => {}
            }
        }
        Ok(report)
    }

    async fn draw(&self, room: &RoomId) -> Result<Option<DrawView>, StoreError> {
        let DrawSeen(seed, now) = self.run(&self.scripts.draw, room, &["view"]).await?;
        Ok(seed.map(|(seed, at)| DrawView::of(&seed, at, now)))
    }

    async fn observe(&self, room: &RoomId, watch: &Watch) -> Result<Observation, StoreError> {
        let mut args = vec![
            watch.since_ms.to_string(),
            PREQUEUE_SPAN.to_string(),
            DEPARTURES_KEPT_MS.to_string(),
            if watch.samples { "1" } else { "0" }.to_owned(),
        ];
        args.extend(watch.polled.iter().map(u64::to_string));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let observed: Observed = self.run(&self.scripts.observe, room, &args).await?;
        Ok(observed.of(&watch.polled))
    }

    async fn ping(&self) -> Result<(), StoreError> {
        let mut conn = self.conn.clone();
        // On a cluster PING goes to every node the client is connected to.
        self.within(redis::cmd("PING").query_async::<String>(&mut conn))
            .await?;
        if let Conn::Cluster(_) = &self.conn {
            // A node that died is simply not asked by PING; the cluster's
            // own view catches it (after cluster-node-timeout), and with
            // Redis's default full-coverage rule a failed cluster refuses
            // every command anyway.
            let info: String = self
                .within(redis::cmd("CLUSTER").arg("INFO").query_async(&mut conn))
                .await?;
            if !info.contains("cluster_state:ok") {
                return Err(StoreError::Unavailable(
                    "the Redis Cluster reports cluster_state:fail".into(),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use room::AccountHash;

    fn solved(k: u8, minute: u64) -> JoinRequest {
        JoinRequest {
            proof: Proof::Solved {
                key: [k; 8],
                expires_at_ms: minute * 60_000 + 59_999,
            },
            ..JoinRequest::default()
        }
    }

    #[test]
    fn kinds_send_a_minute_once_and_a_repeat_the_long_way() {
        let joins = [
            JoinRequest::default(),
            solved(1, 7),
            solved(2, 7),
            solved(3, 8),
            solved(1, 7),
            solved(4, 7),
            JoinRequest {
                account: Some(AccountHash([9; 8])),
                ..JoinRequest::default()
            },
            JoinRequest {
                existing: Some(12),
                ..solved(5, 7)
            },
            solved(5, 7),
            JoinRequest {
                proof: Proof::Missing,
                ..JoinRequest::default()
            },
            solved(1, 7),
        ];
        // A repeat goes as 'f' whether its first showing went as 'w' or
        // as 'f' (the ticket's join), and so does a third showing.
        assert_eq!(join_kinds(&joins), b"pwswfwaffff");
    }
}
