//! The OpenAPI document against the router: every route the app serves is
//! in the document and every operation in the document is served; the
//! document describes errors honestly; `/metrics` speaks Prometheus.

use super::STORE;
use std::collections::BTreeSet;
use std::time::Duration;

use crate::common::*;
use axum::body::Body;
use axum::http::Request;
use origin::room::RoomSettings;
use serde_json::Value;

const METHODS: [&str; 5] = ["get", "put", "post", "patch", "delete"];

fn doc() -> Value {
    serde_json::to_value(origin::http::openapi()).unwrap()
}

/// (method, path) of every operation in the document.
fn documented() -> BTreeSet<(String, String)> {
    let doc = doc();
    let mut ops = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            assert!(METHODS.contains(&method.as_str()), "{method} {path}");
            ops.insert((method.clone(), path.clone()));
        }
    }
    ops
}

/// The HTTP sources, by file name.
fn http_sources() -> Vec<(String, String)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src/http");
    let mut files: Vec<(String, String)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read_to_string(&p).unwrap(),
            )
        })
        .collect();
    files.sort();
    files
}

/// Every route is registered through `utoipa_axum::routes!`, which puts it
/// in the document; nothing registers routes any other way, and every
/// `#[utoipa::path]` handler is registered (its operation is in the
/// document).
#[test]
fn every_route_is_registered_with_its_description() {
    let mut attributed = BTreeSet::new();
    for (file, text) in http_sources() {
        for forbidden in [
            ".route(",
            ".route_service(",
            ".nest(",
            ".nest_service(",
            ".fallback_service(",
            "axum::routing::",
        ] {
            assert!(
                !text.contains(forbidden),
                "{file} registers a route with `{forbidden}`, which leaves it out of \
                 the OpenAPI document: use OpenApiRouter::routes(routes!(..)) and #[utoipa::path]"
            );
        }
        assert_eq!(
            text.matches("Router::new()").count(),
            text.matches("OpenApiRouter::new()").count(),
            "{file} builds a plain axum Router, whose routes miss the OpenAPI document"
        );
        for attr in text.split("#[utoipa::path(").skip(1) {
            let method = attr
                .trim_start()
                .split(|c: char| c == ',' || c.is_whitespace())
                .next()
                .unwrap();
            let path = attr
                .split("path = \"")
                .nth(1)
                .and_then(|rest| rest.split('"').next())
                .unwrap_or_else(|| panic!("{file}: a #[utoipa::path] without a path"));
            attributed.insert((method.to_owned(), path.to_owned()));
        }
    }
    assert_eq!(attributed, documented());
}

#[tokio::test]
async fn every_documented_operation_is_served_and_nothing_else_on_its_path() {
    let t = test_store(STORE);
    make_room(t.store.as_ref(), "concert", RoomSettings::default()).await;
    // With every optional route on (`/` lists rooms only with --lobby).
    let api = Api::new(admin_state(t.store.clone()).with_lobby(true));
    let ops = documented();
    let paths: BTreeSet<&String> = ops.iter().map(|(_, p)| p).collect();
    for path in paths {
        let uri = path.replace("{room}", "concert");
        for method in METHODS {
            let r = api
                .send(
                    Request::builder()
                        .method(method.to_uppercase().as_str())
                        .uri(&uri)
                        .body(Body::empty())
                        .unwrap(),
                )
                .await;
            if ops.contains(&(method.to_owned(), path.clone())) {
                assert!(
                    r.status != 405 && !(r.status == 404 && r.json["error"]["code"] == "not_found"),
                    "{method} {path} is documented but not served: {} {}",
                    r.status,
                    r.json
                );
            } else {
                assert_eq!(
                    r.status, 405,
                    "{method} {path} is served but not documented"
                );
                assert_eq!(r.error_code(), "method_not_allowed");
            }
        }
    }
}

/// The document is byte for byte the committed copy: a refactor that changes
/// the contract shows up here. After a deliberate change, write the copy
/// anew with `WR_WRITE_OPENAPI=1` and review its diff.
#[test]
fn the_document_is_the_committed_copy() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/openapi.json");
    let generated = serde_json::to_string_pretty(&origin::http::openapi()).unwrap() + "\n";
    if std::env::var_os("WR_WRITE_OPENAPI").is_some() {
        std::fs::write(path, &generated).unwrap();
    }
    let committed = std::fs::read_to_string(path).unwrap();
    assert!(
        generated == committed,
        "the OpenAPI document differs from tests/openapi.json"
    );
}

#[tokio::test]
async fn the_served_document_is_the_generated_one() {
    let t = test_store(STORE);
    let api = Api::new(state(t.store.clone()));
    let r = api.call("GET", "/openapi.json", None).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.headers["content-type"], "application/json");
    assert_eq!(r.json, doc());
    assert!(r.json["openapi"].as_str().unwrap().starts_with("3."));
}

fn statuses(op: &Value) -> BTreeSet<String> {
    op["responses"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect()
}

/// What the code can answer is in the document: errors with the error
/// body (a 428 with the challenge beside it), 401 where a key or ticket is needed, 404 where a room is named,
/// 400/413/422 where a body is read, 429 and 503 with `Retry-After`, and
/// never a 500.
#[test]
fn the_document_describes_errors_honestly() {
    let doc = doc();
    let error_ref = "#/components/schemas/ErrorBody";
    for (method, path) in documented() {
        let op = &doc["paths"][&path][&method];
        let what = format!("{method} {path}");
        let codes = statuses(op);
        assert!(!codes.contains("500"), "{what}");
        for (code, response) in op["responses"].as_object().unwrap() {
            // A 428 is the error body with what to solve beside it.
            let expected = if code == "428" {
                "#/components/schemas/ChallengeRequiredBody"
            } else {
                error_ref
            };
            if code.starts_with('4') || code.starts_with('5') {
                assert_eq!(
                    response["content"]["application/json"]["schema"]["$ref"], expected,
                    "{what} {code}"
                );
            }
            if code == "429" || code == "503" {
                assert!(
                    response["headers"]["Retry-After"].is_object(),
                    "{what} {code}"
                );
            }
        }
        if path.contains("{room}") {
            assert!(codes.contains("404"), "{what}");
            let param = &op["parameters"][0];
            assert_eq!(param["name"], "room");
            assert_eq!(param["schema"]["pattern"], "^[a-z0-9][a-z0-9-]{0,63}$");
        }
        // The console page (`/admin/`) is the one public path under
        // /admin/: it holds nothing, and asks for the key its calls carry.
        if path.starts_with("/admin/") && path != "/admin/" {
            assert_eq!(
                op["security"],
                serde_json::json!([{"admin_key": []}]),
                "{what}"
            );
            assert!(codes.contains("401"), "{what}");
        }
        if op.get("requestBody").is_some() {
            for code in ["400", "413", "422"] {
                assert!(codes.contains(code), "{what} {code}");
            }
        }
        // Answered without the store: none of these can be 503.
        if ![
            "/healthz",
            "/metrics",
            "/openapi.json",
            "/admin/",
            "/favicon.ico",
        ]
        .contains(&path.as_str())
        {
            assert!(codes.contains("503"), "{what}");
        }
    }
    let join = &doc["paths"]["/queue/{room}/join"]["post"];
    assert!(statuses(join).contains("429"));
    assert!(join["responses"]["200"]["headers"]["Set-Cookie"].is_object());
    for scheme in ["admin_key", "ticket"] {
        assert_eq!(
            doc["components"]["securitySchemes"][scheme]["scheme"],
            "bearer"
        );
    }
}

#[tokio::test]
async fn metrics_show_rooms_and_request_latency_and_stop_with_the_server() {
    let t = test_store(STORE);
    let room = make_paused_room(t.store.as_ref(), "gauged", RoomSettings::default()).await;
    let server = spawn(state(t.store.clone()), Some(Duration::from_millis(50))).await;
    let http = reqwest::Client::new();
    for _ in 0..2 {
        let r = http
            .post(server.url("/queue/gauged/join"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
    }
    assert_eq!(t.store.figures(&room).await.unwrap().waiting, 2);

    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    let text = loop {
        let r = http.get(server.url("/metrics")).send().await.unwrap();
        assert_eq!(r.status(), 200);
        assert!(
            r.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/plain")
        );
        let text = r.text().await.unwrap();
        if text.contains("wr_room_waiting{room=\"gauged\"} 2") {
            break text;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "room gauges never appeared:\n{text}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    for expected in [
        "# TYPE wr_room_waiting gauge",
        "wr_room_active{room=\"gauged\"} 0",
        "wr_room_capacity{room=\"gauged\"} 100",
        "# TYPE wr_room_admitted_total counter",
        "wr_room_admitted_total{room=\"gauged\"} 0",
        "wr_room_abandoned_total{room=\"gauged\"} 0",
        "wr_room_admit_rate{room=\"gauged\"}",
        "wr_room_state{room=\"gauged\",state=\"paused\"} 1",
        "wr_room_state{room=\"gauged\",state=\"open\"} 0",
        "wr_store_up 1",
        "# TYPE wr_http_request_duration_seconds histogram",
        "wr_http_request_duration_seconds_bucket{route=\"/queue/{room}/join\",method=\"POST\",status=\"200\",le=\"",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in\n{text}");
    }
    // Other tests in this process time their requests into the same recorder.
    let joins: f64 = text
        .lines()
        .find_map(|l| {
            l.strip_prefix(
                "wr_http_request_duration_seconds_count{route=\"/queue/{room}/join\",method=\"POST\",status=\"200\"} ",
            )
        })
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no join count in\n{text}"));
    assert!(joins >= 2.0, "{joins}");
    // Unmatched paths do not multiply the series by raw path.
    let r = http.get(server.url("/no/such/x1")).send().await.unwrap();
    assert_eq!(r.status(), 404);
    let text = http
        .get(server.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(text.contains("route=\"unmatched\""), "{text}");
    assert!(!text.contains("x1"));

    // Graceful shutdown waits for the promoter and the metrics refresh.
    tokio::time::timeout(Duration::from_secs(5), server.stop())
        .await
        .expect("the server, promoter and metrics task stop");
}

/// The status poll documents `Prefer: wait` and `Preference-Applied`.
#[test]
fn the_status_poll_documents_its_hold() {
    let doc = doc();
    let op = &doc["paths"]["/queue/{room}/status"]["get"];
    let prefer = op["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "Prefer")
        .unwrap_or_else(|| panic!("no Prefer parameter: {op}"));
    assert_eq!(prefer["in"], "header");
    assert_ne!(prefer["required"], true);
    let headers = &op["responses"]["200"]["headers"];
    assert!(headers["Preference-Applied"].is_object(), "{headers}");
}
