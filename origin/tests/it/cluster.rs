//! The queue on a Redis Cluster: a local cluster of three primaries (test-
//! owned `redis-server` processes, stopped when the test ends), the same
//! scenarios `line.rs` runs on one server, with rooms whose slots are spread
//! over all three primaries, and script reloading after a node forgets its
//! scripts.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use crate::common::servers::RedisCluster;
use crate::common::{make_room, room, scenarios, unique_prefix};
use origin::queue::QueueStore;
use origin::queue::redis::{RedisConfig, RedisStore, RoomKeys};
use origin::room::RoomSettings;

/// Every scenario in the list, side by side on one store, as rooms run in
/// production (each scenario has its own room).
macro_rules! all_at_once {
    ($($name:ident => $room:literal),* $(,)?) => {
        async fn every_scenario_at_once(store: Arc<dyn QueueStore>) {
            tokio::join!($(scenarios::$name(store.clone(), $room)),*);
        }
    };
}

scenarios::every_scenario!(all_at_once);

async fn start_cluster() -> RedisCluster {
    // Starting processes and waiting for them blocks; keep it off the runtime.
    tokio::task::spawn_blocking(RedisCluster::start)
        .await
        .expect("the cluster starts")
}

fn cluster_store(cluster: &RedisCluster, prefix: &str) -> Arc<dyn QueueStore> {
    Arc::new(
        RedisStore::connect(&RedisConfig {
            url: cluster.urls(),
            prefix: prefix.to_owned(),
            timeout: Duration::from_secs(5),
            cluster: true,
        })
        .expect("a cluster store"),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_line_behaves_the_same_on_a_redis_cluster() {
    let cluster = start_cluster().await;
    let prefix = unique_prefix();
    let store = cluster_store(&cluster, &prefix);

    // The scenarios' rooms' hash tags fall on all three primaries (checked,
    // not assumed).
    let owners: HashSet<u16> = scenarios::ROOMS
        .iter()
        .map(|id| cluster.owner_of(&RoomKeys::new(&prefix, &room(id)).room))
        .collect();
    assert_eq!(owners.len(), 3, "the rooms land on every primary");

    // The slowest scenario (abandonment) takes about 4 s.
    every_scenario_at_once(store.clone()).await;

    // The room index is one key on one node and lists rooms of every node.
    let mut listed: Vec<String> = store
        .rooms()
        .await
        .unwrap()
        .iter()
        .map(|r| r.as_str().to_owned())
        .collect();
    listed.sort();
    let mut expected: Vec<String> = scenarios::ROOMS.iter().map(|s| (*s).to_owned()).collect();
    expected.sort();
    assert_eq!(listed, expected);
    assert!(store.ping().await.is_ok(), "every node answers PING");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripts_are_reloaded_when_a_node_has_forgotten_them() {
    let cluster = start_cluster().await;
    let store = cluster_store(&cluster, &unique_prefix());
    let settings = RoomSettings {
        capacity: 1,
        admit_per_second: 1_000.0,
        ..Default::default()
    };
    // A fresh cluster has no scripts at all: the first call on each node
    // gets NOSCRIPT, loads the script (on every node) and runs it.
    let rooms = [
        make_room(store.as_ref(), "drop", settings.clone()).await,
        make_room(store.as_ref(), "door", settings.clone()).await,
        make_room(store.as_ref(), "keep", settings.clone()).await,
    ];
    for r in &rooms {
        store.join(r, None, None).await.unwrap();
    }
    // A restarted or replaced node comes back empty: SCRIPT FLUSH does the same.
    for node in &cluster.nodes {
        assert_eq!(node.query(&["SCRIPT", "FLUSH"]).unwrap(), "OK");
    }
    for r in &rooms {
        let snap = store.join(r, None, None).await.unwrap().answer().unwrap();
        assert_eq!(
            snap.standing,
            origin::queue::Standing::Waiting { position: Some(1) }
        );
        assert_eq!(store.tick(r).await.unwrap().waiting, 1);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_node_is_503_within_the_timeout_and_its_return_is_picked_up() {
    let mut cluster = start_cluster().await;
    let prefix = unique_prefix();
    let timeout = Duration::from_millis(500);
    let store: Arc<dyn QueueStore> = Arc::new(
        RedisStore::connect(&RedisConfig {
            url: cluster.urls(),
            prefix: prefix.clone(),
            timeout,
            cluster: true,
        })
        .unwrap(),
    );
    let settings = RoomSettings::default();
    let door = make_room(store.as_ref(), "door", settings.clone()).await;
    let owner = cluster.owner_of(&RoomKeys::new(&prefix, &door).room);
    let node = cluster
        .nodes
        .iter_mut()
        .find(|n| n.port == owner)
        .expect("the owner is one of ours");

    node.kill();
    for _ in 0..3 {
        let start = std::time::Instant::now();
        let result = store.join(&door, None, None).await;
        assert!(
            matches!(result, Err(origin::queue::StoreError::Unavailable(_))),
            "{result:?}"
        );
        assert!(
            start.elapsed() < timeout + Duration::from_millis(500),
            "answered after {:?}",
            start.elapsed()
        );
    }
    // Not ready once the cluster sees the node down (cluster-node-timeout
    // is 2 s in these tests).
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while store.ping().await.is_ok() {
        assert!(
            std::time::Instant::now() < deadline,
            "still ready with a node down"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // The node comes back (same port, same cluster config, no data): the
    // cluster heals and the store uses the node again without a restart.
    tokio::task::block_in_place(|| node.restart());
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        match store.put_room(&door, &settings).await {
            Ok(()) => break,
            Err(e) => assert!(
                std::time::Instant::now() < deadline,
                "the store never used the node again: {e}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let snap = store
        .join(&door, None, None)
        .await
        .unwrap()
        .answer()
        .unwrap();
    assert!(snap.seq.is_some());
    // Every node sees the cluster whole again a moment later.
    while store.ping().await.is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "not ready after the node returned"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
