//! The pre-queue draw anyone can check (`GET /queue/{room}/draw`): the
//! commitment stays the same from before the first pre-queue join to the
//! opening, the seed is told from the opening on and hashes to the
//! commitment, and the pre-queue is let in exactly in the order an auditor
//! recomputes from the seed and the tickets' sequence numbers (with HMAC
//! and SHA-256 of its own here, not the store's code).
//!
//! The store's clock is pinned and stepped; the test ticks by hand.

use super::STORE;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::common::{
    Api, TestStore, make_room, pinned_store, room, seq_of, settings, state, test_store, unix_now,
};
use origin::room::{RoomId, RoomSettings};

fn at(ms: u64) -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000).unwrap()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
        .collect()
}

/// The order an auditor recomputes: HMAC-SHA256(seed, seq in decimal)
/// ascending, ties by seq.
fn audit_order(seed: &[u8], seqs: &[u64]) -> Vec<u64> {
    let mut valued: Vec<(Vec<u8>, u64)> = seqs
        .iter()
        .map(|&seq| {
            let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(seed).unwrap();
            mac.update(seq.to_string().as_bytes());
            (mac.finalize().into_bytes().to_vec(), seq)
        })
        .collect();
    valued.sort();
    valued.into_iter().map(|(_, seq)| seq).collect()
}

/// A room with a draw to come, on a store of its own whose clock is pinned.
struct Opening {
    clock: Arc<AtomicU64>,
    t: TestStore,
    /// When the room opens (unix ms): 10 s after the clock's start.
    opens: u64,
    settings: RoomSettings,
    room: RoomId,
}

/// Room `id` of 1,000 seats, sessions an hour long, `admit_per_second`
/// let in, opening 10 s from now on a clock pinned at now.
async fn opening_room(id: &str, admit_per_second: f64) -> Opening {
    let t0 = unix_now();
    let clock = Arc::new(AtomicU64::new(t0));
    let t = pinned_store(STORE, clock.clone());
    let opens = t0 + 10_000;
    let s = RoomSettings {
        opens_at: Some(at(opens)),
        abandon_seconds: 3_600,
        admit_per_second,
        ..settings(1_000)
    };
    let room = make_room(t.store.as_ref(), id, s.clone()).await;
    Opening {
        clock,
        t,
        opens,
        settings: s,
        room,
    }
}

/// A pre-queue of some hundreds, a few of whom leave, an opening moved
/// later while the seed is secret: the commitment holds throughout, the
/// seed told at the opening hashes to it, no place is told and nobody let
/// in before the draw is applied, and then positions and admissions follow
/// the recomputed order exactly.
#[tokio::test]
async fn the_prequeue_is_let_in_in_the_order_anyone_recomputes() {
    let Opening {
        clock,
        t,
        opens,
        settings: s,
        room,
    } = opening_room("draw", 40.0).await;
    let api = Api::new(state(t.store.clone()));
    let uri = format!("/queue/{room}/draw");

    let before = api.call("GET", &uri, None).await;
    assert_eq!(before.status, 200, "{}", before.json);
    let commitment = before.json["commitment"].as_str().unwrap().to_owned();
    assert_eq!(commitment.len(), 64);
    assert!(before.json["seed"].is_null(), "{}", before.json);
    assert_eq!(before.json["opens_at"], at(opens).format(&Rfc3339).unwrap());
    assert_eq!(before.headers["cache-control"], "no-store");

    let mut tickets = Vec::new();
    for _ in 0..300 {
        let r = api.join(&room, None).await;
        assert_eq!(r.json["state"], "waiting", "{}", r.json);
        assert!(r.json["position"].is_null());
        tickets.push(r.ticket());
    }
    // Every seventh leaves before the opening.
    let mut stayed = Vec::new();
    for (i, ticket) in tickets.iter().enumerate() {
        let seq = seq_of(ticket, &room);
        if i % 7 == 3 {
            assert!(t.store.leave(&room, seq).await.unwrap());
        } else {
            stayed.push((seq, ticket.clone()));
        }
    }
    let same = api.call("GET", &uri, None).await;
    assert_eq!(same.json["commitment"], commitment.as_str());
    assert!(same.json["seed"].is_null());

    // The opening moved later while the seed is secret: the same seed.
    let later = opens + 5_000;
    let moved = RoomSettings {
        opens_at: Some(at(later)),
        ..s
    };
    t.store.put_room(&room, &moved).await.unwrap();
    clock.store(opens, Ordering::SeqCst);
    let still = api.call("GET", &uri, None).await;
    assert_eq!(still.json["commitment"], commitment.as_str());
    assert!(still.json["seed"].is_null());
    assert_eq!(still.json["opens_at"], at(later).format(&Rfc3339).unwrap());
    assert!(t.store.tick(&room).await.unwrap().admitted.is_empty());

    clock.store(later, Ordering::SeqCst);
    let open = api.call("GET", &uri, None).await;
    assert_eq!(open.json["commitment"], commitment.as_str());
    let seed = unhex(open.json["seed"].as_str().unwrap());
    assert_eq!(seed.len(), 32);
    assert_eq!(hex(&Sha256::digest(&seed)), commitment);

    // Until the first tick after the opening applies the draw, no place is
    // told; that tick lets nobody in.
    let (first_seq, first_ticket) = &stayed[0];
    let r = api.status(&room, first_ticket).await;
    assert_eq!(r.json["state"], "waiting", "{first_seq}: {}", r.json);
    assert!(r.json["position"].is_null(), "{}", r.json);
    assert!(t.store.tick(&room).await.unwrap().admitted.is_empty());

    let seqs: Vec<u64> = stayed.iter().map(|(seq, _)| *seq).collect();
    let order = audit_order(&seed, &seqs);
    for (seq, ticket) in &stayed {
        let rank = order.iter().position(|s| s == seq).unwrap() as u64;
        let r = api.status(&room, ticket).await;
        assert_eq!(r.json["position"], rank + 1, "seq {seq}: {}", r.json);
    }
    // A join after the opening lines up behind the whole pre-queue.
    let late = api.join(&room, None).await;
    assert_eq!(late.json["position"], order.len() as u64 + 1);

    let mut admitted = Vec::new();
    for _ in 0..100 {
        if admitted.len() >= order.len() {
            break;
        }
        clock.fetch_add(1_000, Ordering::SeqCst);
        admitted.extend(t.store.tick(&room).await.unwrap().admitted);
    }
    assert_eq!(admitted[..order.len()], order[..]);
}

/// A room that never had an opening has no draw (404 `no_draw`); an unknown
/// room is 404 `unknown_room`, as on every route.
#[tokio::test]
async fn a_room_without_an_opening_has_no_draw() {
    let t = test_store(STORE);
    let id = make_room(t.store.as_ref(), "no-draw", settings(10)).await;
    let api = Api::new(state(t.store.clone()));
    let r = api.call("GET", &format!("/queue/{id}/draw"), None).await;
    assert_eq!(r.status, 404);
    assert_eq!(r.json["error"]["code"], "no_draw");
    let nobody = room("nobody-here");
    let r = api
        .call("GET", &format!("/queue/{nobody}/draw"), None)
        .await;
    assert_eq!(r.status, 404);
    assert_eq!(r.json["error"]["code"], "unknown_room");
}

/// Once the seed is told, a new opening set in the future is drawn with a
/// new seed (the old one is public); an opening removed while the seed is
/// secret tells the seed at once.
#[tokio::test]
async fn a_new_opening_after_the_seed_was_told_has_a_new_seed() {
    let t0 = unix_now();
    let clock = Arc::new(AtomicU64::new(t0));
    let t = pinned_store(STORE, clock.clone());
    let s = RoomSettings {
        opens_at: Some(at(t0 + 1_000)),
        ..settings(10)
    };
    let room = make_room(t.store.as_ref(), "redraw", s.clone()).await;
    let api = Api::new(state(t.store.clone()));
    let uri = format!("/queue/{room}/draw");
    clock.store(t0 + 2_000, Ordering::SeqCst);
    let told = api.call("GET", &uri, None).await;
    let first_seed = told.json["seed"].as_str().unwrap().to_owned();

    let again = RoomSettings {
        opens_at: Some(at(t0 + 60_000)),
        ..s.clone()
    };
    t.store.put_room(&room, &again).await.unwrap();
    let renewed = api.call("GET", &uri, None).await;
    assert!(renewed.json["seed"].is_null(), "{}", renewed.json);
    let commitment = renewed.json["commitment"].as_str().unwrap().to_owned();
    assert_ne!(commitment, told.json["commitment"].as_str().unwrap());

    let none = RoomSettings {
        opens_at: None,
        ..s
    };
    t.store.put_room(&room, &none).await.unwrap();
    let shown = api.call("GET", &uri, None).await;
    let seed = shown.json["seed"].as_str().unwrap();
    assert_ne!(seed, first_seed);
    assert_eq!(hex(&Sha256::digest(unhex(seed))), commitment);
    assert_eq!(
        shown.json["opens_at"],
        at(t0 + 2_000).format(&Rfc3339).unwrap()
    );
}

/// A pre-queue too large to draw within one tick (the embedded store draws
/// up to 20,000 at once; Redis waits a quarter second) is drawn over the
/// next ticks, nobody let in meanwhile, and then let in in the draw's order.
#[tokio::test]
async fn a_large_prequeue_is_drawn_over_several_ticks() {
    let Opening {
        clock,
        t,
        opens,
        room,
        ..
    } = opening_room("big-draw", 100.0).await;
    let batch = vec![origin::queue::JoinRequest::default(); 1_000];
    let mut seqs = Vec::new();
    for _ in 0..25 {
        let answers = t.store.join_many(&room, &batch).await.unwrap();
        seqs.extend(answers.iter().map(|a| a.answer().unwrap().seq.unwrap()));
    }
    clock.store(opens, Ordering::SeqCst);
    let seed = t.store.draw(&room).await.unwrap().unwrap().seed.unwrap();
    let mut admitted = Vec::new();
    for _ in 0..2_000 {
        admitted = t.store.tick(&room).await.unwrap().admitted;
        if !admitted.is_empty() {
            break;
        }
        clock.fetch_add(10, Ordering::SeqCst);
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    assert_eq!(admitted.len(), 100);
    let order = audit_order(&seed, &seqs);
    assert_eq!(admitted[..], order[..100]);
}
