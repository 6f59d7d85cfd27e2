//! The pages the origin serves itself: the room list at `/`, the shared
//! waiting page at `/waiting-room/{room}` and the seat page at
//! `/book/{room}/`: HTML with `no-store` and the page's CSP, the language
//! from `?lang=` or `Accept-Language`, and unknown rooms refused with the
//! contract's JSON, or a short HTML page for a browser. Each test's store
//! has a key prefix of its own, so room names may repeat across tests.

use super::STORE;
use crate::common::*;
use axum::body::Body;
use axum::http::Request;
use origin::room::RoomSettings;

const BROWSER: &str = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";

async fn get(api: &Api, uri: &str, accept: Option<&str>, lang: Option<&str>) -> Reply {
    let mut req = Request::builder().uri(uri).header("host", "127.0.0.1:8080");
    if let Some(a) = accept {
        req = req.header("accept", a);
    }
    if let Some(l) = lang {
        req = req.header("accept-language", l);
    }
    api.send(req.body(Body::empty()).unwrap()).await
}

/// The body of an HTML answer, with the headers every page carries checked.
fn html(r: &Reply) -> &str {
    assert_eq!(r.headers["content-type"], "text/html; charset=utf-8");
    // An answer that sets a cookie (a renewed entry) is private too.
    let cache = if r.headers.contains_key("set-cookie") {
        "private, no-store"
    } else {
        "no-store"
    };
    assert_eq!(r.headers["cache-control"], cache);
    let csp = r.headers["content-security-policy"].to_str().unwrap();
    assert!(csp.starts_with("default-src 'none'"), "{csp}");
    assert!(!csp.contains("unsafe-inline"), "{csp}");
    assert_eq!(r.headers["x-content-type-options"], "nosniff");
    r.json.as_str().expect("an HTML body")
}

#[tokio::test]
async fn the_room_list_links_every_room_to_its_waiting_page() {
    let t = test_store(STORE);
    let a = "list-a";
    let b = "list-b";
    make_room(t.store.as_ref(), a, RoomSettings::default()).await;
    make_paused_room(t.store.as_ref(), b, RoomSettings::default()).await;
    // Without --lobby, `/` lists nothing: 404, an HTML page for a browser.
    let closed = Api::new(state(t.store.clone()));
    let r = get(&closed, "/", Some(BROWSER), None).await;
    assert_eq!(r.status, 404);
    assert!(!html(&r).contains(a));
    // A notice runs no script.
    assert!(
        r.headers["content-security-policy"]
            .to_str()
            .unwrap()
            .contains("script-src 'none'")
    );
    let r = get(&closed, "/", None, None).await;
    assert_eq!(r.status, 404);
    assert_eq!(r.error_code(), "not_found");

    let api = Api::new(state(t.store.clone()).with_lobby(true));
    let r = get(&api, "/", Some(BROWSER), None).await;
    assert_eq!(r.status, 200);
    let body = html(&r);
    assert!(body.contains("<html lang=\"en\">"));
    for room in [a, b] {
        assert!(
            body.contains(&format!(
                "href=\"/waiting-room/{room}\" data-room=\"{room}\""
            )),
            "{body}"
        );
    }
    // The list runs its own script (the openings in the visitor's zone),
    // named by hash, and nothing else.
    let csp = r.headers["content-security-policy"].to_str().unwrap();
    let script_src = csp
        .split("; ")
        .find(|d| d.starts_with("script-src "))
        .expect("script-src");
    assert!(script_src.starts_with("script-src 'sha256-"), "{csp}");
    assert_eq!(script_src.split(' ').count(), 2, "{csp}");

    let ko = get(&api, "/?lang=ko", None, Some("en")).await;
    assert!(html(&ko).contains("<html lang=\"ko\">"));
}

#[tokio::test]
async fn the_waiting_page_polls_this_origin_and_goes_on_to_the_seat_page() {
    let t = test_store(STORE);
    let room = "wait";
    make_room(t.store.as_ref(), room, RoomSettings::default()).await;
    let api = Api::new(state(t.store.clone()));

    let r = get(
        &api,
        &format!("/waiting-room/{room}"),
        Some(BROWSER),
        Some("ko-KR,ko;q=0.9"),
    )
    .await;
    assert_eq!(r.status, 200);
    let body = html(&r);
    assert!(body.contains("<html lang=\"ko\">"));
    assert!(body.contains(&format!("\"join\":\"/queue/{room}/join\"")));
    assert!(body.contains(&format!("\"status\":\"/queue/{room}/status\"")));
    assert!(body.contains(&format!("\"target\":\"/book/{room}/\"")));
    assert!(body.contains("\"failOpen\":false"));
    // The proof-of-work solver's worker; no Turnstile without a site key.
    let csp = r.headers["content-security-policy"].to_str().unwrap();
    assert!(csp.contains("worker-src blob:"), "{csp}");
    assert!(!csp.contains("cloudflare") && !body.contains("\"siteKey\""));

    let en = get(
        &api,
        &format!("/waiting-room/{room}?lang=en"),
        None,
        Some("ko"),
    )
    .await;
    assert!(html(&en).contains("<html lang=\"en\">"));
}

#[tokio::test]
async fn only_a_turnstile_rooms_waiting_page_may_load_the_widget() {
    use origin::room::ChallengeKind;
    use origin::turnstile::Turnstile;
    let t = test_store(STORE);
    let with = |challenge| RoomSettings {
        challenge,
        ..RoomSettings::default()
    };
    make_room(t.store.as_ref(), "ts", with(ChallengeKind::Turnstile)).await;
    make_room(t.store.as_ref(), "pw", with(ChallengeKind::Pow)).await;
    let api = Api::new(state(t.store.clone()).with_turnstile(Turnstile::new(
        Some("turnstile-secret".into()),
        Some("0x4AAA-site-key".into()),
        "http://127.0.0.1:9/siteverify".into(),
    )));

    let r = get(&api, "/waiting-room/ts", Some(BROWSER), None).await;
    assert_eq!(r.status, 200);
    let body = html(&r);
    assert!(body.contains("\"siteKey\":\"0x4AAA-site-key\""), "{body}");
    let csp = r.headers["content-security-policy"].to_str().unwrap();
    assert!(
        csp.contains("frame-src https://challenges.cloudflare.com"),
        "{csp}"
    );
    assert!(csp.contains("worker-src blob:"), "{csp}");

    // A proof-of-work room on the same origin: no key, no Cloudflare.
    let r = get(&api, "/waiting-room/pw", Some(BROWSER), None).await;
    let body = html(&r);
    assert!(!body.contains("\"siteKey\""));
    let csp = r.headers["content-security-policy"].to_str().unwrap();
    assert!(!csp.contains("cloudflare"), "{csp}");
}

#[tokio::test]
async fn the_seat_page_talks_to_the_rooms_booking_api() {
    let t = test_store(STORE);
    let room = "seats";
    make_room(t.store.as_ref(), room, RoomSettings::default()).await;
    let api = Api::new(state(t.store.clone()));

    let r = get(&api, &format!("/book/{room}/"), Some(BROWSER), None).await;
    assert_eq!(r.status, 200);
    let body = html(&r);
    assert!(body.contains(&format!("\"api\":\"/api/{room}\"")));
    assert!(body.contains(&format!("href=\"/waiting-room/{room}\"")));
    assert!(body.contains("id=\"seatmap\""));
}

#[tokio::test]
async fn unknown_rooms_are_404_json_or_html_for_browsers() {
    let t = test_store(STORE);
    let api = Api::new(state(t.store.clone()));
    for path in [
        "/waiting-room/no-such-room-x",
        "/waiting-room/Not_A_Room",
        "/book/no-such-room-x/",
        "/book/%3Cscript%3E/",
    ] {
        let r = get(&api, path, Some("application/json"), None).await;
        assert_eq!(r.status, 404, "{path}");
        assert_eq!(r.error_code(), "unknown_room", "{path}");
        let r = get(&api, path, None, None).await;
        assert_eq!(r.error_code(), "unknown_room", "{path}");

        let r = get(&api, path, Some(BROWSER), Some("ko")).await;
        assert_eq!(r.status, 404, "{path}");
        let body = html(&r);
        assert!(body.contains("<html lang=\"ko\">"), "{path}");
        assert!(!body.contains("<script"), "{path}");
    }
}

#[tokio::test]
async fn pages_answer_get_only() {
    let t = test_store(STORE);
    let room = "methods";
    make_room(t.store.as_ref(), room, RoomSettings::default()).await;
    let api = Api::new(state(t.store.clone()));
    for path in [
        "/".to_owned(),
        format!("/waiting-room/{room}"),
        format!("/book/{room}/"),
    ] {
        let r = api.call("POST", &path, None).await;
        assert_eq!(r.status, 405, "{path}");
        assert_eq!(r.error_code(), "method_not_allowed");
    }
}

#[tokio::test]
async fn a_missing_or_extra_slash_redirects_to_the_page() {
    let t = test_store(STORE);
    let api = Api::new(state(t.store.clone()));
    for (path, to) in [
        ("/admin", "/admin/"),
        ("/admin?lang=ko", "/admin/?lang=ko"),
        ("/book/concert", "/book/concert/"),
        ("/waiting-room/concert/", "/waiting-room/concert"),
        (
            "/waiting-room/concert/?lang=ko",
            "/waiting-room/concert?lang=ko",
        ),
    ] {
        for accept in [Some(BROWSER), None] {
            let r = get(&api, path, accept, None).await;
            assert_eq!(r.status, 308, "{path}");
            assert_eq!(r.headers["location"], to, "{path}");
        }
    }
    // Only a page's own shape, only for GET: a write or a made-up room id
    // is not sent anywhere.
    for path in [
        "/book/Not_A_Room",
        "/waiting-room/x//",
        "/book//evil.example",
    ] {
        let r = get(&api, path, None, None).await;
        assert_eq!(r.status, 404, "{path}");
    }
    let r = api.call("POST", "/book/concert", None).await;
    assert_eq!(r.status, 404);
}

#[tokio::test]
async fn a_path_nobody_serves_is_json_for_apps_and_a_page_for_browsers() {
    let t = test_store(STORE);
    let api = Api::new(state(t.store.clone()));
    for path in ["/nothing-here", "/queue", "/book/concert/x/y"] {
        let r = get(&api, path, Some("application/json"), None).await;
        assert_eq!(r.status, 404, "{path}");
        assert_eq!(r.error_code(), "not_found", "{path}");
        let r = get(&api, path, None, None).await;
        assert_eq!(r.error_code(), "not_found", "{path}");
        for (lang, title) in [
            ("en", "Page not found"),
            ("ko", "페이지를 찾을 수 없습니다"),
        ] {
            let r = get(&api, path, Some(BROWSER), Some(lang)).await;
            assert_eq!(r.status, 404, "{path}");
            let body = html(&r);
            assert!(body.contains(title), "{path} {lang}");
            assert!(!body.contains("<script"), "{path}");
        }
    }
}

#[tokio::test]
async fn the_site_has_an_icon() {
    let t = test_store(STORE);
    let api = Api::new(state(t.store.clone()));
    let r = get(
        &api,
        "/favicon.ico",
        Some("image/avif,image/webp,*/*"),
        None,
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.headers["content-type"], "image/svg+xml");
    assert!(r.json.as_str().is_some_and(|s| s.starts_with("<svg")));
}

/// A room's display settings (name, colour, logo, currency): set through
/// the admin API (bad values 422, nothing changed), served by the look
/// route for the waiting page, and shown by the seat page and the room
/// list in place of the id; a pre-queue room lists as "Opens …".
#[tokio::test]
async fn a_room_is_shown_by_its_name_colour_logo_and_currency() {
    let t = test_store(STORE);
    let room = "look-a";
    make_room(t.store.as_ref(), room, RoomSettings::default()).await;
    let api = Api::new(admin_state(t.store.clone()).with_lobby(true));

    let r = api.call("GET", &format!("/queue/{room}/about"), None).await;
    assert_eq!(r.status, 200, "{}", r.json);
    assert_eq!(
        r.json,
        serde_json::json!({"name": null, "color": null, "logo": null, "currency": "KRW",
            "session_seconds": 420, "max_line": null})
    );
    assert_eq!(r.headers["cache-control"], "public, max-age=60");

    for (field, bad) in [
        ("display_name", serde_json::json!("")),
        ("display_name", serde_json::json!("a\u{7}b")),
        ("color", serde_json::json!("red")),
        ("logo", serde_json::json!("//evil.example/x.png")),
        ("logo", serde_json::json!("https://evil.example/x.png")),
        ("currency", serde_json::json!("usd")),
        ("currency", serde_json::json!(5)),
    ] {
        let body = serde_json::json!({ field: bad }).to_string();
        let r = api
            .admin("PATCH", &format!("/admin/rooms/{room}"), body)
            .await;
        assert_eq!(r.status, 422, "{field} {bad}: {}", r.json);
    }
    let opens = "2030-05-01T19:00:00Z";
    let body = serde_json::json!({
        "display_name": "Spring <tour> 봄", "color": "#aa3300",
        "logo": "/static/logo.svg", "currency": "USD", "opens_at": opens,
    });
    let r = api
        .admin("PATCH", &format!("/admin/rooms/{room}"), body.to_string())
        .await;
    assert_eq!(r.status, 200, "{}", r.json);
    assert_eq!(r.json["settings"]["display_name"], "Spring <tour> 봄");

    // A fresh instance reads it from the store (another instance's change).
    let other = Api::new(state(t.store.clone()).with_lobby(true));
    let r = other
        .call("GET", &format!("/queue/{room}/about"), None)
        .await;
    assert_eq!(
        r.json,
        serde_json::json!({"name": "Spring <tour> 봄", "color": "#aa3300",
            "logo": "/static/logo.svg", "currency": "USD", "session_seconds": 420,
            "max_line": null})
    );
    let r = get(&other, &format!("/book/{room}/"), Some(BROWSER), None).await;
    let body = html(&r);
    assert!(
        body.contains("<strong>Spring &lt;tour&gt; 봄</strong>"),
        "{body}"
    );
    assert!(body.contains("\"currency\":\"USD\""));
    assert!(body.contains("--accent:#aa3300"));
    let r = get(&other, "/", Some(BROWSER), None).await;
    let body = html(&r);
    assert!(
        body.contains(&format!("data-room=\"{room}\">Spring &lt;tour&gt; 봄</a>")),
        "{body}"
    );
    // Without script the opening reads in UTC, the zone named; the script
    // shows it in the visitor's own zone from `datetime`.
    assert!(
        body.contains("Opens <time datetime=\"2030-05-01T19:00:00Z\">2030-05-01 19:00 UTC</time>"),
        "{body}"
    );

    let r = api.call("GET", "/queue/no-such-room-q/about", None).await;
    assert_eq!(r.status, 404);
    assert_eq!(r.error_code(), "unknown_room");
}
