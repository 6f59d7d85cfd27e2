//! Tickets and entry tokens at the origin: every kind of bad token is
//! refused with 401, and a key rotation keeps old tokens valid until their
//! key is removed.

use super::STORE;
use crate::common::*;
use axum::body::Body;
use axum::http::{HeaderMap, Request};
use origin::error::ApiError;
use origin::http::entry::require_entry;
use origin::room::RoomSettings;
use origin::state::AppState;
use token::{Claims, Keyring, Kind};

fn claims(kind: Kind, room: &str, seq: u64, expires_at: u64) -> Claims {
    Claims {
        kind,
        room: room.to_owned(),
        visitor: 7,
        seq,
        issued_at: unix_now() - 10,
        expires_at,
        account: None,
    }
}

#[tokio::test]
async fn bad_tickets_are_refused_with_401_and_change_nothing() {
    let t = test_store(STORE);
    let room = make_room(t.store.as_ref(), "alpha", RoomSettings::default()).await;
    make_room(t.store.as_ref(), "beta", RoomSettings::default()).await;
    let api = Api::new(state(t.store.clone()));
    let good = api.join(&room, None).await.ticket();
    let beta_ticket = api.join(&crate::common::room("beta"), None).await.ticket();
    let entry = api.join(&room, None).await; // capacity 100: admitted at once
    let entry_token = entry.json["entry_token"].as_str().unwrap().to_owned();

    let mut forged_mac = good.clone();
    let last = forged_mac.pop().unwrap();
    forged_mac.push(if last == 'A' { 'B' } else { 'A' });
    let (payload, mac) = good.split_once('.').unwrap();
    let mut p = payload.as_bytes().to_vec();
    p[10] = if p[10] == b'a' { b'b' } else { b'a' };
    let forged_payload = format!("{}.{mac}", String::from_utf8(p).unwrap());
    let other_key = Keyring::parse("k1:another-secret-0123456789").unwrap();
    let wrong_secret = other_key.sign(&claims(Kind::Ticket, "alpha", 1, unix_now() + 600));
    let unknown_kid = Keyring::parse("k9:test-secret-0123456789abcdef")
        .unwrap()
        .sign(&claims(Kind::Ticket, "alpha", 1, unix_now() + 600));
    let expired = keys().sign(&claims(Kind::Ticket, "alpha", 1, unix_now() - 1));

    let cases = [
        ("forged mac", forged_mac),
        ("forged payload", forged_payload),
        ("wrong secret", wrong_secret),
        ("unknown key", unknown_kid),
        ("expired", expired),
        ("truncated", good[..good.len() / 2].to_owned()),
        ("wrong room", beta_ticket),
        ("entry token as ticket", entry_token),
        ("garbage", "not a token".to_owned()),
        ("oversized", "a".repeat(4_000)),
    ];
    let before = t.store.figures(&room).await.unwrap();
    for (what, bad) in &cases {
        for r in [
            api.status(&room, bad).await,
            api.join(&room, Some(bad)).await,
            api.leave(&room, bad).await,
        ] {
            assert_eq!(r.status, 401, "{what}: {}", r.json);
            assert_eq!(r.error_code(), "invalid_ticket", "{what}");
        }
    }
    assert_eq!(
        t.store.figures(&room).await.unwrap(),
        before,
        "state untouched"
    );
    assert_eq!(
        api.status(&room, &good).await.status,
        200,
        "the good ticket still works"
    );
}

#[tokio::test]
async fn a_refused_ticket_cookie_is_deleted_so_the_browser_can_join_afresh() {
    let t = test_store(STORE);
    let room = make_room(t.store.as_ref(), "crumb", RoomSettings::default()).await;
    let api = Api::new(state(t.store.clone()));
    let r = api
        .send(
            Request::post(format!("/queue/{room}/join"))
                .header("cookie", "wr_ticket_crumb=forged.value")
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(r.status, 401);
    // Deleted with the attributes it was set with, as every other cookie
    // the origin deletes.
    assert!(
        r.cookies()
            .iter()
            .any(|c| c == "wr_ticket_crumb=; HttpOnly; SameSite=Lax; Path=/; Max-Age=0"),
        "{:?}",
        r.cookies()
    );
    let missing = api
        .call("GET", &format!("/queue/{room}/status"), None)
        .await;
    assert_eq!(missing.status, 401);
    assert_eq!(missing.error_code(), "missing_ticket");
    let basic = api
        .send(
            Request::get(format!("/queue/{room}/status"))
                .header("authorization", "Basic dXNlcjpwYXNz")
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(basic.status, 401);
}

/// A browser on a site behind HTTP Basic auth sends `Authorization: Basic`
/// with every request: its ticket cookie still counts (the contract: the
/// cookie works on every queue route). The Bearer scheme is matched in any
/// case (RFC 9110).
#[tokio::test]
async fn the_ticket_cookie_counts_beside_basic_auth_and_bearer_in_any_case() {
    let t = test_store(STORE);
    let room = make_paused_room(t.store.as_ref(), "basic", RoomSettings::default()).await;
    let api = Api::new(state(t.store.clone()));
    let ticket = api.join(&room, None).await.ticket();
    let with = |authorization: &str, cookie: bool| {
        let mut req =
            Request::get(format!("/queue/{room}/status")).header("authorization", authorization);
        if cookie {
            req = req.header("cookie", format!("wr_ticket_{room}={ticket}"));
        }
        req.body(Body::empty()).unwrap()
    };
    let r = api.send(with("Basic dXNlcjpwYXNz", true)).await;
    assert_eq!(r.status, 200, "{}", r.json);
    assert_eq!(r.json["position"], 1);
    for scheme in ["bearer", "BEARER", "Bearer"] {
        let r = api.send(with(&format!("{scheme} {ticket}"), false)).await;
        assert_eq!(r.status, 200, "{scheme}: {}", r.json);
    }
    // A Bearer header wins over the cookie, and an empty one is refused.
    let r = api.send(with("Bearer ", true)).await;
    assert_eq!(r.status, 401);
    // The first visit behind Basic auth: no ticket yet, a join gets one.
    let first = Request::post(format!("/queue/{room}/join"))
        .header("authorization", "Basic dXNlcjpwYXNz")
        .header("cookie", "session=abc")
        .body(Body::empty())
        .unwrap();
    let r = api.send(first).await;
    assert_eq!(r.status, 200, "{}", r.json);
    assert!(r.json["ticket"].is_string());
}

#[tokio::test]
async fn during_a_rotation_old_tokens_stay_valid_until_their_key_is_removed() {
    let t = test_store(STORE);
    let room = make_paused_room(t.store.as_ref(), "rotate", RoomSettings::default()).await;
    let old = Api::new(state(t.store.clone()));
    let ticket = old.join(&room, None).await.ticket();

    let both =
        Keyring::parse("k2:newer-secret-0123456789abcdef,k1:test-secret-0123456789abcdef").unwrap();
    let rotating = Api::new(AppState::new(t.store.clone(), both));
    let r = rotating.status(&room, &ticket).await;
    assert_eq!(r.status, 200, "{}", r.json);
    assert_eq!(r.json["position"], 1);
    // Rejoining re-signs the same place with the new key.
    let fresh = rotating.join(&room, Some(&ticket)).await.ticket();
    assert_eq!(
        keys().verify(&fresh, Kind::Ticket, "rotate", unix_now()),
        Err(token::TokenError::UnknownKey),
        "signed by k2"
    );

    let only_new = Keyring::parse("k2:newer-secret-0123456789abcdef").unwrap();
    let rotated = Api::new(AppState::new(t.store.clone(), only_new));
    let r = rotated.status(&room, &ticket).await;
    assert_eq!(r.status, 401, "k1 removed: its tokens are refused");
    let r = rotated.status(&room, &fresh).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json["position"], 1, "the same place, under the new key");
}

#[tokio::test]
async fn entry_tokens_are_checked_for_room_kind_expiry_and_a_running_session() {
    let t = test_store(STORE);
    let room = make_room(t.store.as_ref(), "inside", RoomSettings::default()).await;
    make_room(t.store.as_ref(), "elsewhere", RoomSettings::default()).await;
    let st = state(t.store.clone());
    let api = Api::new(st.clone());
    let admitted = api.join(&room, None).await;
    let entry = admitted.json["entry_token"].as_str().unwrap().to_owned();
    let seq = seq_of(&admitted.ticket(), &room);

    let check = |token: String, room: &'static str, st: AppState| async move {
        let mut headers = HeaderMap::new();
        headers.insert("entry-token", token.parse().unwrap());
        require_entry(&st, &crate::common::room(room), &headers, unix_now()).await
    };
    assert!(check(entry.clone(), "inside", st.clone()).await.is_ok());
    // By cookie too.
    let mut by_cookie = HeaderMap::new();
    by_cookie.insert(
        "cookie",
        format!("wr_entry_inside={entry}").parse().unwrap(),
    );
    assert!(
        require_entry(&st, &room, &by_cookie, unix_now())
            .await
            .is_ok()
    );

    let expired = keys().sign(&claims(Kind::Entry, "inside", seq, unix_now() - 1));
    let ticket_not_entry = admitted.ticket();
    for (what, token, in_room) in [
        ("wrong room", entry.clone(), "elsewhere"),
        ("expired", expired, "inside"),
        ("a ticket", ticket_not_entry, "inside"),
        ("truncated", entry[..20].to_owned(), "inside"),
    ] {
        let r = check(token, in_room, st.clone()).await;
        assert!(matches!(r, Err(ApiError::InvalidEntry(_))), "{what}: {r:?}");
    }
    let none = require_entry(&st, &room, &HeaderMap::new(), unix_now()).await;
    assert!(matches!(none, Err(ApiError::MissingEntry)));

    // Leaving ends the session: the genuine, unexpired token is refused.
    api.leave(&room, &admitted.ticket()).await;
    let r = check(entry, "inside", st.clone()).await;
    assert!(matches!(r, Err(ApiError::SessionEnded)), "{r:?}");
}
