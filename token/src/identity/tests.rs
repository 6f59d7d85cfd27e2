//! Identity tokens: what is accepted, every way one is refused, the key
//! lists, and the account hash.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

use base64::Engine as _;
use base64::engine::general_purpose::{URL_SAFE, URL_SAFE_NO_PAD};
use hmac::{Hmac, KeyInit, Mac};
use proptest::prelude::*;
use serde_json::{Value, json};
use sha2::Sha256;

use super::*;
use crate::error::KeyringError;

const NOW: u64 = 1_700_000_100;
const ROOM: &str = "launch";
const HS_KID: &str = "site1";
const HS_SECRET: &[u8] = b"identity-secret-0123456789";
const HS_KID_2: &str = "site2";
const HS_SECRET_2: &[u8] = b"identity-secret-two-0123456789";
const ED_KID: &str = "ed1";
const ED_SEED: [u8; 32] = [7; 32];

fn keys() -> IdentityKeys {
    let hs = format!(
        "{HS_KID}:{},{HS_KID_2}:{}",
        core::str::from_utf8(HS_SECRET).unwrap(),
        core::str::from_utf8(HS_SECRET_2).unwrap()
    );
    let ed = format!("{ED_KID}:{}", ed25519_public_key(&ED_SEED));
    IdentityKeys::parse(Some(&hs), Some(&ed)).unwrap()
}

fn claims() -> Value {
    json!({
        "sub": "user-42",
        "aud": ROOM,
        "iat": NOW - 100,
        "exp": NOW + 600,
    })
}

/// `claims()` with `key` set to `value` (`Value::Null` removes it).
fn with(key: &str, value: Value) -> Value {
    let mut c = claims();
    let map = c.as_object_mut().unwrap();
    if value.is_null() {
        map.remove(key);
    } else {
        map.insert(key.to_string(), value);
    }
    c
}

fn verify(token: &str) -> Result<Identity, IdentityError> {
    keys().verify(token, ROOM, NOW)
}

fn user42() -> Result<Identity, IdentityError> {
    Ok(Identity {
        sub: "user-42".to_string(),
    })
}

fn b64(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// A token built by hand from header and claims JSON: HS256-MACed with
/// `secret` when given, with an empty signature otherwise.
fn hand_built(header: &Value, claims: &Value, secret: Option<&[u8]>) -> String {
    let message = format!(
        "{}.{}",
        b64(header.to_string().as_bytes()),
        b64(claims.to_string().as_bytes())
    );
    let signature = match secret {
        Some(secret) => {
            let mut mac = Hmac::<Sha256>::new_from_slice(secret).unwrap();
            mac.update(message.as_bytes());
            b64(&mac.finalize().into_bytes())
        }
        None => String::new(),
    };
    format!("{message}.{signature}")
}

#[test]
fn valid_hs256() {
    let token = sign_hs256(HS_KID, HS_SECRET, &claims());
    assert_eq!(verify(&token), user42());
}

#[test]
fn valid_hs256_under_a_second_kid() {
    let token = sign_hs256(HS_KID_2, HS_SECRET_2, &claims());
    assert_eq!(verify(&token), user42());
}

#[test]
fn valid_eddsa() {
    let token = sign_ed25519(ED_KID, &ED_SEED, &claims());
    assert!(token.starts_with(&b64(br#"{"typ":"JWT","alg":"EdDSA""#)[..20]));
    assert_eq!(verify(&token), user42());
}

#[test]
fn hand_built_hs256_verifies() {
    // The helper and the library agree on the format, so the refusals
    // below built with it are refused for what they test, not the shape.
    let header = json!({"alg": "HS256", "kid": HS_KID});
    assert_eq!(
        verify(&hand_built(&header, &claims(), Some(HS_SECRET))),
        user42()
    );
}

#[test]
fn optional_claims_may_be_absent() {
    let c = json!({"sub": "user-42", "aud": ROOM, "exp": NOW + 1});
    assert_eq!(verify(&sign_hs256(HS_KID, HS_SECRET, &c)), user42());
}

#[test]
fn forged_signature() {
    let forged = sign_hs256(HS_KID, b"not-the-secret-0123456789", &claims());
    assert_eq!(verify(&forged), Err(IdentityError::BadSignature));

    let forged = sign_ed25519(ED_KID, &[8; 32], &claims());
    assert_eq!(verify(&forged), Err(IdentityError::BadSignature));
}

#[test]
fn changed_claims_break_the_signature() {
    for token in [
        sign_hs256(HS_KID, HS_SECRET, &claims()),
        sign_ed25519(ED_KID, &ED_SEED, &claims()),
    ] {
        let parts: Vec<&str> = token.split('.').collect();
        let other = b64(with("sub", json!("user-43")).to_string().as_bytes());
        let tampered = format!("{}.{other}.{}", parts[0], parts[2]);
        assert_eq!(verify(&tampered), Err(IdentityError::BadSignature));
    }
}

#[test]
fn flipped_signature_bits_are_bad_signature() {
    for token in [
        sign_hs256(HS_KID, HS_SECRET, &claims()),
        sign_ed25519(ED_KID, &ED_SEED, &claims()),
    ] {
        let (message, signature) = token.rsplit_once('.').unwrap();
        let signature = URL_SAFE_NO_PAD.decode(signature).unwrap();
        for i in 0..signature.len() {
            let mut s = signature.clone();
            s[i] ^= 0x01;
            let bad = format!("{message}.{}", b64(&s));
            assert_eq!(verify(&bad), Err(IdentityError::BadSignature), "byte {i}");
        }
        // Short and long signatures are no better.
        let short = format!("{message}.{}", b64(&signature[..signature.len() - 1]));
        assert_eq!(verify(&short), Err(IdentityError::BadSignature));
        let mut long = signature.clone();
        long.push(0);
        let long = format!("{message}.{}", b64(&long));
        assert_eq!(verify(&long), Err(IdentityError::BadSignature));
        let empty = format!("{message}.");
        assert_eq!(verify(&empty), Err(IdentityError::BadSignature));
    }
}

#[test]
fn expired() {
    let token = sign_hs256(HS_KID, HS_SECRET, &claims());
    let at = |now| keys().verify(&token, ROOM, now);
    assert_eq!(at(NOW + 599), user42());
    assert_eq!(at(NOW + 600), Err(IdentityError::Expired));
    assert_eq!(at(u64::MAX), Err(IdentityError::Expired));

    let past = sign_hs256(HS_KID, HS_SECRET, &with("exp", json!(NOW - 1)));
    assert_eq!(verify(&past), Err(IdentityError::Expired));
    let zero = sign_hs256(HS_KID, HS_SECRET, &with("exp", json!(0)));
    assert_eq!(verify(&zero), Err(IdentityError::Expired));
}

#[test]
fn not_yet_valid() {
    let token = sign_hs256(HS_KID, HS_SECRET, &with("nbf", json!(NOW + 10)));
    let at = |now| keys().verify(&token, ROOM, now);
    assert_eq!(at(NOW), Err(IdentityError::NotYetValid));
    assert_eq!(at(NOW + 9), Err(IdentityError::NotYetValid));
    assert_eq!(at(NOW + 10), user42());

    let past = sign_hs256(HS_KID, HS_SECRET, &with("nbf", json!(NOW - 10)));
    assert_eq!(verify(&past), user42());
}

#[test]
fn iat_in_the_future_is_not_refused() {
    // Only nbf says when a token starts to count.
    let token = sign_hs256(HS_KID, HS_SECRET, &with("iat", json!(NOW + 100)));
    assert_eq!(verify(&token), user42());
}

#[test]
fn fractional_dates_round_towards_refusal() {
    let token = sign_hs256(HS_KID, HS_SECRET, &with("exp", json!(1000.5)));
    assert_eq!(keys().verify(&token, ROOM, 999), user42());
    assert_eq!(
        keys().verify(&token, ROOM, 1000),
        Err(IdentityError::Expired)
    );

    let token = sign_hs256(
        HS_KID,
        HS_SECRET,
        &json!({"sub": "u", "aud": ROOM, "exp": 5000, "nbf": 1000.5}),
    );
    assert_eq!(
        keys().verify(&token, ROOM, 1000),
        Err(IdentityError::NotYetValid)
    );
    assert!(keys().verify(&token, ROOM, 1001).is_ok());
}

#[test]
fn other_room_aud() {
    let token = sign_hs256(HS_KID, HS_SECRET, &claims());
    for room in ["launc", "launcher", "other", "LAUNCH", ""] {
        assert_eq!(
            keys().verify(&token, room, NOW),
            Err(IdentityError::WrongAudience),
            "{room:?}"
        );
    }
}

#[test]
fn aud_list_containing_the_room() {
    for aud in [json!([ROOM]), json!(["presale", ROOM, "other"])] {
        let token = sign_hs256(HS_KID, HS_SECRET, &with("aud", aud.clone()));
        assert_eq!(verify(&token), user42(), "{aud}");
    }
}

#[test]
fn aud_list_not_containing_the_room() {
    for aud in [json!([]), json!(["presale", "other"]), json!(["launch2"])] {
        let token = sign_hs256(HS_KID, HS_SECRET, &with("aud", aud.clone()));
        assert_eq!(verify(&token), Err(IdentityError::WrongAudience), "{aud}");
    }
}

#[test]
fn aud_of_the_wrong_type() {
    for aud in [
        json!(5),
        json!({"room": ROOM}),
        json!([ROOM, 5]),
        json!(true),
    ] {
        let token = sign_hs256(HS_KID, HS_SECRET, &with("aud", aud.clone()));
        assert_eq!(
            verify(&token),
            Err(IdentityError::InvalidClaim("aud")),
            "{aud}"
        );
    }
}

#[test]
fn unknown_kid() {
    let token = sign_hs256("site9", HS_SECRET, &claims());
    assert_eq!(verify(&token), Err(IdentityError::UnknownKid));
    // A kid is matched exactly.
    let token = sign_hs256("SITE1", HS_SECRET, &claims());
    assert_eq!(verify(&token), Err(IdentityError::UnknownKid));
}

#[test]
fn missing_kid() {
    let header = json!({"alg": "HS256", "typ": "JWT"});
    let token = hand_built(&header, &claims(), Some(HS_SECRET));
    assert_eq!(verify(&token), Err(IdentityError::MissingKid));
}

#[test]
fn alg_none() {
    for header in [
        json!({"alg": "none", "kid": HS_KID}),
        json!({"alg": "none"}),
        json!({"alg": "None", "kid": HS_KID}),
        json!({"alg": "", "kid": HS_KID}),
    ] {
        let unsigned = hand_built(&header, &claims(), None);
        assert_eq!(
            verify(&unsigned),
            Err(IdentityError::AlgorithmNotAllowed),
            "{header}"
        );
        // Nor with a signature made with a known secret.
        let signed = hand_built(&header, &claims(), Some(HS_SECRET));
        assert_eq!(
            verify(&signed),
            Err(IdentityError::AlgorithmNotAllowed),
            "{header}"
        );
    }
}

#[test]
fn hs512_signed_with_a_known_kids_secret() {
    let mut header = jsonwebtoken::Header::new(Algorithm::HS512);
    header.kid = Some(HS_KID.to_string());
    let token = jsonwebtoken::encode(
        &header,
        &claims(),
        &jsonwebtoken::EncodingKey::from_secret(HS_SECRET),
    )
    .unwrap();
    assert_eq!(verify(&token), Err(IdentityError::AlgorithmNotAllowed));
}

#[test]
fn other_algorithms_are_refused_before_any_key_is_used() {
    for alg in ["RS256", "PS256", "ES256", "HS384"] {
        let header = json!({"alg": alg, "kid": HS_KID});
        let token = hand_built(&header, &claims(), Some(HS_SECRET));
        assert_eq!(
            verify(&token),
            Err(IdentityError::AlgorithmNotAllowed),
            "{alg}"
        );
    }
}

#[test]
fn eddsa_token_under_an_hs256_kid() {
    let token = sign_ed25519(HS_KID, &ED_SEED, &claims());
    assert_eq!(verify(&token), Err(IdentityError::AlgorithmNotAllowed));
}

#[test]
fn hs256_token_under_an_ed25519_kid() {
    // The classic confusion: an HMAC keyed with the (public) Ed25519 key.
    let public = URL_SAFE_NO_PAD
        .decode(ed25519_public_key(&ED_SEED))
        .unwrap();
    let token = sign_hs256(ED_KID, &public, &claims());
    assert_eq!(verify(&token), Err(IdentityError::AlgorithmNotAllowed));
    let token = sign_hs256(ED_KID, HS_SECRET, &claims());
    assert_eq!(verify(&token), Err(IdentityError::AlgorithmNotAllowed));
}

#[test]
fn crit_header_is_refused() {
    let header = json!({"alg": "HS256", "kid": HS_KID, "crit": ["exp"]});
    let token = hand_built(&header, &claims(), Some(HS_SECRET));
    assert_eq!(verify(&token), Err(IdentityError::Malformed));
}

#[test]
fn missing_sub_exp_aud() {
    for name in ["sub", "exp", "aud"] {
        let token = sign_hs256(HS_KID, HS_SECRET, &with(name, Value::Null));
        assert_eq!(
            verify(&token),
            Err(IdentityError::MissingClaim(name)),
            "{name}"
        );
        // An explicit null is as absent.
        let mut c = claims();
        c.as_object_mut()
            .unwrap()
            .insert(name.to_string(), Value::Null);
        let token = sign_hs256(HS_KID, HS_SECRET, &c);
        assert_eq!(
            verify(&token),
            Err(IdentityError::MissingClaim(name)),
            "{name}"
        );
    }
}

#[test]
fn sub_length() {
    let ok = |sub: String| {
        let token = sign_hs256(HS_KID, HS_SECRET, &with("sub", json!(sub.clone())));
        assert_eq!(verify(&token), Ok(Identity { sub }));
    };
    ok("a".to_string());
    ok("a".repeat(255));
    // Characters, not bytes: 255 two-byte characters are fine.
    ok("é".repeat(255));

    for bad in ["a".repeat(256), "é".repeat(256), String::new()] {
        let token = sign_hs256(HS_KID, HS_SECRET, &with("sub", json!(bad)));
        assert_eq!(verify(&token), Err(IdentityError::InvalidClaim("sub")));
    }
}

#[test]
fn claims_of_the_wrong_type() {
    let cases = [
        ("sub", json!(42)),
        ("sub", json!(true)),
        ("exp", json!("soon")),
        ("exp", json!(-1)),
        ("exp", json!(true)),
        ("nbf", json!("now")),
        ("nbf", json!(-5.5)),
        ("iat", json!("yesterday")),
    ];
    for (name, value) in cases {
        let token = sign_hs256(HS_KID, HS_SECRET, &with(name, value.clone()));
        assert_eq!(
            verify(&token),
            Err(IdentityError::InvalidClaim(name)),
            "{name} = {value}"
        );
    }
}

#[test]
fn sub_as_a_list_or_object_is_refused() {
    for sub in [json!(["user-42"]), json!({"id": "user-42"})] {
        let token = sign_hs256(HS_KID, HS_SECRET, &with("sub", sub.clone()));
        assert_eq!(
            verify(&token),
            Err(IdentityError::InvalidClaim("sub")),
            "{sub}"
        );
    }
}

#[test]
fn claims_that_are_not_an_object_are_malformed() {
    for c in [json!([1, 2]), json!("user-42"), json!(null)] {
        let token = sign_hs256(HS_KID, HS_SECRET, &c);
        assert_eq!(verify(&token), Err(IdentityError::Malformed), "{c}");
    }
}

#[test]
fn oversized_token() {
    let huge = "a".repeat(MAX_IDENTITY_TOKEN_LEN + 1);
    assert_eq!(verify(&huge), Err(IdentityError::TooLong));

    // A real, valid token just over the bound is refused too ...
    let token = |pad: usize| sign_hs256(HS_KID, HS_SECRET, &with("pad", json!("x".repeat(pad))));
    let mut pad = 2900;
    while token(pad).len() <= MAX_IDENTITY_TOKEN_LEN {
        pad += 1;
    }
    assert_eq!(verify(&token(pad)), Err(IdentityError::TooLong));
    // ... and one just under it is accepted.
    assert!(token(pad - 1).len() <= MAX_IDENTITY_TOKEN_LEN);
    assert_eq!(verify(&token(pad - 1)), user42());
}

#[test]
fn garbage_input() {
    let valid = sign_hs256(HS_KID, HS_SECRET, &claims());
    let (h, rest) = valid.split_once('.').unwrap();
    let (c, s) = rest.split_once('.').unwrap();
    let cases = vec![
        String::new(),
        ".".to_string(),
        "..".to_string(),
        "...".to_string(),
        "not a jwt".to_string(),
        "a.b.c".to_string(),
        "eyJ.eyJ.sig".to_string(),
        format!("{h}.{c}"),
        format!("{h}.{c}.{s}.{s}"),
        format!("{h}..{s}"),
        format!(".{c}.{s}"),
        format!("{h}={c}.{s}"),
        format!("{h}.{c}=.{s}"),
        format!(" {valid}"),
        format!("{valid} "),
        valid.replace('.', ","),
        format!("{}.{c}.{s}", b64(b"not json")),
        format!("{}.{c}.{s}", b64(b"[1,2,3]")),
        format!("{}.{c}.{s}", b64(br#"{"kid":"site1"}"#)),
        format!("{}.{c}.{s}", b64(br#"{"alg":5,"kid":"site1"}"#)),
        // Padded base64url is not JWS.
        format!(
            "{}.{}.{s}",
            URL_SAFE.encode(br#"{"alg":"HS256","kid":"site1"}"#),
            c
        ),
        "\u{0}\u{1}\u{2}".to_string(),
        "é.é.é".to_string(),
    ];
    for bad in cases {
        let got = verify(&bad);
        assert!(
            matches!(
                got,
                Err(IdentityError::Malformed | IdentityError::BadSignature)
            ),
            "{bad:?}: {got:?}"
        );
    }
}

#[test]
fn claims_with_bad_json_after_a_good_signature_are_malformed() {
    let header = b64(br#"{"alg":"HS256","kid":"site1"}"#);
    let message = format!("{header}.{}", b64(b"{not json"));
    let mut mac = Hmac::<Sha256>::new_from_slice(HS_SECRET).unwrap();
    mac.update(message.as_bytes());
    let token = format!("{message}.{}", b64(&mac.finalize().into_bytes()));
    assert_eq!(verify(&token), Err(IdentityError::Malformed));
}

#[test]
fn a_claim_named_twice_is_malformed() {
    // Which of two `sub`s counts would differ between readers: neither does.
    let header = b64(br#"{"alg":"HS256","kid":"site1"}"#);
    let claims = format!(
        r#"{{"sub":"user-42","sub":"user-43","aud":"{ROOM}","exp":{}}}"#,
        NOW + 600
    );
    let message = format!("{header}.{}", b64(claims.as_bytes()));
    let mut mac = Hmac::<Sha256>::new_from_slice(HS_SECRET).unwrap();
    mac.update(message.as_bytes());
    let token = format!("{message}.{}", b64(&mac.finalize().into_bytes()));
    assert_eq!(verify(&token), Err(IdentityError::Malformed));
}

#[test]
fn no_keys_refuse_everything() {
    for (hs, ed) in [(None, None), (Some(""), Some("  ")), (Some(" \n"), None)] {
        let none = IdentityKeys::parse(hs, ed).unwrap();
        assert!(none.is_empty());
        let token = sign_hs256(HS_KID, HS_SECRET, &claims());
        assert_eq!(
            none.verify(&token, ROOM, NOW),
            Err(IdentityError::UnknownKid)
        );
    }
    assert!(!keys().is_empty());
}

#[test]
fn one_list_alone() {
    let hs = IdentityKeys::parse(Some("site1:identity-secret-0123456789"), None).unwrap();
    assert_eq!(
        hs.verify(&sign_hs256(HS_KID, HS_SECRET, &claims()), ROOM, NOW),
        user42()
    );
    assert_eq!(
        hs.verify(&sign_ed25519(ED_KID, &ED_SEED, &claims()), ROOM, NOW),
        Err(IdentityError::UnknownKid)
    );

    let ed = format!("{ED_KID}:{}", ed25519_public_key(&ED_SEED));
    let ed = IdentityKeys::parse(None, Some(&ed)).unwrap();
    assert_eq!(
        ed.verify(&sign_ed25519(ED_KID, &ED_SEED, &claims()), ROOM, NOW),
        user42()
    );
}

#[test]
fn ed25519_keys_padded_or_not_with_whitespace() {
    let public = URL_SAFE_NO_PAD
        .decode(ed25519_public_key(&ED_SEED))
        .unwrap();
    let padded = URL_SAFE.encode(&public);
    assert!(padded.ends_with('='));
    let other = ed25519_public_key(&[9; 32]);
    let spec = format!(" ed1:{padded} ,\ted2:{other}\n");
    let keys = IdentityKeys::parse(None, Some(&spec)).unwrap();
    let token = sign_ed25519("ed1", &ED_SEED, &claims());
    assert_eq!(keys.verify(&token, ROOM, NOW), user42());
    let token = sign_ed25519("ed2", &[9; 32], &claims());
    assert_eq!(keys.verify(&token, ROOM, NOW), user42());
}

#[test]
fn key_list_errors() {
    let good_ed = ed25519_public_key(&ED_SEED);
    let public = URL_SAFE_NO_PAD.decode(&good_ed).unwrap();
    let bad_point = (0u8..=255)
        .map(|b| [b; 32])
        .find(|k| ed25519_dalek::VerifyingKey::from_bytes(k).is_err())
        .unwrap();
    let mut identity_point = [0u8; 32];
    identity_point[0] = 1;

    let hs_cases: &[(&str, IdentityKeyError)] = &[
        (
            "site1:short",
            IdentityKeyError::Hs256(KeyringError::ShortSecret {
                entry: 1,
                kid: "site1".to_string(),
                len: 5,
            }),
        ),
        (
            "site1:identity-secret-0123456789,",
            IdentityKeyError::Hs256(KeyringError::BadEntry {
                entry: 2,
                reason: "empty entry (stray ',')",
            }),
        ),
        (
            "identity-secret-0123456789",
            IdentityKeyError::Hs256(KeyringError::BadEntry {
                entry: 1,
                reason: "no ':' between kid and secret",
            }),
        ),
        (
            "a:identity-secret-0123456789,a:identity-secret-9876543210",
            IdentityKeyError::Hs256(KeyringError::DuplicateKid {
                entry: 2,
                kid: "a".to_string(),
            }),
        ),
    ];
    for (spec, want) in hs_cases {
        assert_eq!(
            IdentityKeys::parse(Some(spec), None).unwrap_err(),
            *want,
            "{spec}"
        );
    }

    let ed_cases: Vec<(String, IdentityKeyError)> = vec![
        (
            good_ed.clone(),
            IdentityKeyError::Ed25519Entry {
                entry: 1,
                reason: "no ':' between kid and key",
            },
        ),
        (
            format!("ed1:{good_ed},,"),
            IdentityKeyError::Ed25519Entry {
                entry: 2,
                reason: "empty entry (stray ',')",
            },
        ),
        (
            format!("ed1: {good_ed}"),
            IdentityKeyError::Ed25519Entry {
                entry: 1,
                reason: "whitespace after ':'",
            },
        ),
        (
            format!("bad kid:{good_ed}"),
            IdentityKeyError::Ed25519Kid { entry: 1, len: 7 },
        ),
        (
            "ed1:not base64!".to_string(),
            IdentityKeyError::Ed25519Key {
                entry: 1,
                kid: "ed1".to_string(),
                reason: "not base64url",
            },
        ),
        (
            format!("ed1:{}", URL_SAFE_NO_PAD.encode(&public[..31])),
            IdentityKeyError::Ed25519Key {
                entry: 1,
                kid: "ed1".to_string(),
                reason: "not 32 bytes (a raw Ed25519 public key)",
            },
        ),
        (
            format!("ed1:{}", URL_SAFE_NO_PAD.encode(bad_point)),
            IdentityKeyError::Ed25519Key {
                entry: 1,
                kid: "ed1".to_string(),
                reason: "not a point of the curve",
            },
        ),
        (
            format!("ed1:{}", URL_SAFE_NO_PAD.encode(identity_point)),
            IdentityKeyError::Ed25519Key {
                entry: 1,
                kid: "ed1".to_string(),
                reason: "a weak (small-order) key, which any signature matches",
            },
        ),
        (
            format!("ed1:{good_ed},ed1:{good_ed}"),
            IdentityKeyError::DuplicateKid {
                kid: "ed1".to_string(),
            },
        ),
    ];
    for (spec, want) in ed_cases {
        assert_eq!(
            IdentityKeys::parse(None, Some(&spec)).unwrap_err(),
            want,
            "{spec}"
        );
    }

    // A kid in both lists.
    assert_eq!(
        IdentityKeys::parse(
            Some("same:identity-secret-0123456789"),
            Some(&format!("same:{good_ed}"))
        )
        .unwrap_err(),
        IdentityKeyError::DuplicateKid {
            kid: "same".to_string()
        }
    );
}

#[test]
fn key_errors_name_the_flag_and_never_a_secret() {
    let err = IdentityKeys::parse(Some("site1:SECRET-short"), None).unwrap_err();
    let shown = format!("{err} {err:?}");
    assert!(shown.contains("--identity-keys"), "{shown}");
    assert!(!shown.contains("SECRET"), "{shown}");

    let err = IdentityKeys::parse(None, Some("ed1:abc")).unwrap_err();
    assert!(err.to_string().contains("--identity-public-keys"), "{err}");
}

#[test]
fn debug_never_shows_secrets_or_accounts() {
    let shown = format!("{:?}", keys());
    assert!(shown.contains(HS_KID) && shown.contains(ED_KID), "{shown}");
    assert!(!shown.contains("identity-secret"), "{shown}");

    let identity = Identity {
        sub: "alice@example.com".to_string(),
    };
    let shown = format!("{identity:?}");
    assert!(!shown.contains("alice"), "{shown}");

    let shown = format!("{:?}", AccountHasher::new(b"account-key-0123456789"));
    assert!(!shown.contains("account-key"), "{shown}");
}

#[test]
fn error_messages_say_which() {
    let all = [
        IdentityError::TooLong,
        IdentityError::Malformed,
        IdentityError::AlgorithmNotAllowed,
        IdentityError::MissingKid,
        IdentityError::UnknownKid,
        IdentityError::BadSignature,
        IdentityError::Expired,
        IdentityError::NotYetValid,
        IdentityError::WrongAudience,
        IdentityError::MissingClaim("sub"),
        IdentityError::InvalidClaim("sub"),
    ];
    let messages: Vec<String> = all.iter().map(ToString::to_string).collect();
    for (i, m) in messages.iter().enumerate() {
        assert!(m.starts_with("identity token"), "{m}");
        assert!(!messages[..i].contains(m), "{m} twice");
    }
    assert_eq!(
        IdentityError::MissingClaim("exp").to_string(),
        "identity token lacks the exp claim"
    );
}

/// Pinned against Python's `hmac.new(key, b"launch\x00user-42", sha256)`.
#[test]
fn account_hash_known_vector() {
    let h = AccountHasher::new(b"account-key-0123456789");
    assert_eq!(
        h.hash("launch", "user-42"),
        [0x0f, 0xf6, 0x00, 0x3b, 0x41, 0x71, 0x69, 0xeb]
    );
}

#[test]
fn account_hash_depends_on_key_room_and_sub() {
    let h = AccountHasher::new(b"account-key-0123456789");
    let base = h.hash("launch", "user-42");
    assert_eq!(h.clone().hash("launch", "user-42"), base);
    assert_ne!(h.hash("launch2", "user-42"), base);
    assert_ne!(h.hash("launch", "user-43"), base);
    assert_ne!(
        AccountHasher::new(b"account-key-9876543210").hash("launch", "user-42"),
        base
    );
    // The separator keeps the room and the account apart.
    assert_ne!(h.hash("ab", "c"), h.hash("a", "bc"));
    // Any key length works.
    assert_ne!(AccountHasher::new(b"").hash("a", "b"), [0; 8]);
    assert_ne!(AccountHasher::new(&[1; 200]).hash("a", "b"), [0; 8]);
}

#[test]
fn keys_are_shared_by_clones() {
    let a = keys();
    let b = a.clone();
    let token = sign_hs256(HS_KID, HS_SECRET, &claims());
    assert_eq!(b.verify(&token, ROOM, NOW), user42());
}

proptest! {
    #[test]
    fn arbitrary_strings_never_panic(s in "\\PC{0,300}") {
        prop_assert!(verify(&s).is_err());
    }

    #[test]
    fn arbitrary_jws_shaped_strings_never_verify(
        h in "[A-Za-z0-9_-]{0,80}",
        c in "[A-Za-z0-9_-]{0,80}",
        s in "[A-Za-z0-9_-]{0,90}",
    ) {
        let token = format!("{h}.{c}.{s}");
        prop_assert!(verify(&token).is_err());
    }

    #[test]
    fn arbitrary_claims_json_never_panics(claims in proptest::collection::vec(any::<u8>(), 0..200)) {
        // Signed, so parsing gets past the signature to the claims.
        let header = b64(br#"{"alg":"HS256","kid":"site1"}"#);
        let message = format!("{header}.{}", b64(&claims));
        let mut mac = Hmac::<Sha256>::new_from_slice(HS_SECRET).unwrap();
        mac.update(message.as_bytes());
        let token = format!("{message}.{}", b64(&mac.finalize().into_bytes()));
        let _ = verify(&token);
    }

    #[test]
    fn any_sub_within_bounds_round_trips(sub in "\\PC{1,255}", exp_in in 1u64..100_000) {
        let c = json!({"sub": sub.clone(), "aud": [ROOM], "exp": NOW + exp_in});
        let token = sign_hs256(HS_KID, HS_SECRET, &c);
        prop_assert_eq!(verify(&token), Ok(Identity { sub }));
    }
}
