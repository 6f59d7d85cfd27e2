//! What a Redis restart costs, on a test-owned `redis-server`:
//!
//! - without persistence the line is lost, and a room created again must
//!   never hand an old ticket a new visitor's place (the room's sequence
//!   numbers restart far above the lost ones);
//! - with AOF the restarted Redis keeps the line: every place, every
//!   session and the sequence counter.

use std::sync::Arc;
use std::time::Duration;

use crate::common::servers::{RedisServer, TempDir};
use crate::common::{Api, make_room, seq_of, settings, state, unique_prefix};
use origin::queue::QueueStore;
use origin::queue::redis::{RedisConfig, RedisStore};
use origin::room::RoomSettings;

fn store_on(server: &RedisServer) -> Arc<dyn QueueStore> {
    Arc::new(
        RedisStore::connect(&RedisConfig {
            url: server.url(),
            prefix: unique_prefix(),
            timeout: Duration::from_secs(5),
            cluster: false,
        })
        .unwrap(),
    )
}

/// Waits until the store answers again: the first call after a restart
/// finds the old connection dropped (503) and starts a reconnection.
async fn reconnected(store: &dyn QueueStore) {
    for _ in 0..100 {
        if store.ping().await.is_ok() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the store did not reconnect");
}

/// Room settings whose waiters are not dropped while a test restarts Redis.
fn patient() -> RoomSettings {
    RoomSettings {
        abandon_seconds: 600,
        ..settings(10)
    }
}

#[tokio::test]
async fn a_room_created_again_after_its_data_was_lost_never_reuses_a_place() {
    let dir = TempDir::new("no-persistence");
    let mut server = RedisServer::start(&dir.0);
    let store = store_on(&server);
    let api = Api::new(state(store.clone()));
    let room = make_room(store.as_ref(), "lost", patient()).await;
    let mut old = Vec::new();
    for _ in 0..15 {
        old.push(api.join(&room, None).await);
    }
    assert_eq!(old[0].json["state"], "admitted");
    assert_eq!(old[14].json["position"], 5);

    // No persistence: the restarted Redis is empty, the room unknown.
    server.restart();
    reconnected(store.as_ref()).await;
    assert_eq!(api.status(&room, &old[14].ticket()).await.status, 404);
    // The operator creates the room again; fifteen new visitors arrive.
    make_room(store.as_ref(), "lost", patient()).await;
    let mut new = Vec::new();
    for _ in 0..15 {
        new.push(api.join(&room, None).await);
    }
    let newest_old = old.iter().map(|r| seq_of(&r.ticket(), &room)).max();
    let oldest_new = new.iter().map(|r| seq_of(&r.ticket(), &room)).min();
    assert!(oldest_new > newest_old, "{oldest_new:?} > {newest_old:?}");

    for r in &old {
        // Every old ticket reads expired (join again), never someone's place...
        let status = api.status(&room, &r.ticket()).await;
        assert_eq!(status.json["state"], "expired", "{}", status.json);
        // ...its leave frees nobody's place...
        assert_eq!(api.leave(&room, &r.ticket()).await.status, 204);
    }
    for (i, r) in new.iter().enumerate().skip(10) {
        let status = api.status(&room, &r.ticket()).await;
        assert_eq!(status.json["position"], i as u64 - 9, "{}", status.json);
    }
    // ...and its entry token opens nothing.
    let old_entry = old[0].json["entry_token"].as_str().unwrap().to_owned();
    let mut headers = axum::http::HeaderMap::new();
    headers.insert("entry-token", old_entry.parse().unwrap());
    let refused = origin::http::entry::require_entry(
        &state(store.clone()),
        &room,
        &headers,
        crate::common::unix_now(),
    )
    .await;
    assert!(
        matches!(refused, Err(origin::error::ApiError::SessionEnded)),
        "{refused:?}"
    );
    // Joining again with an old ticket gives a new place at the back.
    let again = api.join(&room, Some(&old[14].ticket())).await;
    assert_eq!(again.json["position"], 6, "{}", again.json);
}

#[tokio::test]
async fn with_aof_a_restarted_redis_keeps_the_line_and_every_position() {
    let dir = TempDir::new("aof");
    // `always` makes the test exact; production's `everysec` may lose the
    // last second of writes on a crash (README, "Persistence").
    let mut server = RedisServer::start_with(
        &dir.0,
        &[
            "--appendonly",
            "yes",
            "--appendfsync",
            "always",
            "--save",
            "",
        ],
    );
    let store = store_on(&server);
    let api = Api::new(state(store.clone()));
    let room = make_room(store.as_ref(), "kept", patient()).await;
    let mut visitors = Vec::new();
    for _ in 0..60 {
        visitors.push(api.join(&room, None).await);
    }
    let before: Vec<serde_json::Value> = {
        let mut v = Vec::new();
        for r in &visitors {
            v.push(api.status(&room, &r.ticket()).await.json);
        }
        v
    };
    let figures = store.figures(&room).await.unwrap();
    assert_eq!((figures.active, figures.waiting), (10, 50));

    // A crash (SIGKILL: no shutdown save), then the same server again.
    server.restart();
    reconnected(store.as_ref()).await;

    for (r, was) in visitors.iter().zip(&before) {
        let now = api.status(&room, &r.ticket()).await.json;
        assert_eq!(now["state"], was["state"], "{now}");
        assert_eq!(now["position"], was["position"], "{now}");
    }
    let after = store.figures(&room).await.unwrap();
    assert_eq!(after.places_given, figures.places_given);
    assert_eq!((after.active, after.waiting), (10, 50));
    // The counter went on from where it was: the next visitor is next in line.
    let next = api.join(&room, None).await;
    assert_eq!(next.json["position"], 51);
    let last_before = seq_of(&visitors[59].ticket(), &room);
    assert_eq!(seq_of(&next.ticket(), &room), last_before + 1);
    // And the line moves on in order.
    assert_eq!(api.leave(&room, &visitors[0].ticket()).await.status, 204);
    let report = store.tick(&room).await.unwrap();
    assert_eq!(report.admitted, vec![seq_of(&visitors[10].ticket(), &room)]);
}
