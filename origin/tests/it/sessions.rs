//! One admission does not serve a crowd: entry tokens are short-lived and
//! renewed only while the session runs (by status and by protected
//! answers), so a copied token dies within its lifetime once the session
//! ends; a session used from more addresses than the room allows is ended.

use super::STORE;
use std::sync::Arc;

use crate::common::booking::{Kind, TestDb};
use crate::common::{Api, Reply, admin_state, make_room, settings, test_store, unix_now};
use axum::body::Body;
use axum::http::Request;
use origin::limits::clients::ClientPolicy;
use origin::room::RoomId;
use origin::state::AppState;
use serde_json::json;

const EDGE: &str = "edge-secret-for-tests-0123456789";

async fn setup(db: &TestDb) -> (Api, AppState, RoomId, crate::common::TestStore) {
    let t = test_store(STORE);
    let booking = Arc::new(
        db.store(
            Arc::new(crate::common::booking::CountingPayment::new(
                Default::default(),
            )),
            unix_now() * 1000,
        )
        .await,
    );
    let state = admin_state(t.store.clone())
        .with_booking(booking)
        .with_clients(ClientPolicy::new(Some(EDGE), 0, 0));
    let api = Api::new(state.clone());
    let mut s = settings(10);
    s.entry_seconds = 30;
    s.session_seconds = 600;
    let room = make_room(
        t.store.as_ref(),
        &format!("sess-{:08x}", rand::random::<u32>()),
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
    // The admin call taught this instance the room's rules.
    (api, state, room, t)
}

/// A request as the edge forwards it for a client at `ip`.
async fn from(
    api: &Api,
    method: &str,
    uri: &str,
    ip: &str,
    bearer: Option<&str>,
    entry: Option<&str>,
) -> Reply {
    let mut req = Request::builder()
        .method(method)
        .uri(uri)
        .header("host", "127.0.0.1:8080")
        .header("waiting-room-edge", EDGE)
        .header("cf-connecting-ip", ip);
    if let Some(t) = bearer {
        req = req.header("authorization", format!("Bearer {t}"));
    }
    if let Some(e) = entry {
        req = req.header("entry-token", e);
    }
    api.send(req.body(Body::empty()).unwrap()).await
}

fn renewed_entry(r: &Reply, room: &RoomId) -> Option<String> {
    let prefix = format!("wr_entry_{room}=");
    r.cookies()
        .iter()
        .find_map(|c| {
            c.strip_prefix(&prefix)
                .map(|v| v.split(';').next().unwrap_or("").to_owned())
        })
        .filter(|v| !v.is_empty())
}

fn expiry(token: &str, room: &RoomId) -> u64 {
    crate::common::keys()
        .verify(token, token::Kind::Entry, room.as_str(), unix_now())
        .unwrap()
        .expires_at
}

#[tokio::test]
async fn entry_tokens_are_short_and_renewed_only_while_the_session_runs() {
    let db = TestDb::new(Kind::Sqlite).await;
    let (api, _, room, _t) = setup(&db).await;
    let (ticket, entry) = enter(&api, &room).await;
    let lifetime = expiry(&entry, &room) - unix_now();
    assert!(
        (29..=30).contains(&lifetime),
        "the room's 30 s, not the 600 s session: {lifetime}"
    );

    // Every protected answer sets the cookie again with a fresh token.
    let uri = format!("/api/{room}/performances");
    let r = from(&api, "GET", &uri, "198.51.100.1", None, Some(&entry)).await;
    assert_eq!(r.status, 200);
    let renewed = renewed_entry(&r, &room).expect("the answer renews the entry cookie");
    assert!(expiry(&renewed, &room) >= expiry(&entry, &room));
    let r = from(
        &api,
        "GET",
        &format!("/queue/{room}/status"),
        "198.51.100.1",
        Some(&ticket),
        None,
    )
    .await;
    assert!(r.json["entry_token"].is_string(), "status renews too");

    // A hold lasts its hold_seconds (420 s in a 600 s session), not the
    // short token's lifetime.
    let r = api
        .send(
            Request::builder()
                .method("POST")
                .uri(format!("/api/{room}/performances/night/holds"))
                .header("host", "127.0.0.1:8080")
                .header("waiting-room-edge", EDGE)
                .header("cf-connecting-ip", "198.51.100.1")
                .header("entry-token", &entry)
                .body(Body::from(r#"{"seats": ["A-1-1"]}"#))
                .unwrap(),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.json);
    let ends = time::OffsetDateTime::parse(
        r.json["expires_at"].as_str().unwrap(),
        &time::format_description::well_known::Rfc3339,
    )
    .unwrap()
    .unix_timestamp() as u64;
    assert!(
        ends >= unix_now() + 410,
        "the hold's own length: {}",
        ends - unix_now()
    );

    // Once the session ends, nothing renews and the copies are refused.
    let r = from(
        &api,
        "POST",
        &format!("/queue/{room}/leave"),
        "198.51.100.1",
        Some(&ticket),
        None,
    )
    .await;
    assert_eq!(r.status, 204);
    for token in [&entry, &renewed] {
        let r = from(&api, "GET", &uri, "198.51.100.1", None, Some(token)).await;
        assert_eq!((r.status.as_u16(), r.error_code()), (401, "invalid_entry"));
        assert!(
            renewed_entry(&r, &room).is_none(),
            "no renewal after the end"
        );
    }
    let r = from(
        &api,
        "GET",
        &format!("/book/{room}/"),
        "198.51.100.1",
        None,
        Some(&entry),
    )
    .await;
    assert!(
        renewed_entry(&r, &room).is_none(),
        "the page renews nothing either"
    );
}

#[tokio::test]
async fn a_session_shared_among_many_addresses_is_ended() {
    let db = TestDb::new(Kind::Sqlite).await;
    let (api, _, room, _t) = setup(&db).await;
    let (ticket, entry) = enter(&api, &room).await;
    let status = format!("/queue/{room}/status");
    // The owner and two more addresses (a phone moving networks) are fine.
    for ip in [
        "198.51.100.1",
        "198.51.100.2",
        "198.51.100.3",
        "198.51.100.1",
    ] {
        let r = from(&api, "GET", &status, ip, Some(&ticket), None).await;
        assert_eq!(r.json["state"], "admitted", "{ip}");
    }
    // A fourth address: one admission serving a crowd. The session ends.
    let r = from(&api, "GET", &status, "203.0.113.77", Some(&ticket), None).await;
    assert_eq!(r.json["state"], "expired", "{}", r.json);
    assert!(r.json["entry_token"].is_null());
    let r = from(
        &api,
        "GET",
        &format!("/api/{room}/performances"),
        "198.51.100.1",
        None,
        Some(&entry),
    )
    .await;
    assert_eq!((r.status.as_u16(), r.error_code()), (401, "invalid_entry"));
    let metrics = api.call("GET", "/metrics", None).await;
    let text = metrics.json.as_str().unwrap_or_default().to_owned();
    assert!(
        text.contains(&format!("wr_sessions_shared_total{{room=\"{room}\"}}")),
        "counted in /metrics"
    );
}

/// A ticket posted for a crowd, shown at join rather than at status: each
/// join from another address counts as a status does, and past the room's
/// addresses the session ends; no copy gets an entry token after that.
#[tokio::test]
async fn a_ticket_shown_again_at_join_counts_its_address() {
    let db = TestDb::new(Kind::Sqlite).await;
    let (api, _, room, _t) = setup(&db).await;
    let join = format!("/queue/{room}/join");
    let r = from(&api, "POST", &join, "198.51.100.1", None, None).await;
    assert_eq!(r.json["state"], "admitted", "{}", r.json);
    let ticket = r.ticket();
    // The owner's page polls (its address counts from its first status).
    let r = from(
        &api,
        "GET",
        &format!("/queue/{room}/status"),
        "198.51.100.1",
        Some(&ticket),
        None,
    )
    .await;
    assert_eq!(r.json["state"], "admitted");
    let seq = crate::common::seq_of(&ticket, &room);
    let (mut minted, mut ended) = (0, 0);
    for i in 2..=20 {
        let ip = format!("198.51.100.{i}");
        let r = from(&api, "POST", &join, &ip, Some(&ticket), None).await;
        assert_eq!(r.status, 200, "{}", r.json);
        let same_place = r.json["ticket"]
            .as_str()
            .is_some_and(|t| crate::common::seq_of(t, &room) == seq);
        if same_place && r.json["entry_token"].is_string() {
            minted += 1;
        } else if r.json["state"] == "expired" {
            assert!(r.json["ticket"].is_null(), "no ticket for an ended place");
            ended += 1;
        } else {
            // Once the session ended, the ticket is a gone place's: a join
            // takes a new place, as anyone's.
            assert!(!same_place, "{ip}: {}", r.json);
        }
    }
    // The owner's address and two more are allowed (settings' default: 3).
    assert_eq!(minted, 2, "entry tokens of the shared session handed out");
    assert_eq!(ended, 1, "the session ends once");
    let r = from(
        &api,
        "GET",
        &format!("/queue/{room}/status"),
        "198.51.100.1",
        Some(&ticket),
        None,
    )
    .await;
    assert_eq!(r.json["state"], "expired", "the shared session ended");
}

#[tokio::test]
async fn the_booking_api_counts_addresses_too() {
    let db = TestDb::new(Kind::Sqlite).await;
    let (api, _, room, _t) = setup(&db).await;
    let (_, entry) = enter(&api, &room).await;
    three_addresses_then_refused(&api, &format!("/api/{room}/performances"), &entry).await;
}

/// The room of a protected path spelled with percent-encoding is the room
/// it spells (as the handlers read it): its addresses are counted all the
/// same, or a shared token would serve any crowd through encoded paths.
#[tokio::test]
async fn the_booking_api_counts_addresses_whatever_the_room_spelling() {
    let db = TestDb::new(Kind::Sqlite).await;
    let (api, _, room, _t) = setup(&db).await;
    let (_, entry) = enter(&api, &room).await;
    let spelled = format!(
        "%{:02X}{}",
        room.as_str().as_bytes()[0],
        &room.as_str()[1..]
    );
    three_addresses_then_refused(&api, &format!("/api/{spelled}/performances"), &entry).await;
}

/// Joins `room` from one address, let in at once: the ticket and the
/// entry token.
async fn enter(api: &Api, room: &RoomId) -> (String, String) {
    let r = from(
        api,
        "POST",
        &format!("/queue/{room}/join"),
        "198.51.100.1",
        None,
        None,
    )
    .await;
    let entry = r.json["entry_token"].as_str().unwrap().to_owned();
    (r.ticket(), entry)
}

/// `uri` with `entry` from four more addresses: the room's three are
/// served, the fourth ends the session.
async fn three_addresses_then_refused(api: &Api, uri: &str, entry: &str) {
    for (i, ip) in ["10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"]
        .into_iter()
        .enumerate()
    {
        let r = from(api, "GET", uri, ip, None, Some(entry)).await;
        let expected = if i < 3 { 200 } else { 401 };
        assert_eq!(r.status, expected, "{ip}: {}", r.json);
    }
}

/// A request whose head is too large is refused before anything else
/// reads it: it counts no address for the session it names (nor renews
/// its token), so oversized copies of a token cannot end another's session.
#[tokio::test]
async fn an_oversized_request_counts_no_address() {
    let db = TestDb::new(Kind::Sqlite).await;
    let (api, _, room, _t) = setup(&db).await;
    let (_, entry) = enter(&api, &room).await;
    let uri = format!("/api/{room}/performances");
    let padding = "x".repeat(20_000);
    for ip in ["10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"] {
        let req = Request::builder()
            .method("GET")
            .uri(&uri)
            .header("host", "127.0.0.1:8080")
            .header("waiting-room-edge", EDGE)
            .header("cf-connecting-ip", ip)
            .header("entry-token", &entry)
            .header("x-padding", &padding)
            .body(Body::empty())
            .unwrap();
        let r = api.send(req).await;
        assert_eq!(r.status, 431, "{ip}: {}", r.json);
        assert!(renewed_entry(&r, &room).is_none(), "{ip}: renewed");
    }
    let r = from(&api, "GET", &uri, "10.0.0.5", None, Some(&entry)).await;
    assert_eq!(r.status, 200, "{}", r.json);
}
