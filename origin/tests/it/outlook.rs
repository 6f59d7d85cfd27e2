//! The status body's `outlook` on both databases (and on whichever queue
//! store the run uses), with the sale loop running as `origin::run` runs
//! it: null before the opening and in a room that sells nothing; in a room
//! of 40 seats, `likely` near the front of a short line and `unlikely` far
//! back in a long one; `unlikely` once every seat is booked. The ETA goes
//! with `likely` only: further back, admission may stop while every seat
//! is held, for as long as no one can tell.

use super::STORE;
use std::sync::Arc;
use std::time::Duration;

use crate::common::booking::*;
use crate::common::{Api, admin_state, eventually, make_room, settings, test_store, unix_now};
use origin::queue::QueueStore;
use origin::room::{RoomId, RoomSettings};
use origin::state::AppState;
use serde_json::{Value, json};
use time::OffsetDateTime;
use tokio_util::sync::CancellationToken;

both!(the_outlook_follows_the_line_and_the_seats);
both!(an_eta_is_told_only_where_seats_are_likely);

struct Sale {
    api: Api,
    state: AppState,
    queue: Arc<dyn QueueStore>,
    cancel: CancellationToken,
    _t: crate::common::TestStore,
}

impl Drop for Sale {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

/// The app on this test's stores, with the sale loop running.
async fn sale(db: &TestDb) -> Sale {
    let t = test_store(STORE);
    let (booking, _) = db.store_counting().await;
    let state = admin_state(t.store.clone()).with_booking(Arc::new(booking));
    let cancel = CancellationToken::new();
    tokio::spawn(origin::sale::run(
        t.store.clone(),
        state.booking.clone().unwrap(),
        state.latency.clone(),
        origin::sale::Watchers {
            history: state.history.clone(),
            views: state.snapshots.clone(),
            outlooks: state.outlooks.clone(),
        },
        state.clock.clone(),
        cancel.clone(),
    ));
    Sale {
        api: Api::new(state.clone()),
        state,
        queue: t.store.clone(),
        cancel,
        _t: t,
    }
}

impl Sale {
    /// A room; with `seats` (rows, seats a row) the performance `night`.
    async fn room(&self, tag: &str, settings: RoomSettings, seats: Option<(u32, u32)>) -> RoomId {
        let id = format!("{tag}-{:08x}", rand::random::<u32>());
        let room = make_room(self.queue.as_ref(), &id, settings).await;
        if let Some((rows, per_row)) = seats {
            let body = json!({
                "title": "night", "starts_at": "2030-05-01T19:00:00Z", "hold_seconds": 420,
                "max_seats_per_hold": 4,
                "sections": [{"name": "A", "rows": rows, "seats_per_row": per_row, "price": 5000}]
            });
            let r = self
                .api
                .admin(
                    "PUT",
                    &format!("/admin/rooms/{room}/performances/night"),
                    body.to_string(),
                )
                .await;
            assert_eq!(r.status, 200, "{}", r.json);
        }
        room
    }

    /// Waits until the sale loop has read the room's seats.
    async fn followed(&self, room: &RoomId) {
        let outlooks = self.state.outlooks.clone();
        eventually(
            "the sale loop read the seats",
            Duration::from_secs(10),
            || {
                let known = outlooks.estimate(room).is_some();
                async move { known }
            },
        )
        .await;
    }

    /// `n` visitors join; their tickets, in line order.
    async fn line(&self, room: &RoomId, n: usize) -> Vec<String> {
        let mut tickets = Vec::with_capacity(n);
        for _ in 0..n {
            let r = self.api.join(room, None).await;
            assert_eq!(r.status, 200, "{}", r.json);
            tickets.push(r.ticket());
        }
        tickets
    }

    async fn outlook(&self, room: &RoomId, ticket: &str) -> Value {
        let r = self.api.status(room, ticket).await;
        assert_eq!(r.status, 200, "{}", r.json);
        r.json["outlook"].clone()
    }
}

async fn the_outlook_follows_the_line_and_the_seats(db: &TestDb) {
    let s = sale(db).await;

    // A room that sells nothing through this origin: null.
    let plain = s.room("plain", settings(1), None).await;
    let tickets = s.line(&plain, 3).await;
    // Give the loop a pass or two: it would have noted seats by then.
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert!(s.state.outlooks.estimate(&plain).is_none());
    assert_eq!(s.outlook(&plain, &tickets[2]).await, Value::Null);

    // Before the opening: null, however the line stands.
    let later = RoomSettings {
        opens_at: Some(OffsetDateTime::from_unix_timestamp((unix_now() + 3_600) as i64).unwrap()),
        ..settings(1)
    };
    let prequeue = s.room("prequeue", later, Some((1, 2))).await;
    s.followed(&prequeue).await;
    let tickets = s.line(&prequeue, 20).await;
    let r = s.api.status(&prequeue, &tickets[19]).await;
    assert_eq!(r.json["state"], "waiting", "{}", r.json);
    assert_eq!(r.json["outlook"], Value::Null, "{}", r.json);

    // 40 seats, one visitor inside at a time, 100 in line behind it.
    let sale_room = s.room("seats", settings(1), Some((4, 10))).await;
    s.followed(&sale_room).await;
    let tickets = s.line(&sale_room, 101).await;
    let first = s.api.status(&sale_room, &tickets[0]).await;
    assert_eq!(first.json["state"], "admitted", "{}", first.json);
    assert_eq!(first.json["outlook"], Value::Null, "not waiting");
    eventually("the loop saw the line", Duration::from_secs(10), || {
        let estimate = s.state.outlooks.estimate(&sale_room);
        async move { estimate.is_some_and(|e| e.inside == 1.0) }
    })
    .await;
    // Few wait ahead of the second and third: seats will be left.
    assert_eq!(s.outlook(&sale_room, &tickets[1]).await, "likely");
    assert_eq!(s.outlook(&sale_room, &tickets[2]).await, "likely");
    // A hundred ahead at two seats each (the prior) want far more than 40.
    let last = s.api.status(&sale_room, &tickets[100]).await;
    assert_eq!(last.json["position"], 100, "{}", last.json);
    assert_eq!(last.json["outlook"], "unlikely", "{}", last.json);
}

async fn an_eta_is_told_only_where_seats_are_likely(db: &TestDb) {
    let s = sale(db).await;
    // A rate-bound room (one a second, room for all): without seats every
    // waiter's turn is its position in seconds (no promoter runs here, so
    // the ETA is the configured rate's; what is under test is the outlook
    // taking it away).
    let rate_bound = RoomSettings {
        capacity: 1_000,
        admit_per_second: 1.0,
        ..Default::default()
    };
    let plain = s.room("plain-rate", rate_bound.clone(), None).await;
    let sale_room = s.room("seats-rate", rate_bound, Some((4, 10))).await;
    s.followed(&sale_room).await;
    for room in [&plain, &sale_room] {
        let tickets = s.line(room, 101).await;
        let mut judged = 0;
        for ticket in &tickets {
            let r = s.api.status(room, ticket).await;
            let Some(position) = r.json["position"].as_u64() else {
                continue;
            };
            let eta = &r.json["eta_seconds"];
            match r.json["outlook"].as_str() {
                // No seats, or seats likely left: the schedule's number.
                None | Some("likely") => assert_eq!(eta, position, "{}", r.json),
                // 40 seats at two a visitor (the prior) run out within the
                // first twenty places or so: past the likely ones, no time.
                // (The outlooks below hold with one inside or none, so the
                // loop's view of the line need not be waited for.)
                Some(_) => assert!(eta.is_null(), "{}", r.json),
            }
            judged += 1;
        }
        assert!(judged >= 100, "{judged} waiters judged");
        if room == &sale_room {
            let near = s.api.status(room, &tickets[2]).await;
            assert_eq!(near.json["outlook"], "likely", "{}", near.json);
            let mid = s.api.status(room, &tickets[20]).await;
            assert_eq!(mid.json["outlook"], "uncertain", "{}", mid.json);
            let far = s.api.status(room, &tickets[100]).await;
            assert_eq!(far.json["outlook"], "unlikely", "{}", far.json);
        }
    }
}
