//! The seat map over HTTP, on both databases: the layout and state routes
//! say what the contract's listing says, through holds, releases, bookings
//! and a replaced layout; loaders arriving together after a change cost one
//! read and one rendering; map loads past the session's limit are 429; the
//! map is gzipped for a client that takes it, queue status answers never.

use super::STORE;
use std::io::Read;
use std::sync::Arc;

use crate::common::booking::*;
use crate::common::{Api, Reply, admin_state, make_room, settings, test_store};
use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Request, StatusCode};
use http_body_util::BodyExt;
use origin::booking::BookingStore;
use origin::room::RoomId;
use origin::state::AppState;
use serde_json::{Value, json};
use tower::ServiceExt;

both!(
    layout_and_state_say_what_the_listing_says,
    loaders_arriving_together_cost_one_read,
    map_loads_past_the_limit_are_refused,
    the_map_is_gzipped_and_status_is_not,
);

/// The app on this test's queue store and database.
struct Sale {
    api: Api,
    booking: Arc<BookingStore>,
    _t: crate::common::TestStore,
}

async fn sale_with(db: &TestDb, state: impl FnOnce(AppState) -> AppState) -> Sale {
    let t = test_store(STORE);
    let (booking, _) = db.store_counting().await;
    let booking = Arc::new(booking);
    let state = state(admin_state(t.store.clone()).with_booking(booking.clone()));
    Sale {
        api: Api::new(state),
        booking,
        _t: t,
    }
}

async fn sale(db: &TestDb) -> Sale {
    sale_with(db, |s| s).await
}

impl Sale {
    /// A room selling `night`: sections A (2 x 3 at 5000) and B (1 x 4 at 7000).
    async fn room(&self, tag: &str) -> RoomId {
        let id = format!("{tag}-{:08x}", rand::random::<u32>());
        let room = make_room(self._t.store.as_ref(), &id, settings(50)).await;
        self.put(&room, 5000).await;
        room
    }

    async fn put(&self, room: &RoomId, price_a: u64) {
        let body = json!({
            "title": "Night", "starts_at": "2030-05-01T19:00:00Z", "hold_seconds": 420,
            "max_seats_per_hold": 4,
            "sections": [
                {"name": "A", "rows": 2, "seats_per_row": 3, "price": price_a},
                {"name": "B", "rows": 1, "seats_per_row": 4, "price": 7000}
            ]
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

    /// An admitted visitor's entry token.
    async fn entered(&self, room: &RoomId) -> String {
        let r = self.api.join(room, None).await;
        assert_eq!(r.status, 200, "{}", r.json);
        r.json["entry_token"].as_str().expect("admitted").to_owned()
    }

    async fn call(
        &self,
        method: &str,
        uri: &str,
        entry: &str,
        headers: &[(&str, &str)],
        body: Option<Value>,
    ) -> Reply {
        self.api
            .send(request(method, uri, entry, headers, body))
            .await
    }

    /// The answer's head and raw body (not decoded).
    async fn raw(
        &self,
        uri: &str,
        entry: &str,
        headers: &[(&str, &str)],
    ) -> (StatusCode, HeaderMap, Bytes) {
        let req = request("GET", uri, entry, headers, None);
        let response = self.api.app.clone().oneshot(req).await.unwrap();
        let (parts, body) = response.into_parts();
        (
            parts.status,
            parts.headers,
            body.collect().await.unwrap().to_bytes(),
        )
    }

    async fn get(&self, room: &RoomId, what: &str, entry: &str) -> Reply {
        let r = self
            .call(
                "GET",
                &format!("/api/{room}/performances/night/{what}"),
                entry,
                &[],
                None,
            )
            .await;
        assert_eq!(r.status, 200, "{what}: {}", r.json);
        r
    }

    /// The listing as the contract route gives it, and as layout + state
    /// give it, as (id, section, row, number, price, state) each.
    async fn both_ways(&self, room: &RoomId, entry: &str) -> (Vec<Value>, Vec<Value>) {
        let listing = self.get(room, "seats", entry).await;
        let layout = self.get(room, "layout", entry).await;
        let state = self.get(room, "state", entry).await;
        let layout_tag = layout.headers["etag"]
            .to_str()
            .unwrap()
            .trim_matches('"')
            .to_owned();
        assert_eq!(
            state.json["layout"],
            layout_tag.as_str(),
            "the state names its layout"
        );
        assert_eq!(layout.json["performance"], "night");
        assert_eq!(state.json["performance"], "night");
        let letters = state.json["states"].as_str().unwrap().to_owned();
        let mut drawn = Vec::new();
        for s in layout.json["sections"].as_array().unwrap() {
            for row in 1..=s["rows"].as_u64().unwrap() {
                for number in 1..=s["seats_per_row"].as_u64().unwrap() {
                    let name = s["name"].as_str().unwrap();
                    let letter = letters.as_bytes()[drawn.len()];
                    let state = match letter {
                        b'a' => "available",
                        b'h' => "held",
                        b'b' => "booked",
                        other => panic!("letter {other}"),
                    };
                    drawn.push(json!({
                        "id": format!("{name}-{row}-{number}"), "section": name, "row": row,
                        "number": number, "price": s["price"], "state": state
                    }));
                }
            }
        }
        assert_eq!(layout.json["seats"], drawn.len());
        assert_eq!(letters.len(), drawn.len());
        assert_eq!(listing.json["performance"], "night");
        (listing.json["seats"].as_array().unwrap().clone(), drawn)
    }
}

fn request(
    method: &str,
    uri: &str,
    entry: &str,
    headers: &[(&str, &str)],
    body: Option<Value>,
) -> Request<Body> {
    let mut req = Request::builder()
        .method(method)
        .uri(uri)
        .header("host", "127.0.0.1:8080")
        .header("entry-token", entry);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let body = body.map_or(Body::empty(), |b| Body::from(b.to_string()));
    req.body(body).unwrap()
}

fn states(seats: &[Value]) -> Vec<&str> {
    seats.iter().map(|s| s["state"].as_str().unwrap()).collect()
}

/// Through a hold, a second hold, a booking of the first, a release of the
/// second and a replaced layout, the layout and state routes draw exactly
/// the contract's listing; the layout keeps its tag (and answers 304) until
/// the performance is repriced.
async fn layout_and_state_say_what_the_listing_says(db: &TestDb) {
    let s = sale(db).await;
    let room = s.room("split").await;
    let (a, b, viewer) = (
        s.entered(&room).await,
        s.entered(&room).await,
        s.entered(&room).await,
    );

    let (listing, drawn) = s.both_ways(&room, &viewer).await;
    assert_eq!(listing, drawn);
    assert_eq!(states(&listing), ["available"; 10]);
    let layout_tag = s.get(&room, "layout", &viewer).await.headers["etag"].clone();

    let hold = |entry: &str, seats: &[&str]| {
        let body = json!({ "seats": seats });
        let (entry, room) = (entry.to_owned(), room.clone());
        let s = &s;
        async move {
            let uri = format!("/api/{room}/performances/night/holds");
            let r = s.call("POST", &uri, &entry, &[], Some(body)).await;
            assert_eq!(r.status, 201, "{}", r.json);
            r.json["hold_id"].as_str().unwrap().to_owned()
        }
    };
    let first = hold(&a, &["A-1-2", "B-1-4"]).await;
    let second = hold(&b, &["A-2-1"]).await;
    let (listing, drawn) = s.both_ways(&room, &viewer).await;
    assert_eq!(listing, drawn);
    assert_eq!(
        states(&listing),
        [
            "available",
            "held",
            "available",
            "held",
            "available",
            "available",
            "available",
            "available",
            "available",
            "held"
        ]
    );

    let r = s
        .call(
            "POST",
            &format!("/api/{room}/holds/{first}/confirm"),
            &a,
            &[("idempotency-key", "k1")],
            Some(json!({"payment_token": "tok_ok"})),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.json);
    let r = s
        .call(
            "DELETE",
            &format!("/api/{room}/holds/{second}"),
            &b,
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, 204, "{}", r.json);
    let (listing, drawn) = s.both_ways(&room, &viewer).await;
    assert_eq!(listing, drawn);
    assert_eq!(
        states(&listing),
        [
            "available",
            "booked",
            "available",
            "available",
            "available",
            "available",
            "available",
            "available",
            "available",
            "booked"
        ]
    );

    // The layout did not change: the browser's copy is still good.
    let uri = format!("/api/{room}/performances/night/layout");
    let tag = layout_tag.to_str().unwrap();
    let r = s
        .call("GET", &uri, &viewer, &[("if-none-match", tag)], None)
        .await;
    assert_eq!(r.status, 304);
    assert_eq!(r.headers["etag"], layout_tag);

    // A row added to A (seats in use keep their prices): a new layout.
    let body = json!({
        "title": "Night", "starts_at": "2030-05-01T19:00:00Z", "hold_seconds": 420,
        "max_seats_per_hold": 4,
        "sections": [
            {"name": "A", "rows": 3, "seats_per_row": 3, "price": 5000},
            {"name": "B", "rows": 1, "seats_per_row": 4, "price": 7000}
        ]
    });
    let r = s
        .api
        .admin(
            "PUT",
            &format!("/admin/rooms/{room}/performances/night"),
            body.to_string(),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.json);
    let r = s
        .call("GET", &uri, &viewer, &[("if-none-match", tag)], None)
        .await;
    assert_eq!(r.status, 200, "a new layout is sent");
    assert_ne!(r.headers["etag"], layout_tag);
    let (listing, drawn) = s.both_ways(&room, &viewer).await;
    assert_eq!(listing, drawn);
    assert_eq!(listing.len(), 13);
    assert_eq!(listing[12]["id"], "B-1-4");
    assert_eq!(listing[12]["state"], "booked");
}

/// After a change, sixteen loaders of the listing and sixteen of the state,
/// all at once, cost the store one read of the state and one rendering of
/// each answer; with no change since, loading again costs nothing more.
async fn loaders_arriving_together_cost_one_read(db: &TestDb) {
    let s = Arc::new(sale(db).await);
    let room = s.room("flight").await;
    let entries: Vec<String> = {
        let mut v = Vec::new();
        for _ in 0..16 {
            v.push(s.entered(&room).await);
        }
        v
    };
    let r = s
        .call(
            "POST",
            &format!("/api/{room}/performances/night/holds"),
            &entries[0],
            &[],
            Some(json!({"seats": ["A-1-1"]})),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.json);

    let before = s.booking.seat_map_work();
    let mut tasks = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        for what in ["seats", "state"] {
            let (s, entry, room) = (s.clone(), entry.clone(), room.clone());
            tasks.push(tokio::spawn(async move {
                let uri = format!("/api/{room}/performances/night/{what}");
                let r = s.call("GET", &uri, &entry, &[], None).await;
                assert_eq!(r.status, 200, "loader {i} {what}: {}", r.json);
                r.headers["etag"].clone()
            }));
        }
    }
    let mut tags = Vec::new();
    for t in tasks {
        tags.push(t.await.unwrap());
    }
    let after = s.booking.seat_map_work();
    assert_eq!(after.reads - before.reads, 1, "one read of the state");
    assert_eq!(
        after.renders - before.renders,
        2,
        "one listing and one state written"
    );
    assert!(tags.iter().all(|t| *t == tags[0]), "{tags:?}");

    // Nothing changed: more loads share the same answers.
    let (listing, _) = s.both_ways(&room, &entries[1]).await;
    assert_eq!(listing[0]["state"], "held");
    assert_eq!(s.booking.seat_map_work(), after);
}

/// A session loads the map at most its burst at once: then 429
/// `rate_limited` with `Retry-After`. A conditional load counts too (its
/// tag costs reads), and `If-None-Match: *` is no way around it; another
/// session is not affected.
/// (One load a minute: none comes back while the test runs.)
async fn map_loads_past_the_limit_are_refused(db: &TestDb) {
    let s = sale_with(db, |state| state.with_seat_map_per_minute(1)).await;
    let room = s.room("limit").await;
    let (greedy, other) = (s.entered(&room).await, s.entered(&room).await);
    let uri = format!("/api/{room}/performances/night/state");
    let mut etag = String::new();
    for i in 0..origin::limits::map_loads::SEAT_MAP_BURST {
        let what = if i % 2 == 0 { "state" } else { "seats" };
        let r = s.get(&room, what, &greedy).await;
        etag = r.headers["etag"].to_str().unwrap().to_owned();
    }
    for what in ["state", "seats", "layout"] {
        let r = s
            .call(
                "GET",
                &format!("/api/{room}/performances/night/{what}"),
                &greedy,
                &[],
                None,
            )
            .await;
        assert_eq!(r.status, 429, "{what}: {}", r.json);
        assert_eq!(r.error_code(), "rate_limited");
        let wait: u64 = r.headers["retry-after"].to_str().unwrap().parse().unwrap();
        assert!((1..=60).contains(&wait), "{wait}");
    }
    for tag in [etag.as_str(), "*"] {
        let r = s
            .call("GET", &uri, &greedy, &[("if-none-match", tag)], None)
            .await;
        assert_eq!(r.status, 429, "{tag}: the tag costs reads too");
    }
    // `*` names no state: another session gets the map, not a 304.
    let r = s
        .call("GET", &uri, &other, &[("if-none-match", "*")], None)
        .await;
    assert_eq!(r.status, 200);
    s.get(&room, "state", &other).await;
}

/// With `Accept-Encoding: gzip` the listing, the state and the seat page
/// come gzipped (the same bytes once inflated); without it, plain. A queue
/// status answer is never compressed, whatever the client accepts.
async fn the_map_is_gzipped_and_status_is_not(db: &TestDb) {
    let s = sale(db).await;
    let room = s.room("gzip").await;
    let entry = s.entered(&room).await;
    let gzip = [("accept-encoding", "gzip, br")];
    for what in ["seats", "state", "layout"] {
        let uri = format!("/api/{room}/performances/night/{what}");
        let (status, head, plain) = s.raw(&uri, &entry, &[]).await;
        assert_eq!(status, 200);
        assert!(head.get("content-encoding").is_none(), "{what}");
        let (status, head, packed) = s.raw(&uri, &entry, &gzip).await;
        assert_eq!(status, 200);
        assert_eq!(head["content-encoding"], "gzip", "{what}");
        assert_eq!(head["vary"], "accept-encoding");
        let mut inflated = Vec::new();
        flate2::read::GzDecoder::new(&packed[..])
            .read_to_end(&mut inflated)
            .unwrap();
        assert_eq!(inflated, plain, "{what}");
    }
    let (status, head, _) = s.raw(&format!("/book/{room}/"), &entry, &gzip).await;
    assert_eq!(status, 200);
    assert_eq!(head["content-encoding"], "gzip", "the seat page");

    let r = s.api.join(&room, None).await;
    let ticket = r.ticket();
    let req = Request::builder()
        .uri(format!("/queue/{room}/status"))
        .header("host", "127.0.0.1:8080")
        .header("authorization", format!("Bearer {ticket}"))
        .header("accept-encoding", "gzip")
        .body(Body::empty())
        .unwrap();
    let response = s.api.app.clone().oneshot(req).await.unwrap();
    assert_eq!(response.status(), 200);
    assert!(response.headers().get("content-encoding").is_none());
    let body = response.into_body().collect().await.unwrap().to_bytes();
    let status: Value = serde_json::from_slice(&body).unwrap();
    assert!(status["state"].is_string(), "{status}");
}
