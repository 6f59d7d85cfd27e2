//! Turnstile rooms: refused (422 at the admin API, an error at start for
//! the `--rooms` file) on an origin without both Turnstile keys, taken on
//! one with them.

use super::STORE;

use crate::common::servers::TempDir;
use crate::common::*;
use clap::Parser as _;
use origin::clock::Clock;
use origin::config::Config;
use origin::queue::StoreError;
use origin::turnstile::Turnstile;
use serde_json::json;

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
        let r = keyless.admin("PUT", "/admin/rooms/nokeys", body).await;
        assert_eq!(r.status, 422, "{}", r.json);
        assert_eq!(r.error_code(), "invalid_body");
        let message = r.json["error"]["message"].as_str().unwrap();
        assert!(message.contains("turnstile"), "{message}");
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
        let r = keyless.admin("PATCH", "/admin/rooms/nokeys", body).await;
        assert_eq!(r.status, 422, "{}", r.json);
        assert!(
            r.json["error"]["message"]
                .as_str()
                .unwrap()
                .contains("turnstile")
        );
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
