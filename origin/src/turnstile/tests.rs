//! The verifier against a stand-in siteverify on 127.0.0.1: it answers by
//! the token sent (`good*` passes, `bad` is refused, `slow` takes 5 s,
//! `500`, `garbage`, `huge`, `internal`) and records every form it got.

use super::*;
use crate::challenge::{Ask, Refusal};
use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use std::sync::Arc;

type Forms = Arc<Mutex<Vec<HashMap<String, String>>>>;

/// A form body's fields, decoded.
fn fields(body: &[u8]) -> HashMap<String, String> {
    let body = std::str::from_utf8(body).unwrap().replace('+', " ");
    body.split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            let decode = |s: &str| {
                percent_encoding::percent_decode_str(s)
                    .decode_utf8()
                    .unwrap()
                    .into_owned()
            };
            (decode(name), decode(value))
        })
        .collect()
}

async fn siteverify(State(forms): State<Forms>, body: Bytes) -> Response {
    let form = fields(&body);
    let token = form.get("response").cloned().unwrap_or_default();
    forms.lock().unwrap().push(form);
    let json = |v: &str| ([("content-type", "application/json")], v.to_owned()).into_response();
    match token.as_str() {
        t if t.starts_with("good") => json(r#"{"success": true, "error-codes": []}"#),
        "slow" => {
            tokio::time::sleep(Duration::from_secs(5)).await;
            json(r#"{"success": true}"#)
        }
        "500" => (StatusCode::INTERNAL_SERVER_ERROR, "oops").into_response(),
        "garbage" => json("{\"success\": tru"),
        "huge" => json(&format!(
            r#"{{"success": true, "pad": "{}"}}"#,
            "x".repeat(100_000)
        )),
        "internal" => json(r#"{"success": false, "error-codes": ["internal-error"]}"#),
        _ => json(r#"{"success": false, "error-codes": ["invalid-input-response"]}"#),
    }
}

/// A stand-in siteverify: its URL and the forms it receives.
async fn stand_in() -> (String, Forms) {
    let forms = Forms::default();
    let app = Router::new()
        .route("/siteverify", post(siteverify))
        .with_state(forms.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/siteverify"), forms)
}

fn verifier(url: &str) -> Turnstile {
    Turnstile::new(
        Some("the-secret".into()),
        Some("the-site-key".into()),
        url.to_owned(),
    )
    .with_timeout(Duration::from_millis(500))
}

#[tokio::test]
async fn a_good_token_passes_with_the_form_cloudflare_reads() {
    let (url, forms) = stand_in().await;
    let t = verifier(&url);
    let ip: IpAddr = "203.0.113.7".parse().unwrap();
    assert_eq!(t.verify("good-1", Some(ip)).await, Verdict::Passed);
    let sent = forms.lock().unwrap().clone();
    assert_eq!(sent.len(), 1);
    let form = &sent[0];
    assert_eq!(form["secret"], "the-secret");
    assert_eq!(form["response"], "good-1");
    assert_eq!(form["remoteip"], "203.0.113.7");
    assert_eq!(form["idempotency_key"], idempotency_key("good-1"));
    assert_eq!(form.len(), 4, "{form:?}");

    // No address: no `remoteip`.
    assert_eq!(t.verify("good-2", None).await, Verdict::Passed);
    let form = forms.lock().unwrap()[1].clone();
    assert!(!form.contains_key("remoteip"), "{form:?}");
    let ip6: IpAddr = "2001:db8::1".parse().unwrap();
    assert_eq!(t.verify("good-3", Some(ip6)).await, Verdict::Passed);
    assert_eq!(forms.lock().unwrap()[2]["remoteip"], "2001:db8::1");
}

#[tokio::test]
async fn a_token_cloudflare_refuses_is_refused() {
    let (url, forms) = stand_in().await;
    let t = verifier(&url);
    assert_eq!(t.verify("bad", None).await, Verdict::Refused);
    // Not remembered: asked again (Cloudflare refuses it again).
    assert_eq!(t.verify("bad", None).await, Verdict::Refused);
    assert_eq!(forms.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn a_reused_token_passes_without_a_second_call() {
    let (url, forms) = stand_in().await;
    let t = verifier(&url);
    assert_eq!(t.verify("good-again", None).await, Verdict::Passed);
    for _ in 0..3 {
        assert_eq!(t.verify("good-again", None).await, Verdict::Passed);
    }
    assert_eq!(forms.lock().unwrap().len(), 1, "one call for four uses");
    // Another instance (another verifier) asks Cloudflare itself.
    assert_eq!(
        verifier(&url).verify("good-again", None).await,
        Verdict::Passed
    );
    assert_eq!(forms.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn empty_and_overlong_tokens_are_refused_unasked() {
    let (url, forms) = stand_in().await;
    let t = verifier(&url);
    assert_eq!(t.verify("", None).await, Verdict::Refused);
    let long = format!("good{}", "x".repeat(MAX_TOKEN_LEN));
    assert_eq!(t.verify(&long, None).await, Verdict::Refused);
    assert!(forms.lock().unwrap().is_empty());
    let longest = format!("good{}", "x".repeat(MAX_TOKEN_LEN - 4));
    assert_eq!(t.verify(&longest, None).await, Verdict::Passed);
}

#[tokio::test]
async fn no_answer_is_unavailable() {
    let (url, _) = stand_in().await;
    let t = verifier(&url);
    let started = Instant::now();
    assert_eq!(t.verify("slow", None).await, Verdict::Unavailable);
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(500) && took < Duration::from_secs(3),
        "{took:?}"
    );
    for token in ["500", "garbage", "huge", "internal"] {
        assert_eq!(t.verify(token, None).await, Verdict::Unavailable, "{token}");
    }
    // https to a server that speaks plain http: the TLS stack (rustls with
    // ring) starts a handshake, which fails.
    let tls = verifier(&url.replace("http://", "https://"));
    assert_eq!(tls.verify("good", None).await, Verdict::Unavailable);

    // Nothing listening.
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = closed.local_addr().unwrap();
    drop(closed);
    let down = verifier(&format!("http://{addr}/siteverify"));
    assert_eq!(down.verify("good", None).await, Verdict::Unavailable);
    // Not a URL at all.
    assert_eq!(
        verifier("not a url").verify("good", None).await,
        Verdict::Unavailable
    );
}

#[tokio::test]
async fn an_origin_without_a_secret_never_calls_out() {
    let (url, forms) = stand_in().await;
    let t = Turnstile::new(None, Some("site".into()), url);
    assert!(!t.is_configured());
    assert_eq!(t.site_key(), Some("site"));
    assert_eq!(t.verify("good", None).await, Verdict::Unavailable);
    assert!(forms.lock().unwrap().is_empty());
}

#[test]
fn configured_needs_both_keys() {
    let url = || DEFAULT_VERIFY_URL.to_owned();
    let both = Turnstile::new(Some("s".into()), Some("k".into()), url());
    assert!(both.is_configured());
    assert_eq!(both.site_key(), Some("k"));
    assert!(!Turnstile::new(Some("s".into()), None, url()).is_configured());
    assert!(!Turnstile::new(None, Some("k".into()), url()).is_configured());
    assert!(!Turnstile::new(Some(" ".into()), Some("k".into()), url()).is_configured());
    assert!(!Turnstile::unconfigured().is_configured());
}

#[test]
fn debug_shows_no_secret() {
    let t = Turnstile::new(
        Some("hunter2-turnstile".into()),
        Some("site-key".into()),
        DEFAULT_VERIFY_URL.to_owned(),
    );
    let shown = format!("{t:?}");
    assert!(!shown.contains("hunter2"), "{shown}");
    assert!(shown.contains("site-key"), "{shown}");
}

#[test]
fn keys_are_the_tokens_hash() {
    assert_eq!(key("a"), key("a"));
    assert_ne!(key("a"), key("b"));
    // SHA-256("abc") starts ba7816bf8f01cfea.
    assert_eq!(key("abc"), [0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea]);
    let uuid = idempotency_key("abc");
    assert_eq!(uuid.len(), 36);
    assert_eq!(uuid.as_bytes()[14], b'4', "{uuid}");
    assert_eq!(uuid.matches('-').count(), 4, "{uuid}");
    assert_eq!(uuid, idempotency_key("abc"));
    assert_ne!(uuid, idempotency_key("abd"));
}

#[test]
fn the_memory_forgets_after_a_tokens_life() {
    let mut m = Memory::new(10, TOKEN_LIFE);
    let t0 = Instant::now();
    m.remember(key("a"), t0);
    m.remember(key("b"), t0 + Duration::from_secs(100));
    assert!(m.seen(&key("a"), t0 + Duration::from_secs(299)));
    // A second pass keeps the first time.
    m.remember(key("a"), t0 + Duration::from_secs(200));
    assert!(!m.seen(&key("a"), t0 + TOKEN_LIFE));
    assert!(m.seen(&key("b"), t0 + TOKEN_LIFE));
    assert_eq!(m.len(), 1);
    assert!(!m.seen(&key("b"), t0 + Duration::from_secs(400)));
    assert_eq!((m.len(), m.at.len()), (0, 0));
}

#[test]
fn the_memory_is_bounded_dropping_the_oldest() {
    let mut m = Memory::new(1000, TOKEN_LIFE);
    let t0 = Instant::now();
    for i in 0..5000u32 {
        m.remember(
            key(&i.to_string()),
            t0 + Duration::from_millis(u64::from(i)),
        );
        assert!(m.len() <= 1000);
    }
    assert_eq!((m.len(), m.at.len()), (1000, 1000));
    let now = t0 + Duration::from_secs(5);
    assert!(!m.seen(&key("0"), now));
    assert!(!m.seen(&key("3999"), now));
    assert!(m.seen(&key("4000"), now));
    assert!(m.seen(&key("4999"), now));
}

#[tokio::test]
async fn the_verifiers_memory_is_capped() {
    let t = Turnstile::unconfigured();
    assert_eq!(t.memory().cap, MAX_REMEMBERED);
    let now = Instant::now();
    for i in 0..(MAX_REMEMBERED as u32 + 10) {
        t.memory().remember(key(&i.to_string()), now);
    }
    assert_eq!(t.memory().len(), MAX_REMEMBERED);
}

#[tokio::test]
async fn what_a_join_shows_the_store() {
    let (url, forms) = stand_in().await;
    let t = verifier(&url);
    let now_ms = 1_900_000_000_000;
    let proof = |answer: Option<&'static str>, standing: bool, fail: ChallengeFail| {
        let t = &t;
        async move { t.join_proof(fail, answer, standing, None, now_ms).await }
    };
    match proof(None, false, ChallengeFail::Closed).await {
        Err(Refusal::Required(ask)) => {
            assert!(matches!(*ask, Ask::Turnstile { ref site_key } if site_key == "the-site-key"))
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        proof(None, true, ChallengeFail::Closed).await,
        Ok(Proof::Missing)
    ));
    assert!(forms.lock().unwrap().is_empty(), "no token, no call");
    match proof(Some("good-join"), false, ChallengeFail::Closed).await {
        Ok(Proof::Solved {
            key: k,
            expires_at_ms,
        }) => {
            assert_eq!(k, key("good-join"));
            assert_eq!(expires_at_ms, now_ms + 300_000);
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        proof(Some("bad"), true, ChallengeFail::Open).await,
        Err(Refusal::Failed(_))
    ));
    assert!(matches!(
        proof(Some("500"), false, ChallengeFail::Closed).await,
        Err(Refusal::Unavailable)
    ));
    assert!(matches!(
        proof(Some("500"), false, ChallengeFail::Open).await,
        Ok(Proof::NotAsked)
    ));
    // No site key: nothing to render, so no 428.
    let keyless = Turnstile::new(Some("s".into()), None, url);
    assert!(matches!(keyless.ask(), Refusal::Unavailable));
}
