//! The connection the Redis store talks through: one Redis server or a Redis
//! Cluster, behind one type, so the store's code is the same for both.
//!
//! Both kinds connect lazily and reconnect on their own: the origin starts
//! while Redis is down and recovers, without a restart, when it returns.
//! Neither kind is trusted to bound a call's time (a reconnect may wait out
//! several connection attempts): the store puts its own deadline around every
//! call. No key or queue rule lives here.

use std::time::Duration;

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster::{ClusterClientBuilder, ClusterConfig};
use redis::cluster_async::ClusterConnection;
use redis::io::tcp::TcpSettings;
use redis::{Cmd, IntoConnectionInfo, Pipeline, RedisFuture, Value};

/// The client's default leaves Nagle's algorithm on: a small command written
/// while an earlier one is unacknowledged then waits for the ACK (up to the
/// peer's delayed-ACK timer), which puts milliseconds into a request's tail.
fn tcp() -> TcpSettings {
    TcpSettings::default().set_nodelay(true)
}

/// A cheap-to-clone handle to one Redis server or to a Redis Cluster.
#[derive(Clone)]
pub enum Conn {
    /// One server (or a proxy in front of several): a multiplexed connection
    /// that reconnects in the background when it drops.
    Single(ConnectionManager),
    /// A Redis Cluster: a connection to every primary, each command sent to
    /// the node that owns its key's slot (every key of a room shares the
    /// room's hash tag, so every script runs on one node).
    Cluster(ClusterConnection),
}

impl Conn {
    /// One server at `url` (`redis://host:port/db`).
    pub fn single(url: &str, timeout: Duration) -> redis::RedisResult<Conn> {
        let info = url.into_connection_info()?.set_tcp_settings(tcp());
        let client = redis::Client::open(info)?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(timeout))
            .set_response_timeout(Some(timeout))
            // Few, quick reconnection attempts: while Redis is away every
            // request waits for them, and the store's deadline cuts them off
            // anyway; the next request starts a fresh attempt.
            .set_number_of_retries(1)
            .set_min_delay(Duration::from_millis(50))
            .set_max_delay(Duration::from_millis(500));
        ConnectionManager::new_lazy_with_config(client, config).map(Conn::Single)
    }

    /// A cluster reached through `seeds` (any of its nodes; the rest are
    /// discovered from them).
    pub fn cluster(seeds: &[&str], timeout: Duration) -> redis::RedisResult<Conn> {
        let client = ClusterClientBuilder::new(seeds.iter().copied())
            .tcp_settings(tcp())
            .connection_timeout(timeout)
            .response_timeout(timeout)
            // The default (16 retries, waits up to minutes) suits batch jobs,
            // not a request a visitor waits for: a slot moving to a new
            // primary is retried a few times within the timeout, then the
            // request fails with 503 and the client polls again.
            .retries(3)
            .min_retry_wait(20)
            .max_retry_wait(200)
            .build()?;
        let config = ClusterConfig::new()
            .set_connection_timeout(timeout)
            .set_response_timeout(timeout);
        Ok(Conn::Cluster(
            client.get_pending_async_connection_with_config(config),
        ))
    }
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Conn::Single(c) => c.req_packed_command(cmd),
            Conn::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Conn::Single(c) => c.req_packed_commands(pipeline, offset, count),
            Conn::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Conn::Single(c) => c.get_db(),
            Conn::Cluster(c) => c.get_db(),
        }
    }
}
