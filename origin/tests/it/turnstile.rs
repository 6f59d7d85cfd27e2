//! Turnstile rooms: refused (422 at the admin API, an error at start for
//! the `--rooms` file) on an origin without both Turnstile keys, taken on
//! one with them; and joins in them against a stand-in siteverify: no
//! token, a refused one, a passed one (one place however often shown), and
//! the verify URL down with the room failing closed or open.

use super::STORE;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::common::servers::{self, TempDir};
use crate::common::*;
use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::Request;
use axum::routing::post;
use clap::Parser as _;
use origin::clock::Clock;
use origin::config::Config;
use origin::queue::{QueueStore, StoreError};
use origin::room::{ChallengeFail, ChallengeKind, RoomId, RoomSettings};
use origin::turnstile::Turnstile;
use serde_json::json;
use token::Kind;

/// The keys of an origin that has them (the stand-in answers no call here).
fn keyed() -> Turnstile {
    Turnstile::new(
        Some("turnstile-secret".into()),
        Some("turnstile-site-key".into()),
        "http://127.0.0.1:9/siteverify".into(),
    )
}

/// The admin API refuses `challenge: "turnstile"` on an origin without
/// both keys (422 naming it, nothing changed), by PUT and by PATCH, and
/// takes it on one with them.
#[tokio::test]
async fn turnstile_needs_keys_at_the_admin_api() {
    let t = test_store(STORE);
    let halves = [
        Turnstile::unconfigured(),
        Turnstile::new(Some("secret".into()), None, "http://127.0.0.1:9/".into()),
        Turnstile::new(None, Some("site".into()), "http://127.0.0.1:9/".into()),
    ];
    for turnstile in halves {
        let keyless = Api::new(admin_state(t.store.clone()).with_turnstile(turnstile));
        let body = json!({"capacity": 5, "challenge": "turnstile"}).to_string();
        let message = keyless
            .refused_setting("PUT", "/admin/rooms/nokeys", &body, "turnstile")
            .await;
        assert!(message.contains("--turnstile-secret"), "{message}");
        let r = keyless.admin("GET", "/admin/rooms/nokeys", "").await;
        assert_eq!(r.status, 404, "not made: {}", r.json);
    }

    let keyless = Api::new(admin_state(t.store.clone()));
    let r = keyless
        .admin("PUT", "/admin/rooms/nokeys", r#"{"capacity": 5}"#)
        .await;
    assert_eq!(r.status, 200, "{}", r.json);
    assert_eq!(r.json["settings"]["challenge"], "off");
    // Pow needs no keys.
    let r = keyless
        .admin("PATCH", "/admin/rooms/nokeys", r#"{"challenge": "pow"}"#)
        .await;
    assert_eq!(r.status, 200, "{}", r.json);
    for body in [
        r#"{"challenge": "turnstile"}"#,
        r#"{"challenge": "turnstile", "capacity": 9, "challenge_fail": "open"}"#,
    ] {
        keyless
            .refused_setting("PATCH", "/admin/rooms/nokeys", body, "turnstile")
            .await;
    }
    let r = keyless.admin("GET", "/admin/rooms/nokeys", "").await;
    assert_eq!(r.json["settings"]["challenge"], "pow", "nothing changed");
    assert_eq!(r.json["settings"]["capacity"], 5, "nothing changed");
    assert_eq!(r.json["settings"]["challenge_fail"], "closed");

    let keyed = Api::new(admin_state(t.store.clone()).with_turnstile(keyed()));
    let r = keyed
        .admin(
            "PUT",
            "/admin/rooms/keyed",
            r#"{"capacity": 5, "challenge": "turnstile", "challenge_fail": "open"}"#,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.json);
    assert_eq!(r.json["settings"]["challenge"], "turnstile");
    assert_eq!(r.json["settings"]["challenge_fail"], "open");
    let r = keyed
        .admin(
            "PATCH",
            "/admin/rooms/nokeys",
            r#"{"challenge": "turnstile"}"#,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.json);
    let r = keyed.admin("GET", "/admin/rooms/nokeys", "").await;
    assert_eq!(r.json["settings"]["challenge"], "turnstile");
    assert_eq!(r.json["settings"]["capacity"], 5);
}

/// A `--rooms` file with a Turnstile room is an error naming the room at
/// start on an origin without both keys (the room is not made), and is
/// applied on one with them.
#[tokio::test]
async fn turnstile_needs_keys_in_the_rooms_file() {
    let t = test_store(STORE);
    let dir = TempDir::new("turnstile-rooms");
    let path = dir.0.join("rooms.toml");
    std::fs::write(
        &path,
        "[[room]]\nid = \"plain\"\ncapacity = 5\n\n\
         [[room]]\nid = \"guarded\"\ncapacity = 5\nchallenge = \"turnstile\"\n",
    )
    .unwrap();
    let path = path.to_str().unwrap();
    let config = |keys: &[&str]| {
        let mut args = vec!["origin", "--rooms", path];
        args.extend_from_slice(keys);
        Config::try_parse_from(args).unwrap()
    };
    for keys in [
        &[][..],
        &["--turnstile-secret", "s3cret"],
        &["--turnstile-site-key", "0x4AAAsite"],
    ] {
        let err = origin::apply_rooms_file(&config(keys), t.store.as_ref(), None, &Clock::System)
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("room guarded"), "{err}");
        assert!(err.contains("turnstile"), "{err}");
        assert!(!err.contains("s3cret"), "{err}");
        assert!(matches!(
            t.store.figures(&room("guarded")).await,
            Err(StoreError::UnknownRoom)
        ));
    }
    let config = config(&[
        "--turnstile-secret",
        "s3cret",
        "--turnstile-site-key",
        "0x4AAAsite",
    ]);
    origin::apply_rooms_file(&config, t.store.as_ref(), None, &Clock::System)
        .await
        .unwrap();
    let f = t.store.figures(&room("guarded")).await.unwrap();
    assert_eq!(f.settings.challenge, origin::room::ChallengeKind::Turnstile);
    // The state the binary builds from the same flags takes the room too.
    let state = origin::app_state(&config, t.store.clone(), keys());
    assert!(state.turnstile.is_configured());
    assert_eq!(state.turnstile.site_key(), Some("0x4AAAsite"));
}

/// A stand-in for Cloudflare's siteverify on a loopback port: tokens
/// starting `good` pass, others are refused; it counts its calls.
struct SiteVerify {
    url: String,
    calls: Arc<AtomicUsize>,
}

impl SiteVerify {
    async fn start() -> SiteVerify {
        let calls = Arc::new(AtomicUsize::new(0));
        let counted = calls.clone();
        let app = Router::new().route(
            "/siteverify",
            post(move |body: Bytes| {
                let counted = counted.clone();
                async move {
                    counted.fetch_add(1, Ordering::SeqCst);
                    let body = String::from_utf8_lossy(&body).into_owned();
                    let good = body
                        .split('&')
                        .any(|pair| pair.starts_with("response=good"));
                    let secret = body
                        .split('&')
                        .any(|pair| pair == "secret=turnstile-secret");
                    let success = good && secret;
                    (
                        [("content-type", "application/json")],
                        format!(r#"{{"success": {success}}}"#),
                    )
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        SiteVerify {
            url: format!("http://{addr}/siteverify"),
            calls,
        }
    }

    fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

/// A verify URL nothing answers at.
fn down_url() -> String {
    format!("http://127.0.0.1:{}/siteverify", servers::free_port())
}

/// An origin with the admin API and Turnstile keys checking at `url`.
fn turnstile_api(store: Arc<dyn QueueStore>, url: &str) -> Api {
    Api::new(
        admin_state(store).with_turnstile(
            Turnstile::new(
                Some("turnstile-secret".into()),
                Some("turnstile-site-key".into()),
                url.to_owned(),
            )
            .with_timeout(Duration::from_secs(1)),
        ),
    )
}

/// A paused Turnstile room (nobody let in) failing `fail`.
async fn turnstile_room(store: &dyn QueueStore, id: &str, fail: ChallengeFail) -> RoomId {
    let s = RoomSettings {
        challenge: ChallengeKind::Turnstile,
        challenge_fail: fail,
        ..settings(10)
    };
    make_paused_room(store, id, s).await
}

/// A join with `token` in `Waiting-Room-Challenge` (none: no header) and
/// no ticket.
async fn join_with(api: &Api, room: &RoomId, token: Option<&str>) -> Reply {
    let mut req = Request::builder()
        .method("POST")
        .uri(format!("/queue/{room}/join"))
        .header("host", "127.0.0.1:8080");
    if let Some(token) = token {
        req = req.header("waiting-room-challenge", token);
    }
    api.send(req.body(Body::empty()).unwrap()).await
}

/// (waiting, places given) of the room.
async fn figures(store: &dyn QueueStore, room: &RoomId) -> (u64, u64) {
    let f = store.figures(room).await.unwrap();
    (f.waiting, f.places_given)
}

/// The place (sequence number) a join's ticket names.
fn place(r: &Reply, room: &RoomId) -> u64 {
    assert_eq!(r.status, 200, "{}", r.json);
    keys()
        .verify(&r.ticket(), Kind::Ticket, room.as_str(), unix_now())
        .unwrap()
        .seq
}

/// A join in a Turnstile room: without a token, 428 with the site key; a
/// refused token, 403 and nothing changed; a passed one, a place; the same
/// token again, the same place, with no second call to Cloudflare (and on
/// another instance the same place too); a ticket, its place, no token.
#[tokio::test]
async fn a_turnstile_token_buys_one_place() {
    let t = test_store(STORE);
    let cf = SiteVerify::start().await;
    let api = turnstile_api(t.store.clone(), &cf.url);
    let room = turnstile_room(t.store.as_ref(), "ts", ChallengeFail::Closed).await;

    let r = join_with(&api, &room, None).await;
    assert_eq!(r.status, 428, "{}", r.json);
    assert_eq!(r.error_code(), "challenge_required");
    assert_eq!(r.json["challenge"]["kind"], "turnstile", "{}", r.json);
    assert_eq!(r.json["challenge"]["site_key"], "turnstile-site-key");
    assert!(r.cookies().is_empty(), "no ticket");
    assert_eq!(cf.calls(), 0);
    assert_eq!(figures(t.store.as_ref(), &room).await, (0, 0));

    let r = join_with(&api, &room, Some("bad-token")).await;
    assert_eq!(r.status, 403, "{}", r.json);
    assert_eq!(r.error_code(), "challenge_failed");
    assert!(r.cookies().is_empty(), "no ticket");
    assert_eq!(cf.calls(), 1);
    assert_eq!(figures(t.store.as_ref(), &room).await, (0, 0));

    let first = place(&join_with(&api, &room, Some("good-1")).await, &room);
    assert_eq!(figures(t.store.as_ref(), &room).await, (1, 1));
    assert_eq!(cf.calls(), 2);
    let again = place(&join_with(&api, &room, Some("good-1")).await, &room);
    assert_eq!(again, first, "the same token gets the same place");
    assert_eq!(figures(t.store.as_ref(), &room).await, (1, 1));
    assert_eq!(cf.calls(), 2, "no second call for the same token");

    let other = place(&join_with(&api, &room, Some("good-2")).await, &room);
    assert_ne!(other, first);
    assert_eq!(figures(t.store.as_ref(), &room).await, (2, 2));

    // Another instance, which has not seen the token, asks Cloudflare (which
    // answers the same token's idempotency key alike) and the store gives
    // the token's place back.
    let second = turnstile_api(t.connect(), &cf.url);
    let r = join_with(&second, &room, Some("good-1")).await;
    assert_eq!(place(&r, &room), first);
    assert_eq!(cf.calls(), 4);
    assert_eq!(figures(t.store.as_ref(), &room).await, (2, 2));

    // A ticket's standing place needs no token.
    let r = api.join(&room, Some(&r.ticket())).await;
    assert_eq!(place(&r, &room), first);
    assert_eq!(cf.calls(), 4);
    assert_eq!(figures(t.store.as_ref(), &room).await, (2, 2));
}

/// With the verify URL down, a room failing closed answers 503 and gives
/// no place; one failing open gives a place unchecked.
#[tokio::test]
async fn a_turnstile_outage_fails_as_the_room_says() {
    let t = test_store(STORE);
    let api = turnstile_api(t.store.clone(), &down_url());
    let closed = turnstile_room(t.store.as_ref(), "ts-closed", ChallengeFail::Closed).await;
    let open = turnstile_room(t.store.as_ref(), "ts-open", ChallengeFail::Open).await;

    let r = join_with(&api, &closed, Some("good-1")).await;
    assert_eq!(r.status, 503, "{}", r.json);
    assert_eq!(r.error_code(), "challenge_unavailable");
    assert!(r.headers.get("retry-after").is_some());
    assert!(r.cookies().is_empty(), "no ticket");
    assert_eq!(figures(t.store.as_ref(), &closed).await, (0, 0));

    let r = join_with(&api, &open, Some("good-1")).await;
    place(&r, &open);
    assert_eq!(figures(t.store.as_ref(), &open).await, (1, 1));
}
