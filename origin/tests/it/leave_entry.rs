//! Leaving with the entry token: how the edge ends a visit when the site
//! answers `Waiting-Room-Command: revoke`. Without a ticket, the session's
//! entry token (header or cookie) ends that session: its slot goes to the
//! next waiter, its holds end, and the token opens nothing more. A forged,
//! expired or foreign entry token, or one sent cross-site, changes nothing;
//! a ticket, when one is given, is what counts.

use super::STORE;
use std::sync::Arc;

use crate::common::booking::{CountingPayment, Kind, TestDb};
use crate::common::{
    Api, Reply, admin_state, keys, make_room, seq_of, settings, test_store, unix_now,
};
use axum::body::Body;
use axum::http::Request;
use origin::queue::QueueStore;
use origin::room::{RoomId, RoomSettings};
use serde_json::json;
use token::{Claims, Keyring};

/// The app on a fresh store and SQLite database, with a room of capacity 1
/// selling one performance (`night`, four seats).
async fn sale(db: &TestDb) -> (Api, Arc<dyn QueueStore>, RoomId, crate::common::TestStore) {
    let t = test_store(STORE);
    let booking = Arc::new(
        db.store(
            Arc::new(CountingPayment::new(Default::default())),
            unix_now() * 1000,
        )
        .await,
    );
    let state = admin_state(t.store.clone()).with_booking(booking);
    let api = Api::new(state);
    let s = RoomSettings {
        session_seconds: 600,
        ..settings(1)
    };
    let room = make_room(
        t.store.as_ref(),
        &format!("revoke-{:08x}", rand::random::<u32>()),
        s,
    )
    .await;
    let body = json!({
        "title": "Night", "starts_at": "2030-05-01T19:00:00Z",
        "sections": [{"name": "A", "rows": 1, "seats_per_row": 4, "price": 100}]
    });
    let r = api
        .admin(
            "PUT",
            &format!("/admin/rooms/{room}/performances/night"),
            body.to_string(),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.json);
    (api, t.store.clone(), room, t)
}

/// A request with the given headers and body.
async fn send(api: &Api, method: &str, uri: &str, headers: &[(&str, &str)], body: &str) -> Reply {
    let mut req = Request::builder()
        .method(method)
        .uri(uri)
        .header("host", "127.0.0.1:8080");
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    api.send(req.body(Body::from(body.to_owned())).unwrap())
        .await
}

/// `POST /queue/{room}/leave` with only the given headers.
async fn leave(api: &Api, room: &RoomId, headers: &[(&str, &str)]) -> Reply {
    send(api, "POST", &format!("/queue/{room}/leave"), headers, "").await
}

/// A booking route that needs a running session.
async fn performances(api: &Api, room: &RoomId, entry: &str) -> Reply {
    send(
        api,
        "GET",
        &format!("/api/{room}/performances"),
        &[("entry-token", entry)],
        "",
    )
    .await
}

/// (available, held, booked) of `night`.
async fn counts(api: &Api, room: &RoomId) -> (u64, u64, u64) {
    let r = api
        .admin(
            "GET",
            &format!("/admin/rooms/{room}/performances/night"),
            Body::empty(),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.json);
    let n = |k: &str| r.json[k].as_u64().unwrap();
    (n("available"), n("held"), n("booked"))
}

/// Joins; returns the answer's ticket and entry token (if admitted).
async fn join(api: &Api, room: &RoomId) -> (String, Option<String>) {
    let r = api.join(room, None).await;
    assert_eq!(r.status, 200, "{}", r.json);
    (
        r.ticket(),
        r.json["entry_token"].as_str().map(str::to_owned),
    )
}

fn deletes_the_cookies(r: &Reply, room: &RoomId) {
    for name in [format!("wr_ticket_{room}=;"), format!("wr_entry_{room}=;")] {
        assert!(
            r.cookies().iter().any(|c| c.starts_with(&name)),
            "{name} in {:?}",
            r.cookies()
        );
    }
}

#[tokio::test]
async fn the_entry_token_ends_its_session_and_the_next_waiter_gets_in() {
    let db = TestDb::new(Kind::Sqlite).await;
    let (api, store, room, _t) = sale(&db).await;
    let (_, inside) = join(&api, &room).await;
    let inside = inside.expect("an empty room admits at once");
    let (next, none) = join(&api, &room).await;
    assert!(none.is_none(), "capacity 1: the second waits");
    let r = send(
        &api,
        "POST",
        &format!("/api/{room}/performances/night/holds"),
        &[("entry-token", &inside)],
        r#"{"seats": ["A-1-1"]}"#,
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.json);
    assert_eq!(counts(&api, &room).await, (3, 1, 0));

    // The edge's call: the entry token alone, as a header.
    let r = leave(&api, &room, &[("entry-token", &inside)]).await;
    assert_eq!(r.status, 204, "{}", r.json);
    deletes_the_cookies(&r, &room);
    assert_eq!(
        counts(&api, &room).await,
        (4, 0, 0),
        "the session's hold ended with it"
    );
    let r = performances(&api, &room, &inside).await;
    assert_eq!((r.status.as_u16(), r.error_code()), (401, "invalid_entry"));
    assert!(
        !r.cookies()
            .iter()
            .any(|c| c.starts_with(&format!("wr_entry_{room}="))),
        "no renewal: {:?}",
        r.cookies()
    );

    // The slot went free: the next tick lets the waiter in.
    let report = store.tick(&room).await.unwrap();
    assert_eq!(report.admitted, vec![seq_of(&next, &room)]);
    let status = api.status(&room, &next).await;
    assert_eq!(status.json["state"], "admitted", "{}", status.json);
    let admitted = status.json["entry_token"].as_str().unwrap().to_owned();

    // Again: nothing left to end, still 204, and the new visitor stays in.
    let r = leave(&api, &room, &[("entry-token", &inside)]).await;
    assert_eq!(r.status, 204, "a second leave is a no-op: {}", r.json);
    assert_eq!(performances(&api, &room, &admitted).await.status, 200);
    assert_eq!(store.figures(&room).await.unwrap().active, 1);

    // A browser's cookie works the same.
    let cookie = format!("wr_entry_{room}={admitted}");
    let r = leave(&api, &room, &[("cookie", &cookie)]).await;
    assert_eq!(r.status, 204, "{}", r.json);
    let r = performances(&api, &room, &admitted).await;
    assert_eq!((r.status.as_u16(), r.error_code()), (401, "invalid_entry"));
    assert_eq!(api.status(&room, &next).await.json["state"], "expired");
}

#[tokio::test]
async fn a_bad_entry_token_or_a_cross_site_call_changes_nothing() {
    let db = TestDb::new(Kind::Sqlite).await;
    let (api, store, room, _t) = sale(&db).await;
    let (ticket, inside) = join(&api, &room).await;
    let inside = inside.expect("admitted at once");
    let claims = keys()
        .verify(&inside, token::Kind::Entry, room.as_str(), unix_now())
        .unwrap();
    let now = unix_now();
    let signed = |keyring: &Keyring, kind, room: &str, expires_at| {
        keyring.sign(&Claims {
            kind,
            room: room.to_owned(),
            expires_at,
            issued_at: now - 120,
            ..claims.clone()
        })
    };
    let foreign = Keyring::parse("k1:someone-elses-secret-0123456789").unwrap();
    let other = make_room(store.as_ref(), &format!("{room}-other"), settings(1)).await;
    let refused = [
        (
            "forged",
            signed(&foreign, token::Kind::Entry, room.as_str(), now + 60),
        ),
        (
            "expired",
            signed(&keys(), token::Kind::Entry, room.as_str(), now - 60),
        ),
        (
            "another room's",
            signed(&keys(), token::Kind::Entry, other.as_str(), now + 60),
        ),
        ("a ticket as an entry token", ticket.clone()),
        ("garbage", "not-a-token".to_owned()),
    ];
    for (what, token) in &refused {
        let r = leave(&api, &room, &[("entry-token", token)]).await;
        assert_eq!(
            (r.status.as_u16(), r.error_code()),
            (401, "invalid_entry"),
            "{what}"
        );
        let cookie = format!("wr_entry_{room}={token}");
        let r = leave(&api, &room, &[("cookie", &cookie)]).await;
        assert_eq!(
            (r.status.as_u16(), r.error_code()),
            (401, "invalid_entry"),
            "{what} (cookie)"
        );
    }

    // Sent from another site's page: refused before anything is read.
    let r = leave(
        &api,
        &room,
        &[("entry-token", &inside), ("sec-fetch-site", "cross-site")],
    )
    .await;
    assert_eq!((r.status.as_u16(), r.error_code()), (403, "cross_site"));
    let r = leave(
        &api,
        &room,
        &[("entry-token", &inside), ("origin", "https://evil.example")],
    )
    .await;
    assert_eq!((r.status.as_u16(), r.error_code()), (403, "cross_site"));

    // A ticket wins over the entry token: a bad one is refused as a ticket.
    let forged_ticket = signed(&foreign, token::Kind::Ticket, room.as_str(), now + 3600);
    let r = leave(
        &api,
        &room,
        &[
            ("entry-token", &inside),
            ("authorization", &format!("Bearer {forged_ticket}")),
        ],
    )
    .await;
    assert_eq!((r.status.as_u16(), r.error_code()), (401, "invalid_ticket"));

    // A room that does not exist is 404 whatever the token.
    let r = send(
        &api,
        "POST",
        &format!("/queue/{room}-nowhere/leave"),
        &[("entry-token", &inside)],
        "",
    )
    .await;
    assert_eq!((r.status.as_u16(), r.error_code()), (404, "unknown_room"));

    // None of it ended the session.
    assert_eq!(performances(&api, &room, &inside).await.status, 200);
    assert_eq!(api.status(&room, &ticket).await.json["state"], "admitted");
    assert_eq!(store.figures(&room).await.unwrap().active, 1);
}
