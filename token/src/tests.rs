//! Crate-level tests of the public API: round trips, forgeries, malformed
//! input, expiry, rotation, keyring parsing and a cross-checked test vector.

extern crate std;

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use proptest::prelude::*;

use crate::{
    BYPASS_HEADER, Claims, EDGE_HEADER, ENTRY_TOKEN_HEADER, Keyring, KeyringError, Kind,
    MAX_TOKEN_LEN, MIN_SECRET_LEN, Secret, TokenError, entry_cookie, ticket_cookie,
};

const S1: &str = "secret-one-0123456789";
const S2: &str = "secret-two-0123456789";
const NOW: u64 = 1_700_000_100;

fn ring(spec: &str) -> Keyring {
    Keyring::parse(spec).unwrap()
}

fn k1() -> Keyring {
    ring(&format!("k1:{S1}"))
}

fn claims(kind: Kind) -> Claims {
    Claims {
        kind,
        room: "launch".to_string(),
        visitor: 0x0123_4567_89ab_cdef_0011_2233_4455_6677,
        seq: 42,
        issued_at: 1_700_000_000,
        expires_at: 1_700_000_600,
        account: None,
    }
}

const ACCOUNT: [u8; 8] = [0xde, 0xad, 0xbe, 0xef, 0x01, 0x23, 0x45, 0x67];

fn claims_with_account(kind: Kind) -> Claims {
    Claims {
        account: Some(ACCOUNT),
        ..claims(kind)
    }
}

/// Splits a token into its decoded payload and MAC.
fn parts(token: &str) -> (Vec<u8>, Vec<u8>) {
    let (p, m) = token.split_once('.').unwrap();
    (
        URL_SAFE_NO_PAD.decode(p).unwrap(),
        URL_SAFE_NO_PAD.decode(m).unwrap(),
    )
}

fn join(payload: &[u8], mac: &[u8]) -> String {
    format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(payload),
        URL_SAFE_NO_PAD.encode(mac)
    )
}

fn verify_entry(keys: &Keyring, token: &str) -> Result<Claims, TokenError> {
    keys.verify(token, Kind::Entry, "launch", NOW)
}

#[test]
fn round_trip_both_kinds() {
    let keys = k1();
    for kind in [Kind::Ticket, Kind::Entry] {
        let c = claims(kind);
        let token = keys.sign(&c);
        assert_eq!(keys.verify(&token, kind, "launch", NOW), Ok(c));
    }
}

#[test]
fn round_trip_extremes() {
    let keys = ring(&format!("{}:{S1}", "K_-9".repeat(4)));
    let c = Claims {
        kind: Kind::Ticket,
        room: format!("0{}", "a-".repeat(31)) + "z",
        visitor: u128::MAX,
        seq: u64::MAX,
        issued_at: 0,
        expires_at: u64::MAX,
        account: None,
    };
    assert_eq!(c.room.len(), 64);
    let token = keys.sign(&c);
    assert!(token.len() <= MAX_TOKEN_LEN);
    assert_eq!(
        keys.verify(&token, Kind::Ticket, &c.room, u64::MAX - 1),
        Ok(c.clone())
    );

    let c = Claims {
        account: Some([0xff; 8]),
        ..c
    };
    let token = keys.sign(&c);
    assert!(token.len() <= MAX_TOKEN_LEN);
    assert_eq!(
        keys.verify(&token, Kind::Ticket, &c.room, u64::MAX - 1),
        Ok(c)
    );
}

#[test]
fn round_trip_with_account() {
    let keys = k1();
    for kind in [Kind::Ticket, Kind::Entry] {
        let c = claims_with_account(kind);
        let token = keys.sign(&c);
        assert_eq!(keys.verify(&token, kind, "launch", NOW), Ok(c));
    }
}

#[test]
fn account_token_is_the_old_token_with_version_2_and_the_account() {
    let keys = k1();
    let (old, _) = parts(&keys.sign(&claims(Kind::Entry)));
    let (new, _) = parts(&keys.sign(&claims_with_account(Kind::Entry)));
    assert_eq!(old[0], 1);
    assert_eq!(new[0], 2);
    assert_eq!(new[1..old.len()], old[1..]);
    assert_eq!(new[old.len()..], ACCOUNT);
}

#[test]
fn flipped_account_byte_is_bad_signature() {
    let keys = k1();
    let (payload, mac) = parts(&keys.sign(&claims_with_account(Kind::Entry)));
    let account_start = payload.len() - 8;
    for i in account_start..payload.len() {
        for bit in [0x01, 0x80] {
            let mut p = payload.clone();
            p[i] ^= bit;
            assert_eq!(
                verify_entry(&keys, &join(&p, &mac)),
                Err(TokenError::BadSignature),
                "byte {i} bit {bit:#x}"
            );
        }
    }
}

#[test]
fn account_cannot_be_stripped_or_added() {
    let keys = k1();
    // Dropping the account and calling it version 1 keeps the structure
    // valid, so only the MAC stands between an attacker and an anonymous
    // copy of the token.
    let (mut payload, mac) = parts(&keys.sign(&claims_with_account(Kind::Entry)));
    payload.truncate(payload.len() - 8);
    payload[0] = 1;
    assert_eq!(
        verify_entry(&keys, &join(&payload, &mac)),
        Err(TokenError::BadSignature)
    );
    // Nor can an account be added to a token signed without one.
    let (mut payload, mac) = parts(&keys.sign(&claims(Kind::Entry)));
    payload[0] = 2;
    payload.extend_from_slice(&ACCOUNT);
    assert_eq!(
        verify_entry(&keys, &join(&payload, &mac)),
        Err(TokenError::BadSignature)
    );
}

#[test]
fn every_prefix_of_an_account_token_is_rejected() {
    let keys = k1();
    let token = keys.sign(&claims_with_account(Kind::Entry));
    for n in 0..token.len() {
        assert!(verify_entry(&keys, &token[..n]).is_err(), "prefix {n}");
    }
    let (payload, mac) = parts(&token);
    for n in 0..payload.len() {
        assert!(verify_entry(&keys, &join(&payload[..n], &mac)).is_err());
    }
}

#[test]
fn token_is_url_and_cookie_safe() {
    let token = k1().sign(&claims(Kind::Entry));
    assert!(
        token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
    );
    assert_eq!(token.matches('.').count(), 1);
}

/// Pins the format: the expected token was computed independently with
/// Python's `hmac`, `hashlib` and `base64` modules from the documented layout.
#[test]
fn known_vector() {
    let keys = ring("k1:0123456789abcdef-golden");
    let expected = "AQICazEGbGF1bmNoASNFZ4mrze8AESIzRFVmdwAAAAAAAAAqAAAAAGVT8QAAAAAAZVPzWA\
                    .qTm_Rum-p72xMYovK6a517QT7Ev-EGw4QJgur8lulgs";
    assert_eq!(keys.sign(&claims(Kind::Entry)), expected);
    assert_eq!(verify_entry(&keys, expected), Ok(claims(Kind::Entry)));
}

/// Pins version 2 the same way: the vector above with version byte 2 and
/// the account appended, MACed with Python's `hmac`.
#[test]
fn known_vector_with_account() {
    let keys = ring("k1:0123456789abcdef-golden");
    let expected = "AgICazEGbGF1bmNoASNFZ4mrze8AESIzRFVmdwAAAAAAAAAqAAAAAGVT8QAAAAAAZVPzWN6tvu8BI0Vn\
                    .ui1-cO88UKeoYqOv8DDjCsGxKIVU_EUlyxtFJ8nWfaw";
    assert_eq!(keys.sign(&claims_with_account(Kind::Entry)), expected);
    assert_eq!(
        verify_entry(&keys, expected),
        Ok(claims_with_account(Kind::Entry))
    );
}

#[test]
fn flipped_payload_byte_is_rejected() {
    let keys = k1();
    let (payload, mac) = parts(&keys.sign(&claims(Kind::Entry)));
    // Offsets of the fixed-size fields: after version, kind, kid (2), room (6).
    let fixed_start = 3 + 2 + 1 + 6;
    for i in 0..payload.len() {
        for bit in [0x01, 0x80] {
            let mut p = payload.clone();
            p[i] ^= bit;
            let err = verify_entry(&keys, &join(&p, &mac)).unwrap_err();
            if i >= fixed_start {
                // Structure still parses, so only the MAC can catch it.
                assert_eq!(err, TokenError::BadSignature, "byte {i} bit {bit:#x}");
            }
        }
    }
}

#[test]
fn flipped_room_byte_is_bad_signature_not_wrong_room() {
    // "launch" -> "launci": still a valid room id, so the MAC must catch it
    // before the room comparison runs.
    let keys = k1();
    let (mut payload, mac) = parts(&keys.sign(&claims(Kind::Entry)));
    payload[11] ^= 0x01;
    assert_eq!(
        keys.verify(&join(&payload, &mac), Kind::Entry, "launci", NOW),
        Err(TokenError::BadSignature)
    );
}

#[test]
fn flipped_mac_byte_is_bad_signature() {
    let keys = k1();
    let (payload, mac) = parts(&keys.sign(&claims(Kind::Entry)));
    for i in 0..mac.len() {
        let mut m = mac.clone();
        m[i] ^= 0x01;
        assert_eq!(
            verify_entry(&keys, &join(&payload, &m)),
            Err(TokenError::BadSignature),
            "byte {i}"
        );
    }
}

#[test]
fn mac_from_another_secret_is_bad_signature() {
    let forger = ring(&format!("k1:{S2}"));
    let token = forger.sign(&claims(Kind::Entry));
    assert_eq!(verify_entry(&k1(), &token), Err(TokenError::BadSignature));
}

#[test]
fn forgery_is_reported_before_kind_room_and_expiry() {
    let forger = ring(&format!("k1:{S2}"));
    let token = forger.sign(&claims(Kind::Ticket));
    assert_eq!(
        k1().verify(&token, Kind::Entry, "other", u64::MAX),
        Err(TokenError::BadSignature)
    );
}

#[test]
fn every_prefix_is_rejected() {
    let keys = k1();
    let token = keys.sign(&claims(Kind::Entry));
    for n in 0..token.len() {
        assert!(verify_entry(&keys, &token[..n]).is_err(), "prefix {n}");
    }
    // Dropping whole payload bytes while keeping the MAC.
    let (payload, mac) = parts(&token);
    for n in 0..payload.len() {
        assert!(verify_entry(&keys, &join(&payload[..n], &mac)).is_err());
    }
}

#[test]
fn extra_dot_parts_are_malformed() {
    let keys = k1();
    let token = keys.sign(&claims(Kind::Entry));
    let (p, m) = token.split_once('.').unwrap();
    for bad in [
        format!("{token}."),
        format!("{token}.{m}"),
        format!(".{token}"),
        format!("{p}..{m}"),
        format!("{p}.{p}.{m}"),
        p.to_string(),
        format!("{p}{m}"),
        ".".to_string(),
        String::new(),
    ] {
        assert_eq!(
            verify_entry(&keys, &bad),
            Err(TokenError::Malformed),
            "{bad:?}"
        );
    }
}

#[test]
fn non_base64_is_malformed() {
    let keys = k1();
    let token = keys.sign(&claims(Kind::Entry));
    let (p, m) = token.split_once('.').unwrap();
    let mut bad = vec![
        // Standard alphabet and padding are not accepted.
        token.replace('-', "+").replace('_', "/"),
        format!("{p}=.{m}"),
        format!("{p}.{m}="),
        format!(" {token}"),
        format!("{token} "),
        format!("{p}.{}é", &m[..41]),
        "not a token at all".to_string(),
    ];
    // Any non-alphabet character anywhere.
    for i in 0..token.len() {
        if token.as_bytes()[i] != b'.' {
            let mut t = token.clone().into_bytes();
            t[i] = b'*';
            bad.push(String::from_utf8(t).unwrap());
        }
    }
    for t in bad {
        assert_eq!(verify_entry(&keys, &t), Err(TokenError::Malformed), "{t:?}");
    }
}

#[test]
fn non_canonical_base64_is_malformed() {
    // 32 bytes take 43 characters; the last one carries 2 unused bits that
    // must be zero, so there is only one accepted spelling of each MAC.
    let keys = k1();
    let token = keys.sign(&claims(Kind::Entry));
    let (p, m) = token.split_once('.').unwrap();
    let last = m.as_bytes()[42];
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let idx = alphabet.iter().position(|&c| c == last).unwrap();
    let twin = alphabet[idx ^ 0x01] as char;
    let bad = format!("{p}.{}{twin}", &m[..42]);
    assert_eq!(verify_entry(&keys, &bad), Err(TokenError::Malformed));
}

#[test]
fn wrong_mac_length_is_malformed() {
    let keys = k1();
    let (payload, mac) = parts(&keys.sign(&claims(Kind::Entry)));
    assert_eq!(
        verify_entry(&keys, &join(&payload, &mac[..31])),
        Err(TokenError::Malformed)
    );
    let mut long = mac.clone();
    long.push(0);
    assert_eq!(
        verify_entry(&keys, &join(&payload, &long)),
        Err(TokenError::Malformed)
    );
}

#[test]
fn oversized_is_malformed() {
    let keys = k1();
    let token = keys.sign(&claims(Kind::Entry));
    let huge = "A".repeat(MAX_TOKEN_LEN + 1);
    assert_eq!(verify_entry(&keys, &huge), Err(TokenError::Malformed));
    let padded = format!("{token}{}", "A".repeat(MAX_TOKEN_LEN));
    assert_eq!(verify_entry(&keys, &padded), Err(TokenError::Malformed));
    // A long payload half that would still fit MAX_TOKEN_LEN.
    let (_, m) = token.split_once('.').unwrap();
    let long = format!("{}.{m}", "A".repeat(300));
    assert_eq!(verify_entry(&keys, &long), Err(TokenError::Malformed));
}

#[test]
fn trailing_payload_byte_with_valid_mac_is_malformed() {
    // Even a correctly MACed payload with junk at the end is refused: the
    // structure check comes first and does not depend on the key.
    use hmac::{Hmac, KeyInit, Mac};
    let keys = k1();
    let (mut payload, _) = parts(&keys.sign(&claims(Kind::Entry)));
    payload.push(0);
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(S1.as_bytes()).unwrap();
    mac.update(&payload);
    let tag = mac.finalize().into_bytes();
    assert_eq!(
        verify_entry(&keys, &join(&payload, &tag)),
        Err(TokenError::Malformed)
    );
}

#[test]
fn expiry_boundary() {
    let keys = k1();
    let c = claims(Kind::Entry);
    let token = keys.sign(&c);
    let at = |now| keys.verify(&token, Kind::Entry, "launch", now);
    assert_eq!(at(c.expires_at - 1), Ok(c.clone()));
    assert_eq!(at(c.expires_at), Err(TokenError::Expired));
    assert_eq!(at(c.expires_at + 1), Err(TokenError::Expired));
    assert_eq!(at(u64::MAX), Err(TokenError::Expired));
    // Issued "in the future" (clock skew) is the caller's concern.
    assert!(at(0).is_ok());
}

#[test]
fn wrong_room() {
    let keys = k1();
    let token = keys.sign(&claims(Kind::Entry));
    for room in ["launc", "launcher", "launci", "", "LAUNCH"] {
        assert_eq!(
            keys.verify(&token, Kind::Entry, room, NOW),
            Err(TokenError::WrongRoom),
            "{room:?}"
        );
    }
}

#[test]
fn wrong_kind() {
    let keys = k1();
    let ticket = keys.sign(&claims(Kind::Ticket));
    let entry = keys.sign(&claims(Kind::Entry));
    assert_eq!(
        keys.verify(&ticket, Kind::Entry, "launch", NOW),
        Err(TokenError::WrongKind)
    );
    assert_eq!(
        keys.verify(&entry, Kind::Ticket, "launch", NOW),
        Err(TokenError::WrongKind)
    );
}

#[test]
fn wrong_kind_is_reported_before_room_and_expiry() {
    let keys = k1();
    let ticket = keys.sign(&claims(Kind::Ticket));
    assert_eq!(
        keys.verify(&ticket, Kind::Entry, "other", u64::MAX),
        Err(TokenError::WrongKind)
    );
    assert_eq!(
        keys.verify(&ticket, Kind::Ticket, "other", u64::MAX),
        Err(TokenError::WrongRoom)
    );
}

#[test]
fn unknown_kid() {
    let token = ring(&format!("k9:{S1}")).sign(&claims(Kind::Entry));
    assert_eq!(verify_entry(&k1(), &token), Err(TokenError::UnknownKey));
}

#[test]
fn invalid_room_in_claims_never_verifies() {
    let keys = k1();
    for room in ["", "Launch", "-x", "a_b", "é", &"a".repeat(65)] {
        let mut c = claims(Kind::Entry);
        c.room = room.to_string();
        let token = keys.sign(&c);
        assert_eq!(
            keys.verify(&token, Kind::Entry, room, NOW),
            Err(TokenError::Malformed),
            "{room:?}"
        );
    }
}

#[test]
fn rotation() {
    let old = k1();
    let old_token = old.sign(&claims(Kind::Entry));

    let rotated = ring(&format!("k2:{S2},k1:{S1}"));
    assert_eq!(rotated.signing_kid(), "k2");
    assert_eq!(rotated.kids().collect::<Vec<_>>(), ["k2", "k1"]);
    assert_eq!(verify_entry(&rotated, &old_token), Ok(claims(Kind::Entry)));

    let new_token = rotated.sign(&claims(Kind::Entry));
    assert_ne!(new_token, old_token);
    assert_eq!(verify_entry(&rotated, &new_token), Ok(claims(Kind::Entry)));
    // Instances not yet rotated reject new tokens cleanly.
    assert_eq!(verify_entry(&old, &new_token), Err(TokenError::UnknownKey));

    let retired = ring(&format!("k2:{S2}"));
    assert_eq!(verify_entry(&retired, &new_token), Ok(claims(Kind::Entry)));
    assert_eq!(
        verify_entry(&retired, &old_token),
        Err(TokenError::UnknownKey)
    );
}

#[test]
fn parse_accepts_operator_format() {
    let keys = ring(&format!("  k2:{S2} ,\tk1:{S1}:with:colons\n"));
    assert_eq!(keys.kids().collect::<Vec<_>>(), ["k2", "k1"]);

    // The secret is everything after the first ':' (colons included) ...
    let direct = Keyring::new(vec![(
        "k1".to_string(),
        format!("{S1}:with:colons").into_bytes(),
    )])
    .unwrap();
    let token = direct.sign(&claims(Kind::Entry));
    assert!(verify_entry(&keys, &token).is_ok());
    // ... and not a prefix of it.
    assert_eq!(verify_entry(&k1(), &token), Err(TokenError::BadSignature));
}

#[test]
fn parse_errors() {
    let cases: &[(&str, KeyringError)] = &[
        ("", KeyringError::Empty),
        ("  \n", KeyringError::Empty),
        (
            ",",
            KeyringError::BadEntry {
                entry: 1,
                reason: "empty entry (stray ',')",
            },
        ),
        (
            "k1:0123456789abcdef,",
            KeyringError::BadEntry {
                entry: 2,
                reason: "empty entry (stray ',')",
            },
        ),
        (
            "0123456789abcdef",
            KeyringError::BadEntry {
                entry: 1,
                reason: "no ':' between kid and secret",
            },
        ),
        (
            "k1: 0123456789abcdef",
            KeyringError::BadEntry {
                entry: 1,
                reason: "whitespace after ':'",
            },
        ),
        (
            ":0123456789abcdef",
            KeyringError::BadKid { entry: 1, len: 0 },
        ),
        (
            "k 1:0123456789abcdef",
            KeyringError::BadKid { entry: 1, len: 3 },
        ),
        (
            "k1 :0123456789abcdef",
            KeyringError::BadKid { entry: 1, len: 3 },
        ),
        (
            "k.1:0123456789abcdef",
            KeyringError::BadKid { entry: 1, len: 3 },
        ),
        (
            "kïd:0123456789abcdef",
            KeyringError::BadKid { entry: 1, len: 4 },
        ),
        (
            "k1:0123456789abcdef,abcdefghijklmnopq:0123456789abcdef",
            KeyringError::BadKid { entry: 2, len: 17 },
        ),
        (
            "k1:0123456789abcde",
            KeyringError::ShortSecret {
                entry: 1,
                kid: "k1".to_string(),
                len: 15,
            },
        ),
        (
            "k1:",
            KeyringError::ShortSecret {
                entry: 1,
                kid: "k1".to_string(),
                len: 0,
            },
        ),
        (
            "k1:0123456789abcdef,k1:fedcba9876543210",
            KeyringError::DuplicateKid {
                entry: 2,
                kid: "k1".to_string(),
            },
        ),
    ];
    for (spec, want) in cases {
        assert_eq!(Keyring::parse(spec).unwrap_err(), *want, "{spec:?}");
    }
    // Exactly 16 bytes and 16-character kids are fine.
    assert!(Keyring::parse("abcdefghijklmnop:0123456789abcdef").is_ok());
}

#[test]
fn new_validates_like_parse() {
    assert_eq!(Keyring::new(vec![]).unwrap_err(), KeyringError::Empty);
    assert_eq!(
        Keyring::new(vec![("k1".to_string(), vec![0; 15])]).unwrap_err(),
        KeyringError::ShortSecret {
            entry: 1,
            kid: "k1".to_string(),
            len: 15
        }
    );
    assert_eq!(
        Keyring::new(vec![(" k1".to_string(), vec![0; 16])]).unwrap_err(),
        KeyringError::BadKid { entry: 1, len: 3 }
    );
    // Arbitrary (non-UTF-8) secret bytes are allowed.
    let keys = Keyring::new(vec![("k1".to_string(), vec![0xff; 16])]).unwrap();
    assert_eq!(keys.signing_kid(), "k1");
}

#[test]
fn debug_and_errors_never_show_secrets() {
    let secret_a = "AAAA-super-secret-value-AAAA";
    let secret_b = "BBBB-super-secret-value-BBBB";
    let keys = ring(&format!("k2:{secret_a},k1:{secret_b}"));
    let dbg = format!("{keys:?} {keys:#?}");
    assert!(dbg.contains("k2") && dbg.contains("k1"), "{dbg}");
    for needle in ["super", "secret", "AAAA", "BBBB"] {
        assert!(!dbg.contains(needle), "{dbg}");
    }

    // Error messages name positions and kids, never secret text.
    for spec in [
        format!("k1:{secret_a},{secret_b}"),
        format!("k1:{secret_a},bad kid:{secret_b}"),
        format!("{secret_a}:{secret_b}"),
        format!("k1: {secret_a}"),
        "k1:short-SECRET".to_string(),
        format!("k1:{secret_a},k1:{secret_b}"),
    ] {
        let err = Keyring::parse(&spec).unwrap_err();
        let shown = format!("{err} {err:?}");
        // (Plain "secret" is allowed: the messages name the "kid:secret" form.)
        for needle in ["super", "short-", "SECRET", "AAAA", "BBBB"] {
            assert!(!shown.contains(needle), "{shown}");
        }
    }
}

#[test]
fn error_messages_help_the_operator() {
    let err = Keyring::parse("k1:0123456789abcdef,k2:short").unwrap_err();
    assert_eq!(
        err.to_string(),
        "keyring entry 2 (kid \"k2\") has a 5-byte secret: secrets must be at least 16 bytes"
    );
    let err = Keyring::parse("").unwrap_err();
    assert!(err.to_string().contains("kid:secret"));
}

#[test]
fn wire_names_are_the_documented_ones() {
    // Browsers, apps and the edge's operators rely on these exact names.
    assert_eq!(ticket_cookie("concert"), "wr_ticket_concert");
    assert_eq!(entry_cookie("concert"), "wr_entry_concert");
    assert_eq!(ENTRY_TOKEN_HEADER, "Entry-Token");
    assert_eq!(EDGE_HEADER, "Waiting-Room-Edge");
    assert_eq!(BYPASS_HEADER, "Waiting-Room-Bypass");
}

#[test]
fn secrets_match_only_themselves() {
    let s = Secret::new("0123456789abcdef");
    assert!(s.matches(b"0123456789abcdef"));
    assert!(s.matches("0123456789abcdef"));
    for other in [
        &b""[..],
        b"0123456789abcde",
        b"0123456789abcdeF",
        b"0123456789abcdef ",
    ] {
        assert!(!s.matches(other), "{other:?}");
    }
    // An empty secret is still only itself.
    assert!(Secret::new("").matches(""));
    assert!(!Secret::new("").matches(" "));
    assert_eq!(format!("{s:?}"), "Secret(..)");
}

#[test]
fn the_keyring_uses_the_shared_secret_minimum() {
    let short = "s".repeat(MIN_SECRET_LEN - 1);
    assert!(Keyring::parse(&format!("k1:{short}")).is_err());
    let enough = "s".repeat(MIN_SECRET_LEN);
    assert!(Keyring::parse(&format!("k1:{enough}")).is_ok());
}

proptest! {
    #[test]
    fn arbitrary_strings_never_panic(s in "\\PC{0,600}") {
        let _ = verify_entry(&k1(), &s);
    }

    #[test]
    fn arbitrary_token_shaped_strings_never_panic(
        p in "[A-Za-z0-9_=+/.-]{0,200}",
        m in "[A-Za-z0-9_=+/.-]{0,60}",
    ) {
        let _ = verify_entry(&k1(), &format!("{p}.{m}"));
    }

    #[test]
    fn arbitrary_payload_bytes_never_verify(payload in proptest::collection::vec(any::<u8>(), 0..160)) {
        // Random payloads with a random MAC: structure errors or forgeries.
        let token = join(&payload, &[7u8; 32]);
        prop_assert!(verify_entry(&k1(), &token).is_err());
    }

    #[test]
    fn round_trip_any_claims(
        entry in any::<bool>(),
        room in "[a-z0-9][a-z0-9-]{0,63}",
        visitor in any::<u128>(),
        seq in any::<u64>(),
        issued_at in any::<u64>(),
        expires_at in 1u64..,
        account in proptest::option::of(any::<[u8; 8]>()),
    ) {
        let kind = if entry { Kind::Entry } else { Kind::Ticket };
        let c = Claims { kind, room: room.clone(), visitor, seq, issued_at, expires_at, account };
        let keys = k1();
        let token = keys.sign(&c);
        prop_assert!(token.len() <= MAX_TOKEN_LEN);
        prop_assert_eq!(keys.verify(&token, kind, &room, expires_at - 1), Ok(c));
    }
}

mod challenge {
    use super::*;
    use crate::{ChallengeError, solve, zero_bits};
    use sha2::Digest as _;

    fn seed(keys: &Keyring, room: &str) -> String {
        keys.sign_seed(room, NOW + 300, [7; 12])
    }

    fn solved(seed: &str, bits: u8) -> String {
        let (nonce, _) = solve(seed, bits, 0).expect("a nonce");
        format!("{seed}.{nonce}")
    }

    #[test]
    fn a_solution_passes_and_names_its_seed() {
        let keys = k1();
        let s = seed(&keys, "launch");
        let sol = solved(&s, 12);
        let got = keys
            .check_solution(&sol, "launch", 12, NOW)
            .expect("passes");
        assert_eq!(got.expires_at, NOW + 300);
        // Another nonce of the same seed names the same seed.
        let (n2, _) = solve(
            &s,
            12,
            1 + sol.rsplit('.').next().unwrap().parse::<u64>().unwrap(),
        )
        .expect("a second nonce");
        let again = keys
            .check_solution(&format!("{s}.{n2}"), "launch", 12, NOW)
            .expect("passes");
        assert_eq!(again.key, got.key);
        // Seeds differ by their randomness.
        let other = keys.sign_seed("launch", NOW + 300, [8; 12]);
        let o = keys
            .check_solution(&solved(&other, 8), "launch", 8, NOW)
            .expect("passes");
        assert_ne!(o.key, got.key);
    }

    #[test]
    fn refusals() {
        let keys = k1();
        let s = seed(&keys, "launch");
        let sol = solved(&s, 12);
        let check =
            |sol: &str, room: &str, bits: u8, now: u64| keys.check_solution(sol, room, bits, now);
        assert_eq!(
            check(&sol, "other", 12, NOW),
            Err(ChallengeError::BadSignature)
        );
        assert_eq!(
            check(&sol, "launch", 12, NOW + 300),
            Err(ChallengeError::Expired)
        );
        // Too few bits: a nonce whose hash has exactly fewer than 30.
        assert!(
            zero_bits(&sha2::Sha256::digest(sol.as_bytes())) < 30
                && check(&sol, "launch", 30, NOW) == Err(ChallengeError::TooFewBits)
        );
        let other_key = ring("k1:another-secret-0123456789");
        assert_eq!(
            other_key.check_solution(&sol, "launch", 12, NOW),
            Err(ChallengeError::BadSignature)
        );
        let unknown = ring("k9:another-secret-0123456789");
        assert_eq!(
            unknown.check_solution(&sol, "launch", 12, NOW),
            Err(ChallengeError::UnknownKey)
        );
        // A flipped seed byte.
        let mut bytes = URL_SAFE_NO_PAD.decode(&s).unwrap();
        let last = bytes.len() - 20;
        bytes[last] ^= 1;
        let forged = format!("{}.1", URL_SAFE_NO_PAD.encode(&bytes));
        assert_eq!(
            check(&forged, "launch", 8, NOW),
            Err(ChallengeError::BadSignature)
        );
        for bad in [
            "",
            ".",
            &s,
            &format!("{s}."),
            &format!("{s}.a.b"),
            &format!("{s}.{}", "1".repeat(33)),
            &format!("{s}.12 "),
            &format!("{s}=.1"),
            "x.1",
            &format!("{}.1", &s[..s.len() - 1]),
        ] {
            assert_eq!(
                check(bad, "launch", 8, NOW),
                Err(ChallengeError::Malformed),
                "{bad}"
            );
        }
    }

    #[test]
    fn zero_bits_counts_from_the_first_byte() {
        assert_eq!(zero_bits(&[0, 0, 0x0f, 0xff]), 20);
        assert_eq!(zero_bits(&[0x80]), 0);
        assert_eq!(zero_bits(&[0, 1]), 15);
        assert_eq!(zero_bits(&[0; 4]), 32);
    }

    #[test]
    fn a_rotated_key_still_checks_old_seeds() {
        let old = k1();
        let s = seed(&old, "launch");
        let sol = solved(&s, 8);
        let rotated = ring(&format!("k2:{S2},k1:{S1}"));
        assert!(rotated.check_solution(&sol, "launch", 8, NOW).is_ok());
    }
}
