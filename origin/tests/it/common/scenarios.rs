//! The line's behaviour as scenarios over any store: each takes the store
//! (Redis, a Redis Cluster, or the embedded store) and the id of the room it
//! creates, and drives the store through the real router. `line.rs` runs
//! them on the suite's store, `cluster.rs` on a Redis Cluster, both from the
//! one list in [`every_scenario`], so one copy of each scenario serves every
//! backend and no runner can miss one.

use std::sync::Arc;
use std::time::Duration;

use origin::queue::QueueStore;
use origin::room::{RoomSettings, RoomState};
use time::OffsetDateTime;

use super::*;

/// Every scenario with the room it runs in, listed once: expands to
/// `$then! { scenario => "room", ... }`, so the runners in `line.rs` and
/// `cluster.rs` and [`ROOMS`] are all built from this list.
macro_rules! every_scenario {
    ($then:ident) => {
        $then! {
            an_empty_room_with_free_capacity_admits_at_once => "quiet",
            cookies_are_secure_off_loopback => "shop",
            the_prequeue_draws_places_at_the_opening_and_later_joins_queue_behind => "drop",
            an_ended_session_frees_its_slot_and_its_token_is_refused => "short",
            waiters_who_stop_polling_are_dropped_and_their_place_freed => "fickle",
            leaving_frees_the_slot_or_the_place_at_once => "door",
            rejoining_with_a_valid_ticket_keeps_the_place => "keep",
            pausing_stops_admissions_and_closing_takes_no_places => "gate",
            status_reports_an_eta_from_the_achieved_rate_and_paces_polls => "pace",
            one_place_per_account => "acct",
        }
    };
}
pub(crate) use every_scenario;

macro_rules! rooms_of {
    ($($name:ident => $room:literal),* $(,)?) => {
        /// The room each scenario creates, in the list's order.
        pub const ROOMS: &[&str] = &[$($room),*];
    };
}
every_scenario!(rooms_of);

/// A join to an open, empty room with capacity is admitted at once, with both cookies.
pub async fn an_empty_room_with_free_capacity_admits_at_once(store: Arc<dyn QueueStore>, id: &str) {
    let room = make_room(store.as_ref(), id, settings(5)).await;
    let api = Api::new(state(store.clone()));
    let r = api.join(&room, None).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json["state"], "admitted", "{}", r.json);
    assert_eq!(r.json["position"], serde_json::Value::Null);
    assert!(r.json["entry_token"].is_string());
    assert!(r.json["entry_expires_at"].is_string());
    let cookies = r.cookies().join("\n");
    assert!(cookies.contains(&format!("wr_ticket_{room}=")), "{cookies}");
    assert!(cookies.contains(&format!("wr_entry_{room}=")), "{cookies}");
    assert!(
        cookies.contains("HttpOnly")
            && cookies.contains("SameSite=Lax")
            && cookies.contains("Path=/")
    );
    assert!(
        !cookies.contains("Secure"),
        "plain-http loopback gets no Secure flag"
    );
}

/// Cookies carry `Secure` when the configuration says so (anywhere but
/// plain-http loopback), whatever `Host` the request names.
pub async fn cookies_are_secure_off_loopback(store: Arc<dyn QueueStore>, id: &str) {
    let room = make_room(store.as_ref(), id, settings(5)).await;
    let api = Api::new(state(store.clone()).with_secure_cookies(true));
    let r = api
        .send(
            axum::http::Request::post(format!("/queue/{room}/join"))
                .header("host", "tickets.example.com")
                .body(axum::body::Body::empty())
                .unwrap(),
        )
        .await;
    assert!(
        r.cookies().iter().all(|c| c.contains("Secure")),
        "{:?}",
        r.cookies()
    );
}

/// Before the opening places are drawn, not given in arrival order; later joins queue behind in order.
pub async fn the_prequeue_draws_places_at_the_opening_and_later_joins_queue_behind(
    store: Arc<dyn QueueStore>,
    id: &str,
) {
    let opens_at = OffsetDateTime::now_utc() + Duration::from_millis(1_500);
    let s = RoomSettings {
        opens_at: Some(opens_at),
        ..settings(1_000)
    };
    let room = make_room(store.as_ref(), id, s).await;
    let api = Api::new(state(store.clone()));

    let mut early = Vec::new();
    for _ in 0..40 {
        let r = api.join(&room, None).await;
        assert_eq!(r.json["state"], "waiting", "{}", r.json);
        assert!(
            r.json["position"].is_null(),
            "no position before the opening"
        );
        assert!(r.json["eta_seconds"].is_null());
        assert!(r.json["room"]["opens_at"].is_string());
        early.push(r.ticket());
    }
    // Refreshing early keeps the same draw: no edge from arriving or rejoining early.
    let again = api.join(&room, Some(&early[0])).await;
    assert_eq!(seq_of(&again.ticket(), &room), seq_of(&early[0], &room));
    // Nobody is admitted before the opening.
    let report = store.tick(&room).await.unwrap();
    assert!(report.admitted.is_empty());

    // The opening comes on the store's clock (a cluster's too, which no
    // test moves): the seed is told from then on.
    eventually(
        "the opening reveals the seed",
        Duration::from_secs(5),
        || async { store.draw(&room).await.unwrap().unwrap().seed.is_some() },
    )
    .await;
    let seed = store.draw(&room).await.unwrap().unwrap().seed.unwrap();
    assert!(
        api.status(&room, &early[0]).await.json["position"].is_null(),
        "no place is told before the draw is applied"
    );
    // The first tick after the opening applies the draw and lets nobody in.
    let report = store.tick(&room).await.unwrap();
    assert!(report.admitted.is_empty());

    // Then every early visitor has an exact place within the first 40: its
    // rank in the draw anyone can recompute from the seed.
    let early_seqs: Vec<u64> = early.iter().map(|t| seq_of(t, &room)).collect();
    let drawn = origin::queue::draw::draw_order(&seed, early_seqs.iter().copied());
    for t in &early {
        let r = api.status(&room, t).await;
        let seq = seq_of(t, &room);
        let rank = drawn.iter().position(|&s| s == seq).unwrap() as u64;
        assert_eq!(r.json["position"], rank + 1, "seq {seq}");
    }

    let mut late = Vec::new();
    for i in 0..20 {
        let r = api.join(&room, None).await;
        assert_eq!(
            r.json["position"],
            41 + i,
            "late joins line up behind, in order"
        );
        late.push(seq_of(&r.ticket(), &room));
    }

    let order = promote(store.as_ref(), &room, 60, 1_000).await;
    // Sequence numbers start at the room's base, not at 1.
    assert_ne!(
        order[..40],
        early_seqs[..],
        "the pre-queue is not admitted in order of arrival"
    );
    assert_eq!(
        order[..40],
        drawn[..],
        "the pre-queue is admitted before anyone later, in the draw's order"
    );
    assert_eq!(order[40..], late[..], "later joins are admitted in order");
}

/// An ended session frees its slot for the next in line and its entry token stops working.
pub async fn an_ended_session_frees_its_slot_and_its_token_is_refused(
    store: Arc<dyn QueueStore>,
    id: &str,
) {
    let s = RoomSettings {
        session_seconds: 1,
        ..settings(1)
    };
    let room = make_room(store.as_ref(), id, s).await;
    let st = state(store.clone());
    let api = Api::new(st.clone());
    // A token never outlives its session, so its expiry is the session's end
    // rounded down to the second: a 1-s session's token may be good for well
    // under a second. Checked at the second of joining, it is good whatever
    // the machine's load.
    let joined_at = unix_now();
    let a = api.join(&room, None).await;
    assert_eq!(a.json["state"], "admitted");
    let b = api.join(&room, None).await;
    assert_eq!(b.json["state"], "waiting");
    assert_eq!(b.json["position"], 1);

    let entry = a.json["entry_token"].as_str().unwrap().to_owned();
    let mut headers = axum::http::HeaderMap::new();
    headers.insert("entry-token", entry.parse().unwrap());
    origin::http::entry::require_entry(&st, &room, &headers, joined_at)
        .await
        .expect("a running session's token is accepted");

    // The session ends on the store's clock: tick until a tick ends it.
    let ending = std::sync::Mutex::new(None);
    eventually("the session ends", Duration::from_secs(5), || async {
        let report = store.tick(&room).await.unwrap();
        let ended = report.expired > 0;
        if ended {
            *ending.lock().unwrap() = Some(report);
        } else {
            assert!(
                report.admitted.is_empty(),
                "admitted while the slot is taken"
            );
        }
        ended
    })
    .await;
    let report = ending.into_inner().unwrap().unwrap();
    assert_eq!(report.expired, 1);
    assert_eq!(report.admitted, vec![seq_of(&b.ticket(), &room)]);
    assert_eq!(
        api.status(&room, &a.ticket()).await.json["state"],
        "expired"
    );
    assert_eq!(
        api.status(&room, &b.ticket()).await.json["state"],
        "admitted"
    );
    // The session is over even if the token's own expiry has not struck yet
    // (it is rounded to whole seconds).
    let refused = origin::http::entry::require_entry(&st, &room, &headers, unix_now() - 5).await;
    assert!(
        matches!(refused, Err(origin::error::ApiError::SessionEnded)),
        "{refused:?}"
    );
}

/// A waiter who stops polling for the abandon time loses the place; one who polls keeps it.
pub async fn waiters_who_stop_polling_are_dropped_and_their_place_freed(
    store: Arc<dyn QueueStore>,
    id: &str,
) {
    let s = RoomSettings {
        abandon_seconds: 3,
        ..settings(1)
    };
    let room = make_room(store.as_ref(), id, s).await;
    let api = Api::new(state(store.clone()));
    let _inside = api.join(&room, None).await;
    let gone = api.join(&room, None).await;
    let stays = api.join(&room, None).await;
    assert_eq!(stays.json["position"], 2);
    assert!(
        stays.json["poll_after_ms"].as_u64().unwrap() <= 1_000,
        "polls well within 3 s"
    );

    for _ in 0..7 {
        // The scenario: one waiter polls at its pace while the other's
        // abandon time runs out on the store's own (unmovable) clock.
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(
            api.status(&room, &stays.ticket()).await.json["state"],
            "waiting"
        );
        store.tick(&room).await.unwrap();
    }
    let f = store.figures(&room).await.unwrap();
    assert_eq!(f.abandoned_total, 1);
    assert_eq!(
        api.status(&room, &gone.ticket()).await.json["state"],
        "expired"
    );
    assert_eq!(api.status(&room, &stays.ticket()).await.json["position"], 1);
}

/// Leaving frees a place in line or a slot inside at once.
pub async fn leaving_frees_the_slot_or_the_place_at_once(store: Arc<dyn QueueStore>, id: &str) {
    let room = make_room(store.as_ref(), id, settings(1)).await;
    let api = Api::new(state(store.clone()));
    let a = api.join(&room, None).await;
    let b = api.join(&room, None).await;
    let c = api.join(&room, None).await;
    let d = api.join(&room, None).await;
    assert_eq!(a.json["state"], "admitted");
    assert_eq!(d.json["position"], 3);

    // Leaving the line moves everyone behind up at once.
    let r = api.leave(&room, &c.ticket()).await;
    assert_eq!(r.status, 204);
    assert!(
        r.cookies()
            .iter()
            .any(|c| c.starts_with(&format!("wr_ticket_{room}=;")))
    );
    assert_eq!(api.status(&room, &d.ticket()).await.json["position"], 2);
    assert_eq!(
        api.status(&room, &c.ticket()).await.json["state"],
        "expired"
    );

    // Leaving the room frees the slot for the next tick.
    assert_eq!(api.leave(&room, &a.ticket()).await.status, 204);
    let report = store.tick(&room).await.unwrap();
    assert_eq!(report.admitted, vec![seq_of(&b.ticket(), &room)]);
    assert_eq!(
        api.status(&room, &a.ticket()).await.json["state"],
        "expired"
    );
    assert_eq!(
        api.status(&room, &b.ticket()).await.json["state"],
        "admitted"
    );
    assert_eq!(api.status(&room, &d.ticket()).await.json["position"], 1);
}

/// A rejoin with a valid ticket (bearer or cookie) gets the same place, never a second one.
pub async fn rejoining_with_a_valid_ticket_keeps_the_place(store: Arc<dyn QueueStore>, id: &str) {
    let room = make_paused_room(store.as_ref(), id, settings(1)).await;
    let api = Api::new(state(store.clone()));
    let tickets: Vec<String> = {
        let mut v = Vec::new();
        for _ in 0..3 {
            v.push(api.join(&room, None).await.ticket());
        }
        v
    };
    // By bearer (apps) and by cookie (browsers; every tab shares it).
    let again = api.join(&room, Some(&tickets[1])).await;
    assert_eq!(again.json["position"], 2);
    assert_eq!(seq_of(&again.ticket(), &room), seq_of(&tickets[1], &room));
    let by_cookie = api
        .send(
            axum::http::Request::post(format!("/queue/{room}/join"))
                .header(
                    "cookie",
                    format!("other=1; wr_ticket_{room}={}", tickets[1]),
                )
                .body(axum::body::Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(by_cookie.json["position"], 2);
    assert_eq!(
        store.figures(&room).await.unwrap().places_given,
        3,
        "no second place"
    );
    // Without the ticket it is a new visitor at the back.
    assert_eq!(api.join(&room, None).await.json["position"], 4);
    // Once the place is gone, the same ticket gets a new place at the back.
    api.leave(&room, &tickets[0]).await;
    let back = api.join(&room, Some(&tickets[0])).await;
    assert_eq!(back.json["position"], 4);
    assert_ne!(seq_of(&back.ticket(), &room), seq_of(&tickets[0], &room));
}

/// Paused rooms queue and admit nobody; closed rooms take no places and keep those inside.
pub async fn pausing_stops_admissions_and_closing_takes_no_places(
    store: Arc<dyn QueueStore>,
    id: &str,
) {
    let room = make_paused_room(store.as_ref(), id, settings(10)).await;
    let api = Api::new(state(store.clone()));
    let a = api.join(&room, None).await;
    assert_eq!(
        a.json["state"], "waiting",
        "a paused room queues even when empty"
    );
    assert_eq!(a.json["room"]["state"], "paused");
    assert!(a.json["eta_seconds"].is_null(), "no estimate while paused");
    assert!(store.tick(&room).await.unwrap().admitted.is_empty());

    store.set_state(&room, RoomState::Open).await.unwrap();
    assert_eq!(store.tick(&room).await.unwrap().admitted.len(), 1);

    store.set_state(&room, RoomState::Closed).await.unwrap();
    let r = api.join(&room, None).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json["state"], "closed");
    assert!(r.json.get("ticket").is_none(), "no place, no ticket");
    assert_eq!(store.figures(&room).await.unwrap().places_given, 1);
    assert_eq!(
        api.status(&room, &a.ticket()).await.json["state"],
        "admitted",
        "inside stays inside"
    );
}

/// The ETA starts from the configured rate, then follows the schedule the
/// ticks see once they have seen how long sessions last; polls are paced.
pub async fn status_reports_an_eta_from_the_achieved_rate_and_paces_polls(
    store: Arc<dyn QueueStore>,
    id: &str,
) {
    // 1 s sessions: a few seconds of ticks see enough of them to tell.
    let s = RoomSettings {
        capacity: 1,
        admit_per_second: 2.0,
        session_seconds: 1,
        ..Default::default()
    };
    let room = make_room(store.as_ref(), id, s).await;
    let api = Api::new(state(store.clone()));
    api.join(&room, None).await; // inside
    let mut last = None;
    for _ in 0..50 {
        last = Some(api.join(&room, None).await);
    }
    let last = last.unwrap();
    assert_eq!(last.json["position"], 50);
    assert_eq!(last.json["waiting"], 50);
    // Before anything is measured the configured rate is the estimate.
    assert_eq!(last.json["eta_seconds"], 25);
    let poll = last.json["poll_after_ms"].as_u64().unwrap();
    assert!((1_000..=20_000).contains(&poll), "{poll}");
    // Capacity 1: a turn each time the session inside ends, a second each.
    eventually(
        "the estimate follows the schedule",
        Duration::from_secs(5),
        || async {
            store.tick(&room).await.unwrap();
            let later = api.status(&room, &last.ticket()).await;
            later.json["eta_seconds"]
                .as_u64()
                .is_some_and(|eta| eta > 25)
        },
    )
    .await;
    let later = api.status(&room, &last.ticket()).await;
    let eta = later.json["eta_seconds"].as_u64().unwrap();
    assert!(eta > 25, "the estimate follows the schedule: {eta}");
}

/// One place per account, on the store (the account index's keys are not
/// among a script's declared keys, but in the room's slot): joins of one
/// account, alone and in a batch, get one place, in line and inside; the
/// place ended, the account's next join takes a new one at the back.
pub async fn one_place_per_account(store: Arc<dyn QueueStore>, id: &str) {
    use origin::queue::{JoinRequest, Standing};
    use origin::room::AccountHash;

    let room = make_paused_room(store.as_ref(), id, settings(1)).await;
    let with = |n: u8| JoinRequest {
        account: Some(AccountHash([n, 7, 7, 7, 7, 7, 7, n])),
        ..JoinRequest::default()
    };
    let batch = [with(1), with(2), with(1), with(3), with(2)];
    let answers = store.join_many(&room, &batch).await.unwrap();
    let seqs: Vec<u64> = answers
        .iter()
        .map(|a| a.answer().unwrap().seq.unwrap())
        .collect();
    assert_eq!(seqs[0], seqs[2]);
    assert_eq!(seqs[1], seqs[4]);
    assert!(seqs[0] < seqs[1] && seqs[1] < seqs[3]);
    let again = store.join_many(&room, &[with(2)]).await.unwrap();
    let again = again[0].answer().unwrap();
    assert_eq!(again.seq, Some(seqs[1]));
    assert_eq!(again.standing, Standing::Waiting { position: Some(2) });

    // The first is let in; its account gets its session back.
    store.set_state(&room, RoomState::Open).await.unwrap();
    assert_eq!(store.tick(&room).await.unwrap().admitted, vec![seqs[0]]);
    let inside = store.join_many(&room, &[with(1)]).await.unwrap();
    let inside = inside[0].answer().unwrap();
    assert_eq!(inside.seq, Some(seqs[0]));
    assert!(matches!(inside.standing, Standing::Admitted { .. }));
    assert_eq!(store.figures(&room).await.unwrap().accounts, 3);

    // Its session ends: a new place at the back.
    assert!(store.leave(&room, seqs[0]).await.unwrap());
    assert_eq!(store.figures(&room).await.unwrap().accounts, 2);
    let back = store.join_many(&room, &[with(1)]).await.unwrap();
    let back = back[0].answer().unwrap();
    assert!(back.seq.unwrap() > seqs[3]);
    for seq in [seqs[1], seqs[3], back.seq.unwrap()] {
        assert!(store.leave(&room, seq).await.unwrap());
    }
    assert_eq!(store.figures(&room).await.unwrap().accounts, 0);
}
