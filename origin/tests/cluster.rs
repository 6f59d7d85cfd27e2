//! The queue on a Redis Cluster: a local cluster of three primaries (test-
//! owned `redis-server` processes, stopped when the test ends), the same
//! scenarios `line.rs` runs on one server, with rooms whose slots are spread
//! over all three primaries, and script reloading after a node forgets its
//! scripts.

mod common;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use common::servers::RedisCluster;
use common::{make_room, room, scenarios, unique_prefix};
use origin::queue::QueueStore;
use origin::queue::redis::{RedisConfig, RedisStore, RoomKeys};
use origin::room::RoomSettings;

/// The rooms the scenarios create; their hash tags fall on all three
/// primaries (checked below, not assumed).
const SCENARIO_ROOMS: [&str; 9] = [
    "quiet", "shop", "drop", "short", "fickle", "door", "keep", "gate", "pace",
];

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

    let owners: HashSet<u16> = SCENARIO_ROOMS
        .iter()
        .map(|id| cluster.owner_of(&RoomKeys::new(&prefix, &room(id)).room))
        .collect();
    assert_eq!(owners.len(), 3, "the rooms land on every primary");

    // Each scenario uses its own room, so they run side by side, as rooms
    // do in production; the slowest (abandonment) takes about 4 s.
    tokio::join!(
        scenarios::an_empty_room_with_free_capacity_admits_at_once(store.clone()),
        scenarios::cookies_are_secure_off_loopback(store.clone()),
        scenarios::the_prequeue_draws_places_at_the_opening_and_later_joins_queue_behind(
            store.clone()
        ),
        scenarios::an_ended_session_frees_its_slot_and_its_token_is_refused(store.clone()),
        scenarios::waiters_who_stop_polling_are_dropped_and_their_place_freed(store.clone()),
        scenarios::leaving_frees_the_slot_or_the_place_at_once(store.clone()),
        scenarios::rejoining_with_a_valid_ticket_keeps_the_place(store.clone()),
        scenarios::pausing_stops_admissions_and_closing_takes_no_places(store.clone()),
        scenarios::status_reports_an_eta_from_the_achieved_rate_and_paces_polls(store.clone()),
    );

    // The room index is one key on one node and lists rooms of every node.
    let mut listed: Vec<String> = store
        .rooms()
        .await
        .unwrap()
        .iter()
        .map(|r| r.as_str().to_owned())
        .collect();
    listed.sort();
    let mut expected: Vec<String> = SCENARIO_ROOMS.iter().map(|s| (*s).to_owned()).collect();
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
        store.join(r, None, 0, None).await.unwrap();
    }
    // A restarted or replaced node comes back empty: SCRIPT FLUSH does the same.
    for node in &cluster.nodes {
        assert_eq!(node.query(&["SCRIPT", "FLUSH"]).unwrap(), "OK");
    }
    for r in &rooms {
        let snap = store.join(r, None, 0, None).await.unwrap();
        assert_eq!(
            snap.standing,
            origin::queue::Standing::Waiting { position: Some(1) }
        );
        assert_eq!(store.tick(r).await.unwrap().waiting, 1);
    }
}
