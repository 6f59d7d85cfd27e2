//! Accounts through the real router: a room's `identity` setting, the
//! identity tokens joins carry (header or cookie), one place per account
//! however many browsers ask at once, every refusal 401 with nothing
//! changed, the account riding in tickets and entry tokens, the admin API
//! refusing identity on an origin without keys, and booking keeping an
//! account to its seats and its browsers to one hold.

use super::STORE;
use std::sync::Arc;

use crate::common::booking::{CountingPayment, Kind as DbKind, TestDb};
use crate::common::*;
use axum::body::Body;
use axum::http::Request;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use origin::identity::Identities;
use origin::limits::clients::ClientPolicy;
use origin::queue::QueueStore;
use origin::room::{IdentityMode, RoomId, RoomSettings};
use origin::state::AppState;
use serde_json::{Value, json};
use token::{Claims, IdentityKeys, Kind, ed25519_public_key, sign_ed25519, sign_hs256};

/// The operator's HS256 key (`--identity-keys site1:...`).
const HS_KID: &str = "site1";
const HS_SECRET: &[u8] = b"identity-secret-of-site-0123456789";
/// The operator's Ed25519 key (`--identity-public-keys ed1:...`); the
/// origin gets the public half only.
const ED_KID: &str = "ed1";
const ED_SEED: [u8; 32] = [7; 32];

fn identities() -> Identities {
    let hs = format!("{HS_KID}:{}", std::str::from_utf8(HS_SECRET).unwrap());
    let ed = format!("{ED_KID}:{}", ed25519_public_key(&ED_SEED));
    let keys = IdentityKeys::parse(Some(&hs), Some(&ed)).unwrap();
    Identities::new(Some(keys), b"some hash key 0123456789")
}

/// A state with the identity keys and the admin API.
fn identified_state(store: Arc<dyn QueueStore>) -> AppState {
    admin_state(store).with_identities(identities())
}

/// Claims for `sub` in `aud`, valid for ten minutes.
fn claims(sub: &str, aud: &str) -> Value {
    json!({"sub": sub, "aud": aud, "iat": unix_now(), "exp": unix_now() + 600})
}

/// A valid HS256 identity token of `sub` for `room`.
fn hs(sub: &str, room: &RoomId) -> String {
    sign_hs256(HS_KID, HS_SECRET, &claims(sub, room.as_str()))
}

/// A valid EdDSA identity token of `sub` for `room`.
fn ed(sub: &str, room: &RoomId) -> String {
    sign_ed25519(ED_KID, &ED_SEED, &claims(sub, room.as_str()))
}

fn b64(json: &Value) -> String {
    URL_SAFE_NO_PAD.encode(json.to_string())
}

/// A room of `mode` with `capacity`, paused (nobody let in) when `paused`.
async fn identity_room(
    store: &dyn QueueStore,
    id: &str,
    mode: IdentityMode,
    capacity: u32,
    paused: bool,
) -> RoomId {
    let s = RoomSettings {
        identity: mode,
        ..settings(capacity)
    };
    if paused {
        make_paused_room(store, id, s).await
    } else {
        make_room(store, id, s).await
    }
}

/// (waiting, places given) of the room.
async fn figures(store: &dyn QueueStore, room: &RoomId) -> (u64, u64) {
    let f = store.figures(room).await.unwrap();
    (f.waiting, f.places_given)
}

/// The claims of a ticket or entry token of `room`.
fn claims_of(token: &str, kind: Kind, room: &RoomId) -> Claims {
    keys()
        .verify(token, kind, room.as_str(), unix_now())
        .unwrap()
}

/// Whether the answer sets a ticket or entry cookie.
fn sets_a_token(r: &Reply) -> bool {
    r.cookies()
        .iter()
        .any(|c| c.starts_with("wr_ticket_") || c.starts_with("wr_entry_"))
}

/// A hundred browsers of one account join at once, half with the header and
/// half with the cookie, none with a ticket: one place, every answer a
/// ticket for it. Then two accounts at once: two places.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_account_from_a_hundred_browsers_holds_one_place() {
    for mode in [IdentityMode::Required, IdentityMode::Optional] {
        let t = test_store(STORE);
        let api = Arc::new(Api::new(identified_state(t.store.clone())));
        let room = identity_room(t.store.as_ref(), "crowd", mode, 10, true).await;
        let (alice, bob) = (hs("alice", &room), hs("bob", &room));

        let joins = |tokens: Vec<String>| {
            let calls: Vec<_> = tokens
                .into_iter()
                .enumerate()
                .map(|(i, jwt)| {
                    let (api, room) = (api.clone(), room.clone());
                    tokio::spawn(async move {
                        let r = if i % 2 == 0 {
                            api.join_as(&room, &jwt).await
                        } else {
                            api.join_as_cookie(&room, &jwt).await
                        };
                        assert_eq!(r.status, 200, "{mode:?} join {i}: {}", r.json);
                        assert_eq!(r.json["state"], "waiting", "{mode:?} join {i}");
                        assert!(
                            r.cookies().iter().any(|c| c.starts_with("wr_ticket_")),
                            "{mode:?} join {i}: its ticket as a cookie"
                        );
                        (jwt, seq_of(&r.ticket(), &room))
                    })
                })
                .collect();
            async move {
                let mut seqs = Vec::new();
                for call in calls {
                    seqs.push(call.await.unwrap());
                }
                seqs
            }
        };

        let seqs = joins(vec![alice.clone(); 100]).await;
        let a = seqs[0].1;
        assert!(
            seqs.iter().all(|(_, s)| *s == a),
            "{mode:?}: one place: {seqs:?}"
        );
        assert_eq!(figures(t.store.as_ref(), &room).await, (1, 1), "{mode:?}");

        let mixed: Vec<String> = (0..100)
            .map(|i| {
                if i % 3 == 0 {
                    bob.clone()
                } else {
                    alice.clone()
                }
            })
            .collect();
        let seqs = joins(mixed).await;
        let b = seqs.iter().find(|(jwt, _)| *jwt == bob).unwrap().1;
        assert_ne!(a, b, "{mode:?}");
        for (jwt, seq) in &seqs {
            assert_eq!(*seq, if *jwt == bob { b } else { a }, "{mode:?}");
        }
        assert_eq!(
            figures(t.store.as_ref(), &room).await,
            (2, 2),
            "{mode:?}: two accounts, two places"
        );
        assert_eq!(t.store.figures(&room).await.unwrap().accounts, 2);
    }
}

/// Every kind of bad identity token, by header and by cookie, is 401
/// `invalid_identity` in a room that reads identities, and changes
/// nothing: no place, no ticket.
#[tokio::test]
async fn bad_identity_tokens_are_refused_and_change_nothing() {
    let t = test_store(STORE);
    let api = Api::new(identified_state(t.store.clone()));
    let required = identity_room(
        t.store.as_ref(),
        "presale",
        IdentityMode::Required,
        10,
        true,
    )
    .await;
    let optional = identity_room(
        t.store.as_ref(),
        "general",
        IdentityMode::Optional,
        10,
        true,
    )
    .await;
    let now = unix_now();

    for room in [&required, &optional] {
        // Someone already in line, so "unchanged" is not "empty".
        let r = api.join_as(room, &hs("first", room)).await;
        assert_eq!(r.status, 200, "{}", r.json);
        let before = figures(t.store.as_ref(), room).await;
        assert_eq!(before, (1, 1));

        let with = |claims: Value| sign_hs256(HS_KID, HS_SECRET, &claims);
        let alg_none = |alg: &str| {
            format!(
                "{}.{}.",
                b64(&json!({"alg": alg, "typ": "JWT", "kid": HS_KID})),
                b64(&claims("mallory", room.as_str()))
            )
        };
        let hs512 = {
            let _ = jsonwebtoken::crypto::CryptoProvider::install_default(
                &jsonwebtoken::crypto::rust_crypto::DEFAULT_PROVIDER,
            );
            let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS512);
            header.kid = Some(HS_KID.to_owned());
            jsonwebtoken::encode(
                &header,
                &claims("mallory", room.as_str()),
                &jsonwebtoken::EncodingKey::from_secret(HS_SECRET),
            )
            .unwrap()
        };
        let public = ed25519_public_key(&ED_SEED);
        let public_raw = URL_SAFE_NO_PAD.decode(&public).unwrap();
        let mut padded = claims("mallory", room.as_str());
        padded["pad"] = json!("x".repeat(5_000));
        let oversized = with(padded);
        assert!(oversized.len() > token::MAX_IDENTITY_TOKEN_LEN);
        let valid = hs("mallory", room);
        let mut tampered_sig = valid.clone();
        let last = tampered_sig.pop().unwrap();
        tampered_sig.push(if last == 'A' { 'B' } else { 'A' });
        let (head, rest) = valid.split_once('.').unwrap();
        let (_, sig) = rest.split_once('.').unwrap();
        let swapped_claims = format!("{head}.{}.{sig}", b64(&claims("alice", room.as_str())));

        let cases = [
            (
                "forged: another secret",
                sign_hs256(
                    HS_KID,
                    b"not-the-site-secret-0123456789abc",
                    &claims("mallory", room.as_str()),
                ),
            ),
            ("forged: a signature changed", tampered_sig),
            ("forged: claims swapped", swapped_claims),
            (
                "expired",
                with(json!({"sub": "mallory", "aud": room.as_str(), "exp": now - 1})),
            ),
            (
                "expiring now",
                with(json!({"sub": "mallory", "aud": room.as_str(), "exp": now})),
            ),
            (
                "not yet valid",
                with(
                    json!({"sub": "mallory", "aud": room.as_str(), "nbf": now + 300, "exp": now + 600}),
                ),
            ),
            (
                "for another room",
                with(json!({"sub": "mallory", "aud": "concert", "exp": now + 600})),
            ),
            (
                "for other rooms",
                with(json!({"sub": "mallory", "aud": ["concert", "b"], "exp": now + 600})),
            ),
            ("no aud", with(json!({"sub": "mallory", "exp": now + 600}))),
            (
                "no exp",
                with(json!({"sub": "mallory", "aud": room.as_str()})),
            ),
            (
                "no sub",
                with(json!({"aud": room.as_str(), "exp": now + 600})),
            ),
            (
                "empty sub",
                with(json!({"sub": "", "aud": room.as_str(), "exp": now + 600})),
            ),
            (
                "sub too long",
                with(json!({"sub": "m".repeat(256), "aud": room.as_str(), "exp": now + 600})),
            ),
            (
                "unknown kid",
                sign_hs256("site9", HS_SECRET, &claims("mallory", room.as_str())),
            ),
            ("alg none", alg_none("none")),
            ("alg None", alg_none("None")),
            ("HS512 under the HS256 kid", hs512),
            (
                "EdDSA under the HS256 kid",
                sign_ed25519(HS_KID, &ED_SEED, &claims("mallory", room.as_str())),
            ),
            (
                "HS256 keyed with the public key, under the EdDSA kid",
                sign_hs256(ED_KID, public.as_bytes(), &claims("mallory", room.as_str())),
            ),
            (
                "HS256 keyed with the raw public key, under the EdDSA kid",
                sign_hs256(ED_KID, &public_raw, &claims("mallory", room.as_str())),
            ),
            (
                "EdDSA by another key",
                sign_ed25519(ED_KID, &[9; 32], &claims("mallory", room.as_str())),
            ),
            ("oversized", oversized),
            ("garbage", "garbage-not-a-jwt".to_owned()),
            ("three garbage parts", "a.b.c".to_owned()),
            ("an entry token", keys_entry(room)),
        ];
        for (what, bad) in &cases {
            for (how, r) in [
                ("header", api.join_as(room, bad).await),
                ("cookie", api.join_as_cookie(room, bad).await),
            ] {
                assert_eq!(r.status, 401, "{room} {what} ({how}): {}", r.json);
                assert_eq!(r.error_code(), "invalid_identity", "{room} {what} ({how})");
                assert!(
                    !sets_a_token(&r),
                    "{room} {what} ({how}): {:?}",
                    r.cookies()
                );
                assert!(r.json.get("ticket").is_none(), "{room} {what} ({how})");
            }
        }
        assert_eq!(
            figures(t.store.as_ref(), room).await,
            before,
            "{room}: nothing changed"
        );
        assert_eq!(t.store.figures(room).await.unwrap().accounts, 1);
    }
}

/// Something that is no identity token: one of the origin's own entry
/// tokens for the room.
fn keys_entry(room: &RoomId) -> String {
    keys().sign(&Claims {
        kind: Kind::Entry,
        room: room.as_str().to_owned(),
        visitor: 1,
        seq: 1,
        issued_at: unix_now(),
        expires_at: unix_now() + 60,
        account: None,
    })
}

/// What each `identity` setting does with a join without a token and with
/// an invalid one.
#[tokio::test]
async fn each_identity_setting_treats_joins_as_the_contract_says() {
    let t = test_store(STORE);
    let api = Api::new(identified_state(t.store.clone()));
    let store = t.store.as_ref();
    let required = identity_room(store, "required", IdentityMode::Required, 10, true).await;
    let optional = identity_room(store, "optional", IdentityMode::Optional, 10, true).await;
    let off = identity_room(store, "off", IdentityMode::Off, 10, true).await;
    let expired = |room: &RoomId| {
        sign_hs256(
            HS_KID,
            HS_SECRET,
            &json!({"sub": "late", "aud": room.as_str(), "exp": unix_now() - 60}),
        )
    };

    // Required: without a token, 401 `identity_required`, nothing taken.
    let r = api.join(&required, None).await;
    assert_eq!(
        (r.status.as_u16(), r.error_code()),
        (401, "identity_required"),
        "{}",
        r.json
    );
    assert!(!sets_a_token(&r));
    assert_eq!(figures(store, &required).await, (0, 0));

    // Optional: without one, a place per browser.
    let first = api.join(&optional, None).await;
    let second = api.join(&optional, None).await;
    assert_eq!((first.status.as_u16(), second.status.as_u16()), (200, 200));
    assert_ne!(
        seq_of(&first.ticket(), &optional),
        seq_of(&second.ticket(), &optional)
    );
    assert_eq!(
        claims_of(&first.ticket(), Kind::Ticket, &optional).account,
        None
    );
    assert_eq!(figures(store, &optional).await, (2, 2));
    // ... and an invalid one is still 401.
    for r in [
        api.join_as(&optional, &expired(&optional)).await,
        api.join_as_cookie(&optional, &expired(&optional)).await,
    ] {
        assert_eq!(
            (r.status.as_u16(), r.error_code()),
            (401, "invalid_identity")
        );
        assert!(!sets_a_token(&r));
    }
    assert_eq!(figures(store, &optional).await, (2, 2));

    // Off: tokens are not read; an invalid one is ignored, and a valid one
    // keys nothing (a place per browser, no account in the ticket).
    for r in [
        api.join_as(&off, &expired(&off)).await,
        api.join_as_cookie(&off, "garbage").await,
    ] {
        assert_eq!(r.status, 200, "{}", r.json);
        assert_eq!(r.json["state"], "waiting");
    }
    let a = api.join_as(&off, &hs("alice", &off)).await;
    let b = api.join_as_cookie(&off, &hs("alice", &off)).await;
    assert_ne!(seq_of(&a.ticket(), &off), seq_of(&b.ticket(), &off));
    assert_eq!(claims_of(&a.ticket(), Kind::Ticket, &off).account, None);
    assert_eq!(figures(store, &off).await, (4, 4));
    assert_eq!(t.store.figures(&off).await.unwrap().accounts, 0);
}

/// A valid EdDSA token joins, and names the same account as an HS256 token
/// of the same `sub` (the account is the site's, whatever key signed).
#[tokio::test]
async fn an_eddsa_token_joins() {
    let t = test_store(STORE);
    let api = Api::new(identified_state(t.store.clone()));
    let room = identity_room(t.store.as_ref(), "ed", IdentityMode::Required, 10, true).await;
    let r = api.join_as(&room, &ed("carol", &room)).await;
    assert_eq!(r.status, 200, "{}", r.json);
    assert_eq!(r.json["state"], "waiting");
    let seq = seq_of(&r.ticket(), &room);
    assert!(
        claims_of(&r.ticket(), Kind::Ticket, &room)
            .account
            .is_some()
    );
    let r = api.join_as_cookie(&room, &hs("carol", &room)).await;
    assert_eq!(seq_of(&r.ticket(), &room), seq);
    let r = api.join_as_cookie(&room, &ed("dave", &room)).await;
    assert_ne!(seq_of(&r.ticket(), &room), seq);
    assert_eq!(figures(t.store.as_ref(), &room).await, (2, 2));
}

/// A rejoin with an identified place's ticket needs no token; another
/// browser of the account gets the same place and a ticket of its own;
/// once the place ends, the account's next join goes to the back.
#[tokio::test]
async fn an_account_keeps_its_place_until_it_ends() {
    let t = test_store(STORE);
    let api = Api::new(identified_state(t.store.clone()));
    let room = identity_room(t.store.as_ref(), "keep", IdentityMode::Required, 10, true).await;

    let first = api.join_as(&room, &hs("alice", &room)).await;
    let phone = first.ticket();
    let seq = seq_of(&phone, &room);
    let bob = api.join_as(&room, &hs("bob", &room)).await;
    let bob_seq = seq_of(&bob.ticket(), &room);

    // The same browser, its ticket and no token (the cookie expired).
    let r = api.join(&room, Some(&phone)).await;
    assert_eq!(r.status, 200, "{}", r.json);
    assert_eq!(seq_of(&r.ticket(), &room), seq);
    assert_eq!(r.json["position"], 1);

    // A second browser: no ticket, the account's token.
    let r = api.join_as_cookie(&room, &hs("alice", &room)).await;
    assert_eq!(r.status, 200, "{}", r.json);
    let laptop = r.ticket();
    assert_eq!(seq_of(&laptop, &room), seq);
    assert!(
        r.cookies()
            .iter()
            .any(|c| c.starts_with(&format!("wr_ticket_{room}={laptop}"))),
        "its own ticket, as its cookie: {:?}",
        r.cookies()
    );
    assert_eq!(api.status(&room, &laptop).await.json["position"], 1);
    assert_eq!(figures(t.store.as_ref(), &room).await, (2, 2));

    // One browser leaves: the account's place ends for both.
    let r = api.leave(&room, &laptop).await;
    assert_eq!(r.status, 204, "{}", r.json);
    let r = api.status(&room, &phone).await;
    assert_eq!(r.json["state"], "expired", "{}", r.json);

    // The account's next join is a new place, behind Bob.
    let r = api.join_as(&room, &hs("alice", &room)).await;
    assert_eq!(r.status, 200, "{}", r.json);
    let again = seq_of(&r.ticket(), &room);
    assert!(again > bob_seq, "at the back: {again} after {bob_seq}");
    assert_eq!(r.json["position"], 2, "{}", r.json);
    // The old ticket of the other browser names the account too: it is
    // given the account's new place, never a second one.
    let r = api.join(&room, Some(&phone)).await;
    assert_eq!(r.status, 200, "{}", r.json);
    assert_eq!(seq_of(&r.ticket(), &room), again);
    assert_eq!(figures(t.store.as_ref(), &room).await, (2, 3));
}

/// An identified visitor's tickets and entry tokens carry its account:
/// the same for every browser of it, another for another account, none
/// for a visitor without one.
#[tokio::test]
async fn tokens_carry_the_account() {
    let t = test_store(STORE);
    let api = Api::new(identified_state(t.store.clone()));
    let room = identity_room(t.store.as_ref(), "carry", IdentityMode::Optional, 10, false).await;
    let entered = |r: &Reply| {
        assert_eq!(r.json["state"], "admitted", "{}", r.json);
        let ticket = claims_of(&r.ticket(), Kind::Ticket, &room);
        let entry = claims_of(r.json["entry_token"].as_str().unwrap(), Kind::Entry, &room);
        assert_eq!(ticket.account, entry.account);
        assert_eq!((ticket.seq, ticket.visitor), (entry.seq, entry.visitor));
        entry
    };
    let phone = entered(&api.join_as(&room, &hs("alice", &room)).await);
    let laptop = entered(&api.join_as_cookie(&room, &ed("alice", &room)).await);
    let bob = entered(&api.join_as(&room, &hs("bob", &room)).await);
    let nobody = entered(&api.join(&room, None).await);

    assert!(phone.account.is_some());
    assert_eq!(phone.account, laptop.account, "one account");
    assert_eq!(
        (phone.seq, phone.visitor),
        (laptop.seq, laptop.visitor),
        "one place, one visitor"
    );
    assert!(bob.account.is_some());
    assert_ne!(bob.account, phone.account);
    assert_ne!(bob.seq, phone.seq);
    assert_eq!(nobody.account, None);

    // The status of either browser renews an entry token with the account.
    let r = api
        .status(
            &room,
            &api.join_as(&room, &hs("alice", &room)).await.ticket(),
        )
        .await;
    assert_eq!(entered_status(&r, &room).account, phone.account);
}

fn entered_status(r: &Reply, room: &RoomId) -> Claims {
    assert_eq!(r.json["state"], "admitted", "{}", r.json);
    claims_of(r.json["entry_token"].as_str().unwrap(), Kind::Entry, room)
}

/// The admin API refuses identity on an origin without identity keys
/// (422 naming it, nothing changed), and takes it on one with keys.
#[tokio::test]
async fn identity_needs_keys_at_the_admin_api() {
    let t = test_store(STORE);
    let keyless = Api::new(admin_state(t.store.clone()));
    for mode in ["required", "optional"] {
        let body = json!({"capacity": 5, "identity": mode}).to_string();
        keyless
            .refused_setting("PUT", "/admin/rooms/nokeys", &body, "identity")
            .await;
        let r = keyless.admin("GET", "/admin/rooms/nokeys", "").await;
        assert_eq!(r.status, 404, "not made: {}", r.json);
    }
    let r = keyless
        .admin("PUT", "/admin/rooms/nokeys", r#"{"capacity": 5}"#)
        .await;
    assert_eq!(r.status, 200, "{}", r.json);
    assert_eq!(r.json["settings"]["identity"], "off");
    for body in [
        r#"{"identity": "required"}"#,
        r#"{"identity": "optional", "capacity": 9}"#,
    ] {
        keyless
            .refused_setting("PATCH", "/admin/rooms/nokeys", body, "identity")
            .await;
    }
    let r = keyless.admin("GET", "/admin/rooms/nokeys", "").await;
    assert_eq!(r.json["settings"]["identity"], "off");
    assert_eq!(r.json["settings"]["capacity"], 5, "nothing changed");

    let keyed = Api::new(identified_state(t.store.clone()));
    let r = keyed
        .admin(
            "PUT",
            "/admin/rooms/keyed",
            r#"{"capacity": 5, "identity": "required"}"#,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.json);
    assert_eq!(r.json["settings"]["identity"], "required");
    let r = keyed.admin("GET", "/admin/rooms/keyed", "").await;
    assert_eq!(r.json["settings"]["identity"], "required");
    let room = crate::common::room("keyed");
    let r = keyed.join(&room, None).await;
    assert_eq!(r.error_code(), "identity_required");

    // A room that read no identities, turned to `required`: its next join
    // without a token is refused at once.
    let r = keyed
        .admin(
            "PATCH",
            "/admin/rooms/nokeys",
            r#"{"identity": "optional"}"#,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.json);
    let open = crate::common::room("nokeys");
    assert_eq!(keyed.join(&open, None).await.status, 200);
    let r = keyed
        .admin(
            "PATCH",
            "/admin/rooms/nokeys",
            r#"{"identity": "required"}"#,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.json);
    let r = keyed.admin("GET", "/admin/rooms/nokeys", "").await;
    assert_eq!(r.json["settings"]["identity"], "required");
    let r = keyed.join(&open, None).await;
    assert_eq!(
        (r.status.as_u16(), r.error_code()),
        (401, "identity_required")
    );
}

/// The booking side, on SQLite (`booking_api.rs` runs booking on both
/// databases): an account's seats over its sessions stay within
/// `max_seats_per_account`, and two browsers of one account are one
/// visitor with one hold.
struct Sale {
    api: Api,
    queue: Arc<dyn QueueStore>,
    _t: TestStore,
    _db: TestDb,
}

impl Sale {
    async fn new(max_seats_per_account: Option<u32>) -> (Sale, RoomId) {
        let db = TestDb::new(DbKind::Sqlite).await;
        let t = test_store(STORE);
        let booking = Arc::new(
            db.store(
                Arc::new(CountingPayment::new(Default::default())),
                unix_now() * 1000,
            )
            .await,
        );
        let state = identified_state(t.store.clone()).with_booking(booking);
        let room = identity_room(t.store.as_ref(), "shop", IdentityMode::Required, 10, false).await;
        let sale = Sale {
            api: Api::new(state),
            queue: t.store.clone(),
            _t: t,
            _db: db,
        };
        let body = json!({
            "title": "Night", "starts_at": "2030-05-01T19:00:00Z",
            "max_seats_per_hold": 4, "max_seats_per_account": max_seats_per_account,
            "sections": [{"name": "A", "rows": 1, "seats_per_row": 8, "price": 5000}]
        });
        let r = sale
            .api
            .admin(
                "PUT",
                &format!("/admin/rooms/{room}/performances/night"),
                body.to_string(),
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.json);
        (sale, room)
    }

    /// The entry token of a join's answer: at once, or once the promoter
    /// (ticked here) lets its ticket in.
    async fn let_in(&self, room: &RoomId, joined: &Reply) -> String {
        assert_eq!(joined.status, 200, "{}", joined.json);
        if let Some(entry) = joined.json["entry_token"].as_str() {
            return entry.to_owned();
        }
        let ticket = joined.ticket();
        for _ in 0..200 {
            self.queue.tick(room).await.unwrap();
            let r = self.api.status(room, &ticket).await;
            if let Some(entry) = r.json["entry_token"].as_str() {
                return entry.to_owned();
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        panic!("never let in: {}", joined.json);
    }

    async fn call(&self, method: &str, uri: &str, entry: &str, body: Option<Value>) -> Reply {
        let mut req = Request::builder()
            .method(method)
            .uri(uri)
            .header("host", "127.0.0.1:8080")
            .header("entry-token", entry)
            .header(
                "idempotency-key",
                format!("key-{:016x}", rand::random::<u64>()),
            );
        if body.is_some() {
            req = req.header("content-type", "application/json");
        }
        let body = body.map_or(Body::empty(), |b| Body::from(b.to_string()));
        self.api.send(req.body(body).unwrap()).await
    }

    async fn hold(&self, room: &RoomId, entry: &str, seats: &[&str]) -> Reply {
        self.call(
            "POST",
            &format!("/api/{room}/performances/night/holds"),
            entry,
            Some(json!({ "seats": seats })),
        )
        .await
    }

    /// The seat's state on the seat map.
    async fn seat(&self, room: &RoomId, entry: &str, id: &str) -> String {
        let r = self
            .call(
                "GET",
                &format!("/api/{room}/performances/night/seats"),
                entry,
                None,
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.json);
        r.json["seats"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["id"] == id)
            .unwrap()["state"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    /// (available, held, booked).
    async fn counts(&self, room: &RoomId) -> (u64, u64, u64) {
        let r = self
            .api
            .admin(
                "GET",
                &format!("/admin/rooms/{room}/performances/night"),
                "",
            )
            .await;
        let n = |k: &str| r.json[k].as_u64().unwrap();
        (n("available"), n("held"), n("booked"))
    }
}

/// An account that bought its two seats comes back (a new place, let in
/// again) and cannot hold a third: 409 `account_limit`, nothing held.
#[tokio::test]
async fn an_account_buys_within_its_limit_across_visits() {
    let (s, room) = Sale::new(Some(2)).await;
    let alice = hs("alice", &room);
    let first = s.api.join_as(&room, &alice).await;
    let entry = s.let_in(&room, &first).await;
    let r = s.hold(&room, &entry, &["A-1-1", "A-1-2"]).await;
    assert_eq!(r.status, 201, "{}", r.json);
    let hold = r.json["hold_id"].as_str().unwrap().to_owned();
    let r = s
        .call(
            "POST",
            &format!("/api/{room}/holds/{hold}/confirm"),
            &entry,
            Some(json!({"payment_token": "tok_visa"})),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.json);
    assert_eq!(s.counts(&room).await, (6, 0, 2));
    // The booking ended the session: the place is gone.
    let r = s.api.status(&room, &first.ticket()).await;
    assert_eq!(r.json["state"], "expired", "{}", r.json);

    // Back again, from another browser: a new place, let in.
    let again = s.api.join_as_cookie(&room, &alice).await;
    assert!(seq_of(&again.ticket(), &room) > seq_of(&first.ticket(), &room));
    let entry = s.let_in(&room, &again).await;
    for want in [&["A-1-3"][..], &["A-1-3", "A-1-4"]] {
        let r = s.hold(&room, &entry, want).await;
        assert_eq!(
            (r.status.as_u16(), r.error_code()),
            (409, "account_limit"),
            "{}",
            r.json
        );
        assert_eq!(s.seat(&room, &entry, "A-1-3").await, "available");
    }
    assert_eq!(s.counts(&room).await, (6, 0, 2), "nothing held");

    // Another account is not limited by Alice's seats.
    let bob = s.api.join_as(&room, &hs("bob", &room)).await;
    let entry = s.let_in(&room, &bob).await;
    let r = s.hold(&room, &entry, &["A-1-3", "A-1-4"]).await;
    assert_eq!(r.status, 201, "{}", r.json);
}

/// Two browsers of one account on its one place are one visitor: one live
/// hold between them (the second is 409 `hold_exists`), which either may
/// release.
#[tokio::test]
async fn browsers_of_an_account_share_one_hold() {
    let (s, room) = Sale::new(None).await;
    let phone = s.api.join_as(&room, &hs("carol", &room)).await;
    let phone = s.let_in(&room, &phone).await;
    let laptop = s.api.join_as_cookie(&room, &hs("carol", &room)).await;
    let laptop = s.let_in(&room, &laptop).await;
    assert_eq!(
        claims_of(&phone, Kind::Entry, &room).visitor,
        claims_of(&laptop, Kind::Entry, &room).visitor
    );

    let r = s.hold(&room, &phone, &["A-1-4"]).await;
    assert_eq!(r.status, 201, "{}", r.json);
    let hold = r.json["hold_id"].as_str().unwrap().to_owned();
    let r = s.hold(&room, &laptop, &["A-1-5"]).await;
    assert_eq!(
        (r.status.as_u16(), r.error_code()),
        (409, "hold_exists"),
        "{}",
        r.json
    );
    assert_eq!(s.seat(&room, &laptop, "A-1-5").await, "available");
    assert_eq!(s.counts(&room).await, (7, 1, 0));

    // The hold is the laptop's too: it may release it, then hold.
    let r = s
        .call(
            "DELETE",
            &format!("/api/{room}/holds/{hold}"),
            &laptop,
            None,
        )
        .await;
    assert_eq!(r.status, 204, "{}", r.json);
    let r = s.hold(&room, &laptop, &["A-1-5"]).await;
    assert_eq!(r.status, 201, "{}", r.json);
    assert_eq!(s.counts(&room).await, (7, 1, 0));
}

const EDGE: &str = "edge-secret-for-tests-0123456789";

/// A join forwarded by the edge for a client at `ip`, with an identity
/// token in the header.
async fn join_from(api: &Api, room: &RoomId, ip: &str, jwt: &str) -> Reply {
    let req = Request::builder()
        .method("POST")
        .uri(format!("/queue/{room}/join"))
        .header("host", "127.0.0.1:8080")
        .header("waiting-room-edge", EDGE)
        .header("cf-connecting-ip", ip)
        .header("waiting-room-identity", jwt)
        .body(Body::empty())
        .unwrap();
    api.send(req).await
}

/// An admitted account's browsers count against `max_session_addresses`
/// as copies of one ticket do: past the room's addresses the session ends,
/// and the account's place with it.
#[tokio::test]
async fn an_account_shared_among_many_addresses_is_ended() {
    let t = test_store(STORE);
    let state = identified_state(t.store.clone()).with_clients(ClientPolicy::new(Some(EDGE), 0, 0));
    let api = Api::new(state);
    let room = identity_room(
        t.store.as_ref(),
        "shared",
        IdentityMode::Required,
        10,
        false,
    )
    .await;
    let alice = hs("alice", &room);
    // The room's default: three addresses.
    let mut seq = None;
    for ip in [
        "198.51.100.1",
        "198.51.100.2",
        "198.51.100.3",
        "198.51.100.1",
    ] {
        let r = join_from(&api, &room, ip, &alice).await;
        assert_eq!(r.json["state"], "admitted", "{ip}: {}", r.json);
        let s = seq_of(&r.ticket(), &room);
        assert_eq!(*seq.get_or_insert(s), s, "{ip}: the account's place");
    }
    let first = seq.unwrap();
    let r = join_from(&api, &room, "203.0.113.77", &alice).await;
    assert_eq!(r.status, 200, "{}", r.json);
    assert_eq!(r.json["state"], "expired", "a fourth address: {}", r.json);
    assert!(r.json.get("ticket").is_none() && r.json.get("entry_token").is_none());
    assert_eq!(t.store.figures(&room).await.unwrap().active, 0, "ended");
    assert_eq!(t.store.figures(&room).await.unwrap().accounts, 0);
    // The account's next join is a new place.
    let r = join_from(&api, &room, "198.51.100.1", &alice).await;
    assert_eq!(r.status, 200, "{}", r.json);
    assert!(seq_of(&r.ticket(), &room) > first, "{}", r.json);
}

/// The raw account id is never stored: on Redis, no key or value under the
/// test's prefix holds it after its places were given, admitted and left.
#[tokio::test]
async fn the_raw_account_is_never_stored() {
    if STORE != Store::Redis {
        return;
    }
    let t = test_store(STORE);
    let api = Api::new(identified_state(t.store.clone()));
    const SUB: &str = "sub-7731-private@example.com";
    let waiting = identity_room(t.store.as_ref(), "hidden", IdentityMode::Required, 10, true).await;
    let inside = identity_room(
        t.store.as_ref(),
        "inside",
        IdentityMode::Required,
        10,
        false,
    )
    .await;
    for room in [&waiting, &inside] {
        for r in [
            api.join_as(room, &hs(SUB, room)).await,
            api.join_as_cookie(room, &ed(SUB, room)).await,
        ] {
            assert_eq!(r.status, 200, "{}", r.json);
        }
    }
    let mut conn = redis_conn().await;
    let keys: Vec<Vec<u8>> = redis::cmd("KEYS")
        .arg(format!("{}*", t.prefix))
        .query_async(&mut conn)
        .await
        .unwrap();
    assert!(!keys.is_empty());
    let needle = b"7731-private";
    let holds = |bytes: &[u8]| bytes.windows(needle.len()).any(|w| w == needle);
    for key in keys {
        assert!(!holds(&key), "a key names the account");
        let value: Vec<u8> = redis::cmd("DUMP")
            .arg(&key)
            .query_async(&mut conn)
            .await
            .unwrap();
        assert!(
            !holds(&value),
            "{} holds the account",
            String::from_utf8_lossy(&key)
        );
    }
}

/// A rejoin with a ticket whose place stands gets that place back even
/// with another account's token (the ticket wins, as for the store), and
/// the place keeps the account and visitor it was given with: its tokens
/// never name the other account, whose own join gets its own place. The
/// account's tokens name one place only.
#[tokio::test]
async fn a_standing_place_keeps_its_account_whatever_token_comes_with_it() {
    let t = test_store(STORE);
    let api = Api::new(identified_state(t.store.clone()));
    let room = identity_room(
        t.store.as_ref(),
        "relabel",
        IdentityMode::Required,
        10,
        false,
    )
    .await;
    let r = api.join_as(&room, &hs("alice", &room)).await;
    let alice_ticket = r.ticket();
    let alice = claims_of(&alice_ticket, Kind::Ticket, &room);
    let bob = api.join_as(&room, &hs("bob", &room)).await;
    let bob = claims_of(&bob.ticket(), Kind::Ticket, &room);
    assert_ne!(alice.account, bob.account);

    // Alice's browser, her ticket, and Bob's token (Bob signed in there).
    for identity in [
        Identity::Header(&hs("bob", &room)),
        Identity::Cookie(&ed("bob", &room)),
    ] {
        let r = api
            .join_identified(&room, Some(&alice_ticket), Some(identity))
            .await;
        assert_eq!(r.status, 200, "{}", r.json);
        let ticket = claims_of(&r.ticket(), Kind::Ticket, &room);
        let entry = entered_status(&r, &room);
        for c in [&ticket, &entry] {
            assert_eq!(
                (c.seq, c.visitor, c.account),
                (alice.seq, alice.visitor, alice.account),
                "{identity:?}: Alice's place, as it was given"
            );
        }
    }
    // Bob's own browsers still get Bob's one place.
    let r = api.join_as_cookie(&room, &hs("bob", &room)).await;
    let again = entered_status(&r, &room);
    assert_eq!((again.seq, again.account), (bob.seq, bob.account));
    assert_eq!(figures(t.store.as_ref(), &room).await.1, 2);
}
