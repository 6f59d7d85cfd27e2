//! Held status polls (`Prefer: wait=N`, `http::hold`) on a running origin
//! (server and promoter on a short tick, status snapshots on) over real
//! connections: in a sale's endgame a held poll hears `sold_out` within a
//! few ticks of the sale's end, and so does one far back while a few seats
//! are back; one near the front hears it was let in within a few ticks,
//! also at place 1 of a full room when a slot frees; every waiter of a
//! paused room hears the resume within a few ticks;
//! anything else is answered at once; a hold
//! that times out answers `waiting`, and back-to-back holds keep the place
//! for several abandon times; an unreadable `Prefer` is ignored; the cap
//! holds; a client that goes away mid-hold leaves nothing behind; shutdown
//! does not wait for holds. The sale signal is set on the store by the test
//! (as the sale loop would).

use super::STORE;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::*;
use origin::queue::{QueueStore, SaleSignal, SeatsLeft};
use origin::room::{RoomId, RoomSettings, RoomState};
use origin::state::AppState;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The promoter's tick (and so the views' refresh).
const TICK: Duration = Duration::from_millis(50);

fn sale(seats: SeatsLeft) -> SaleSignal {
    SaleSignal {
        seats,
        rate_factor: 1.0,
    }
}

/// An origin with snapshots on and at most `max_held` holds.
struct Origin {
    running: Running,
    state: AppState,
    store: Arc<dyn QueueStore>,
    /// The instance's own handle on `store`, counting its observations.
    seen: Arc<recording::Recording>,
    http: reqwest::Client,
}

async fn origin(store: Arc<dyn QueueStore>, max_held: usize) -> Origin {
    let seen = Arc::new(recording::Recording::new(store.clone()));
    let state = crate::common::state(seen.clone())
        .with_status_snapshots(TICK)
        .with_max_held_polls(max_held);
    let running = spawn(state.clone(), Some(TICK)).await;
    Origin {
        running,
        state,
        store,
        seen,
        http: reqwest::Client::new(),
    }
}

/// One status answer and how long it took.
struct Answer {
    json: Value,
    applied: Option<String>,
    took: Duration,
    done: Instant,
}

/// One held poll's answer, with when it came and the `Waiting-Room-Admitted-At` it carried.
struct HeldAnswer {
    json: Value,
    applied: Option<String>,
    admitted_at: Option<String>,
    done: Instant,
}

impl Origin {
    /// Joins `n` visitors; their tickets.
    async fn join(&self, room: &RoomId, n: usize) -> Vec<String> {
        let mut tickets = Vec::new();
        for _ in 0..n {
            let r = self
                .http
                .post(self.running.url(&format!("/queue/{room}/join")))
                .send()
                .await
                .unwrap();
            let json: Value = r.json().await.unwrap();
            assert_eq!(json["state"], "waiting", "{json}");
            tickets.push(json["ticket"].as_str().unwrap().to_owned());
        }
        tickets
    }

    async fn status(&self, room: &RoomId, ticket: &str, prefer: Option<&str>) -> Answer {
        let mut req = self
            .http
            .get(self.running.url(&format!("/queue/{room}/status")))
            .bearer_auth(ticket);
        if let Some(p) = prefer {
            req = req.header("prefer", p);
        }
        let start = Instant::now();
        let r = req.send().await.unwrap();
        assert_eq!(r.status(), 200);
        let applied = r
            .headers()
            .get("preference-applied")
            .map(|v| v.to_str().unwrap().to_owned());
        let json = r.json().await.unwrap();
        Answer {
            json,
            applied,
            took: start.elapsed(),
            done: Instant::now(),
        }
    }

    /// A status poll with `Prefer: wait=10` on a task of its own, so the
    /// test goes on while it is held: whether it was answered as held
    /// (`Preference-Applied`), and its body.
    fn held_poll(&self, room: &RoomId, ticket: &str) -> tokio::task::JoinHandle<(bool, Value)> {
        self.held_poll_for(room, ticket, 10)
    }

    /// [`Origin::held_poll`] with `Prefer: wait={secs}`.
    fn held_poll_for(
        &self,
        room: &RoomId,
        ticket: &str,
        secs: u64,
    ) -> tokio::task::JoinHandle<(bool, Value)> {
        let answer = self.held_reply(room, ticket, secs);
        tokio::spawn(async move {
            let answer = answer.await;
            (answer.applied.is_some(), answer.json)
        })
    }

    /// [`Origin::held_poll_for`] with the answer's headers and time.
    fn held_answer(
        &self,
        room: &RoomId,
        ticket: &str,
        secs: u64,
    ) -> tokio::task::JoinHandle<HeldAnswer> {
        tokio::spawn(self.held_reply(room, ticket, secs))
    }

    /// The status poll with `Prefer: wait={secs}` that both of the above
    /// run on a task of its own (aborting the task drops the connection),
    /// and its answer as read.
    fn held_reply(
        &self,
        room: &RoomId,
        ticket: &str,
        secs: u64,
    ) -> impl Future<Output = HeldAnswer> + Send + 'static {
        let (http, url, ticket) = (
            self.http.clone(),
            self.running.url(&format!("/queue/{room}/status")),
            ticket.to_owned(),
        );
        async move {
            let r = http
                .get(url)
                .bearer_auth(ticket)
                .header("prefer", format!("wait={secs}"))
                .send()
                .await
                .unwrap();
            let header = |name: &str| {
                r.headers()
                    .get(name)
                    .map(|v| v.to_str().unwrap().to_owned())
            };
            let (applied, admitted_at) = (
                header("preference-applied"),
                header("waiting-room-admitted-at"),
            );
            let json: Value = r.json().await.unwrap();
            HeldAnswer {
                json,
                applied,
                admitted_at,
                done: Instant::now(),
            }
        }
    }

    /// Once `n` polls have been held 200 ms, sets the room's seats to
    /// `seats` (as the sale loop would); when it did.
    async fn sale_after_holds(&self, room: &RoomId, n: usize, seats: SeatsLeft) -> Instant {
        self.until_held(n).await;
        // The scenario: the polls stay held a while before the change.
        tokio::time::sleep(Duration::from_millis(200)).await;
        self.store.set_sale(room, sale(seats)).await.unwrap();
        Instant::now()
    }

    /// Waits until the instance has made `n` observations of `room` asked
    /// after this call, the last one installed: two more answered than
    /// `n` (the first may have been asked before, the last is still being
    /// installed).
    async fn ticks(&self, room: &RoomId, n: usize) {
        let target = self.seen.observations_of(room) + n + 2;
        eventually(
            "the instance observes the room",
            Duration::from_secs(5),
            || async { self.seen.observations_of(room) >= target },
        )
        .await;
    }

    /// Waits until `n` polls are held (or fails after 5 s).
    async fn until_held(&self, n: usize) {
        let deadline = Instant::now() + Duration::from_secs(5);
        while self.state.holds.held() != n {
            assert!(
                Instant::now() < deadline,
                "{} held, not {n}",
                self.state.holds.held()
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// A room in its endgame: open, no seat available.
async fn endgame_room(store: &dyn QueueStore, id: &str, settings: RoomSettings) -> RoomId {
    let room = make_room(store, id, settings).await;
    store
        .set_sale(&room, sale(SeatsLeft::NoneAvailable))
        .await
        .unwrap();
    room
}

/// A room letting in one a second, one at a time: the front zone of a 3 s
/// hold is 2 x 1 x 5 + 100 places.
fn one_a_second() -> RoomSettings {
    RoomSettings {
        capacity: 1,
        admit_per_second: 1.0,
        abandon_seconds: 9,
        ..RoomSettings::default()
    }
}

#[tokio::test]
async fn a_held_poll_hears_sold_out_within_a_few_ticks() {
    let t = test_store(STORE);
    let room = endgame_room(t.store.as_ref(), "held-sold", RoomSettings::default()).await;
    let o = origin(t.store.clone(), 100).await;
    let tickets = o.join(&room, 3).await;
    o.ticks(&room, 2).await;

    let first = o.status(&room, &tickets[0], Some("wait=10"));
    let third = o.status(&room, &tickets[2], Some("wait=10"));
    let sell_out = async {
        o.until_held(2).await;
        // A negative check: nothing answers the holds over this window.
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(o.state.holds.held(), 2, "still held");
        o.store
            .set_sale(&room, sale(SeatsLeft::SoldOut))
            .await
            .unwrap();
        Instant::now()
    };
    let (first, third, sold_at) = tokio::join!(first, third, sell_out);
    for a in [first, third] {
        assert_eq!(a.json["state"], "sold_out", "{}", a.json);
        assert_eq!(a.applied.as_deref(), Some("wait=10"));
        assert!(a.took >= Duration::from_millis(300), "held: {:?}", a.took);
        let late = a.done.saturating_duration_since(sold_at);
        assert!(
            late < Duration::from_secs(1),
            "told {late:?} after the sale"
        );
    }
    assert_eq!(o.state.holds.held(), 0);
}

/// Closing the room wakes every held poll at once; each far back is
/// answered `closed` from the signal, without the store (thousands of
/// statuses in one instant, for a room the view does not answer for). One
/// within the admission budget's reach of the front asks the store: a
/// tick between seats coming back and the closing may have let it in, and
/// it stays inside.
#[tokio::test]
async fn a_closing_answers_the_far_back_held_polls_from_the_signal() {
    // The front zone at 10 a second and a 50 ms tick: 2 x 10 x 2.1 + 100.
    closing_answers_from_the_signal("held-closed", 200, 195..200, Duration::ZERO).await;
}

/// How long the polls were held before the closing does not widen the
/// front zone while the view is healthy: a hold near the front wakes when
/// an observation shows the line moved, so one still held at the closing
/// missed at most a tick of moves. Held 3 s (the zone would reach 202
/// places at 10 a second if counted from the holds' start), the waiters at
/// 151 to 155 are answered from the signal.
#[tokio::test]
async fn a_closing_after_a_long_hold_answers_the_far_back_from_the_signal() {
    closing_answers_from_the_signal("held-long", 160, 150..155, Duration::from_secs(3)).await;
}

/// Joins `line` visitors to an endgame room `id`, holds the polls of the
/// front one and of `far`, closes the room after `held_for`: those of
/// `far` are answered `closed` from the signal, only the front asks the
/// store.
async fn closing_answers_from_the_signal(
    id: &str,
    line: usize,
    far: std::ops::Range<usize>,
    held_for: Duration,
) {
    let t = test_store(STORE);
    let store = Arc::new(recording::Recording::new(t.store.clone()));
    let room = endgame_room(store.as_ref(), id, RoomSettings::default()).await;
    let o = origin(store.clone(), 100).await;
    let tickets = o.join(&room, line).await;
    o.ticks(&room, 2).await;
    let held: Vec<String> = std::iter::once(&tickets[0])
        .chain(&tickets[far])
        .cloned()
        .collect();
    let polls: Vec<_> = held
        .iter()
        .map(|ticket| o.held_poll(&room, ticket))
        .collect();
    o.until_held(held.len()).await;
    // The scenario: the polls stay held this long before the closing.
    tokio::time::sleep(held_for).await;
    let before = store.statuses();
    o.store.set_state(&room, RoomState::Closed).await.unwrap();
    for p in polls {
        let (applied, json) = p.await.unwrap();
        assert_eq!(json["state"], "closed", "{json}");
        assert_eq!(json["room"]["state"], "closed", "{json}");
        assert!(json["position"].is_null());
        assert!(applied, "held, and answered as held");
    }
    assert_eq!(
        store.statuses() - before,
        1,
        "only the front of the line asks the store on the closing"
    );
}

/// A closing the view hears late (its observations failed meanwhile) is
/// not answered from the signal to a waiter the line may have reached
/// since its hold began: the admission budget's reach is counted over what
/// the view may have missed, here the whole hold. Here seats came back
/// and the promoter let the waiter in while the view was blind; it reads
/// `admitted`, as the store says, not `closed`.
#[tokio::test]
async fn a_closing_heard_late_does_not_tell_a_waiter_let_in_meanwhile_it_is_closed() {
    let t = test_store(STORE);
    let store = Arc::new(recording::Recording::new(t.store.clone()));
    let settings = RoomSettings {
        capacity: 1_000,
        admit_per_second: 100.0,
        ..RoomSettings::default()
    };
    let room = endgame_room(store.as_ref(), "held-late", settings).await;
    let o = origin(store.clone(), 100).await;
    // The view's front zone at 100 a second and a 50 ms tick: 2 x 100 x
    // 2.1 + 100 = 520 places; the waiter is beyond it.
    let tickets = o.join(&room, 530).await;
    o.ticks(&room, 2).await;
    let ticket = &tickets[525];
    let poll = o.held_poll_for(&room, ticket, 20);
    o.until_held(1).await;
    store.fail_observations_of(&room);
    o.ticks(&room, 2).await;
    o.store
        .set_sale(&room, sale(SeatsLeft::Available))
        .await
        .unwrap();
    // The promoter lets the line in at 100 a second, the waiter among them.
    let seq = seq_of(ticket, &room);
    let deadline = Instant::now() + Duration::from_secs(15);
    while !matches!(
        t.store.status(&room, seq).await.unwrap().standing,
        origin::queue::Standing::Admitted { .. }
    ) {
        assert!(Instant::now() < deadline, "not let in within 15 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    o.store.set_state(&room, RoomState::Closed).await.unwrap();
    store.heal_observations_of(&room);
    let (held, json) = poll.await.unwrap();
    assert!(held, "held, and answered as held");
    assert_eq!(json["state"], "admitted", "{json}");
}

#[tokio::test]
async fn polls_are_answered_at_once_outside_the_endgame_or_without_the_header() {
    let t = test_store(STORE);
    let room = endgame_room(t.store.as_ref(), "held-not", settings(1)).await;
    let o = origin(t.store.clone(), 100).await;
    let store = o.store.as_ref();
    let tickets = o.join(&room, 2).await;
    o.ticks(&room, 2).await;
    let quick = |a: &Answer, state: &str| {
        assert_eq!(a.json["state"], state, "{}", a.json);
        assert_eq!(a.applied, None, "not held");
        assert!(a.took < Duration::from_millis(500), "took {:?}", a.took);
    };

    // The endgame, but no header, a zero wait or another preference.
    for prefer in [None, Some("wait=0"), Some("respond-async")] {
        quick(&o.status(&room, &tickets[1], prefer).await, "waiting");
    }
    // Seats to sell: the first is let in (an admitted answer is never
    // held); the second, near the front, is held until it is let in (see
    // `at_place_one_of_a_full_room_a_held_poll_hears_it_was_let_in`).
    store
        .set_sale(&room, sale(SeatsLeft::Available))
        .await
        .unwrap();
    o.ticks(&room, 3).await;
    quick(
        &o.status(&room, &tickets[0], Some("wait=10")).await,
        "admitted",
    );
    // Sold out: told at once.
    store
        .set_sale(&room, sale(SeatsLeft::SoldOut))
        .await
        .unwrap();
    o.ticks(&room, 2).await;
    quick(
        &o.status(&room, &tickets[1], Some("wait=10")).await,
        "sold_out",
    );
    assert_eq!(o.state.holds.held(), 0);
}

#[tokio::test]
async fn back_to_back_holds_time_out_waiting_and_keep_the_place() {
    let t = test_store(STORE);
    // Abandon time 3 s: the poll interval, and so every hold, is 1 s.
    let s = RoomSettings {
        abandon_seconds: 3,
        ..RoomSettings::default()
    };
    let room = endgame_room(t.store.as_ref(), "held-long", s).await;
    let o = origin(t.store.clone(), 100).await;
    let tickets = o.join(&room, 2).await;
    o.ticks(&room, 2).await;

    // Four abandon times of holds, each polled again the moment it ends
    // (the second waiter never polls).
    let until = Instant::now() + Duration::from_secs(12);
    let mut holds = 0;
    while Instant::now() < until {
        let a = o.status(&room, &tickets[0], Some("wait=20")).await;
        assert_eq!(a.json["state"], "waiting", "{}", a.json);
        assert_eq!(a.json["position"], 1);
        assert_eq!(
            a.applied.as_deref(),
            Some("wait=1"),
            "clamped to the interval"
        );
        assert!(a.took >= Duration::from_millis(950), "held {:?}", a.took);
        assert!(a.took < Duration::from_millis(1_500), "held {:?}", a.took);
        holds += 1;
    }
    assert!(holds >= 8, "{holds} holds");
    let f = o.store.figures(&room).await.unwrap();
    assert_eq!((f.waiting, f.abandoned_total), (1, 1), "{f:?}");
    let gone = o.status(&room, &tickets[1], None).await;
    assert_eq!(
        gone.json["state"], "expired",
        "who stopped polling is dropped"
    );
}

#[tokio::test]
async fn an_unreadable_prefer_is_ignored_and_a_large_wait_clamped() {
    let t = test_store(STORE);
    let s = RoomSettings {
        abandon_seconds: 3,
        ..RoomSettings::default()
    };
    let room = endgame_room(t.store.as_ref(), "held-odd", s).await;
    let o = origin(t.store.clone(), 100).await;
    let tickets = o.join(&room, 1).await;
    o.ticks(&room, 2).await;
    let long = format!("wait=5, {}", "x".repeat(4_000));
    for prefer in [
        "wait=abc",
        "wait=-3",
        "wait=99999999999999999999999999",
        "wait",
        long.as_str(),
    ] {
        let a = o.status(&room, &tickets[0], Some(prefer)).await;
        assert_eq!(a.json["state"], "waiting");
        assert_eq!(a.applied, None, "{prefer}");
        assert!(
            a.took < Duration::from_millis(500),
            "{prefer}: {:?}",
            a.took
        );
    }
    let a = o.status(&room, &tickets[0], Some("wait=86400")).await;
    assert_eq!(a.applied.as_deref(), Some("wait=1"));
}

#[tokio::test]
async fn past_the_cap_polls_are_answered_at_once() {
    let t = test_store(STORE);
    let room = endgame_room(t.store.as_ref(), "held-cap", RoomSettings::default()).await;
    let o = origin(t.store.clone(), 2).await;
    let tickets = o.join(&room, 3).await;
    o.ticks(&room, 2).await;
    let held: Vec<_> = tickets[..2]
        .iter()
        .map(|ticket| o.held_poll(&room, ticket))
        .collect();
    o.until_held(2).await;
    let third = o.status(&room, &tickets[2], Some("wait=10")).await;
    assert_eq!(third.json["state"], "waiting");
    assert_eq!(third.applied, None, "over the cap: not held");
    assert!(third.took < Duration::from_millis(500));
    for h in held {
        h.abort();
    }
    // The aborted clients' connections close: their holds end.
    o.until_held(0).await;
    let again = tokio::time::timeout(
        Duration::from_millis(300),
        o.status(&room, &tickets[2], Some("wait=10")),
    )
    .await;
    assert!(again.is_err(), "a place came back: held again");
}

/// One ticket on many connections holds a few polls (an account's
/// browsers share a place), not every place: its further polls are
/// answered at once (no `Preference-Applied`), and another waiter's poll is
/// still held.
#[tokio::test]
async fn one_ticket_holds_a_few_polls() {
    let t = test_store(STORE);
    let room = endgame_room(t.store.as_ref(), "held-one", RoomSettings::default()).await;
    let o = origin(t.store.clone(), 8).await;
    let tickets = o.join(&room, 2).await;
    o.ticks(&room, 2).await;
    let first: Vec<_> = (0..origin::holds::HOLDS_PER_TICKET)
        .map(|_| o.held_poll(&room, &tickets[0]))
        .collect();
    o.until_held(origin::holds::HOLDS_PER_TICKET).await;
    for _ in 0..5 {
        let again = o.status(&room, &tickets[0], Some("wait=10")).await;
        assert_eq!(again.json["state"], "waiting");
        assert_eq!(again.applied, None, "the same ticket held once too often");
        assert!(again.took < Duration::from_millis(500));
    }
    assert_eq!(o.state.holds.held(), origin::holds::HOLDS_PER_TICKET);
    let other = tokio::time::timeout(
        Duration::from_millis(300),
        o.status(&room, &tickets[1], Some("wait=10")),
    )
    .await;
    assert!(other.is_err(), "another waiter's poll is held");
    for h in first {
        h.abort();
    }
    o.until_held(0).await;
}

#[tokio::test]
async fn a_client_gone_mid_hold_leaves_nothing_behind() {
    let t = test_store(STORE);
    let room = endgame_room(t.store.as_ref(), "held-gone", RoomSettings::default()).await;
    let o = origin(t.store.clone(), 100).await;
    let tickets = o.join(&room, 1).await;
    o.ticks(&room, 2).await;
    for _ in 0..3 {
        let mut tcp = tokio::net::TcpStream::connect(o.running.addr)
            .await
            .unwrap();
        let head = format!(
            "GET /queue/{room}/status HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer {}\r\nprefer: wait=10\r\n\r\n",
            tickets[0]
        );
        tcp.write_all(head.as_bytes()).await.unwrap();
        o.until_held(1).await;
        drop(tcp);
        // The connection's task drops the handler's future: the hold ends
        // with it, long before its 10 s.
        o.until_held(0).await;
    }
    // A client that half-closes (sends its request, then shuts its writing
    // side) is gone too, as far as a hold can tell.
    let mut tcp = tokio::net::TcpStream::connect(o.running.addr)
        .await
        .unwrap();
    let head = format!(
        "GET /queue/{room}/status HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer {}\r\nprefer: wait=10\r\n\r\n",
        tickets[0]
    );
    tcp.write_all(head.as_bytes()).await.unwrap();
    o.until_held(1).await;
    tcp.shutdown().await.unwrap();
    o.until_held(0).await;
    let mut rest = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(1), tcp.read_to_end(&mut rest)).await;
}

#[tokio::test]
async fn shutdown_answers_held_polls_at_once() {
    let t = test_store(STORE);
    let room = endgame_room(t.store.as_ref(), "held-stop", RoomSettings::default()).await;
    let o = origin(t.store.clone(), 100).await;
    let tickets = o.join(&room, 1).await;
    o.ticks(&room, 2).await;
    let poll = o.held_poll(&room, &tickets[0]);
    o.until_held(1).await;
    let start = Instant::now();
    tokio::time::timeout(Duration::from_secs(3), o.running.stop())
        .await
        .expect("the drain does not wait for the hold");
    let (held, json) = poll.await.unwrap();
    assert!(held);
    assert_eq!(json["state"], "waiting", "{json}");
    assert!(start.elapsed() < Duration::from_secs(3));
    assert_eq!(o.state.holds.held(), 0);
}

#[tokio::test]
async fn seats_back_wake_the_front_of_the_line_only() {
    let t = test_store(STORE);
    let s = one_a_second();
    let room = endgame_room(t.store.as_ref(), "held-back", s).await;
    let o = origin(t.store.clone(), 100).await;
    let tickets = o.join(&room, 150).await;
    o.ticks(&room, 2).await;
    let (first, last) = (&tickets[0], &tickets[149]);
    let front = o.status(&room, first, Some("wait=3"));
    let back = o.status(&room, last, Some("wait=3"));
    let seats_back = o.sale_after_holds(&room, 2, SeatsLeft::Available);
    let (front, back, at) = tokio::join!(front, back, seats_back);
    let woke = front.done.saturating_duration_since(at);
    assert_eq!(front.applied.as_deref(), Some("wait=3"));
    assert!(
        woke < Duration::from_secs(1),
        "the front wakes {woke:?} after the seats came back"
    );
    assert!(
        back.took >= Duration::from_millis(2_900),
        "far back keeps its hold: {:?}",
        back.took
    );
    assert_eq!(back.json["state"], "waiting");
}

#[tokio::test]
async fn before_the_seats_first_run_out_the_far_back_is_answered_at_once() {
    let t = test_store(STORE);
    let s = one_a_second();
    // Joined while paused (nobody let in), then opened with seats to sell.
    let room = make_room(t.store.as_ref(), "held-early", s).await;
    t.store.set_state(&room, RoomState::Paused).await.unwrap();
    let o = origin(t.store.clone(), 100).await;
    let tickets = o.join(&room, 150).await;
    t.store.set_state(&room, RoomState::Open).await.unwrap();
    t.store
        .set_sale(&room, sale(SeatsLeft::Available))
        .await
        .unwrap();
    o.ticks(&room, 2).await;
    let far = o.status(&room, &tickets[149], Some("wait=3")).await;
    assert_eq!(far.json["state"], "waiting", "{}", far.json);
    assert_eq!(far.applied, None, "not held");
    assert!(far.took < Duration::from_millis(500), "took {:?}", far.took);
}

#[tokio::test]
async fn with_seats_back_the_far_back_is_held_and_the_front_until_let_in() {
    let t = test_store(STORE);
    let s = one_a_second();
    // Everyone joins while every seat is taken (a join could be let in at
    // once otherwise), then a few come back.
    let room = endgame_room(t.store.as_ref(), "held-far", s).await;
    let o = origin(t.store.clone(), 100).await;
    let tickets = o.join(&room, 150).await;
    o.store
        .set_sale(&room, sale(SeatsLeft::Available))
        .await
        .unwrap();
    o.ticks(&room, 2).await;

    // Near the front of a fifo line: held until the front passes it (the
    // one inside stays, so its whole wait here), as long as its poll
    // interval (a second while nothing is known of the stays).
    let plain = o.status(&room, &tickets[2], None).await;
    let w = (plain.json["poll_after_ms"].as_u64().unwrap() / 1000).clamp(1, 3);
    let near = o.status(&room, &tickets[2], Some("wait=3")).await;
    assert_eq!(near.json["state"], "waiting", "{}", near.json);
    assert_eq!(near.applied, Some(format!("wait={w}")));
    assert!(
        near.took >= Duration::from_millis(w * 1000 - 100)
            && near.took < Duration::from_millis(w * 1000 + 500),
        "took {:?}",
        near.took
    );

    // Far back: held, and told the moment the last seat sells.
    let far = o.status(&room, &tickets[149], Some("wait=3"));
    let sell_out = o.sale_after_holds(&room, 1, SeatsLeft::SoldOut);
    let (far, sold_at) = tokio::join!(far, sell_out);
    assert_eq!(far.json["state"], "sold_out", "{}", far.json);
    assert_eq!(far.applied.as_deref(), Some("wait=3"));
    let late = far.done.saturating_duration_since(sold_at);
    assert!(
        late < Duration::from_secs(1),
        "told {late:?} after the sale"
    );
    assert_eq!(o.state.holds.held(), 0);
}

#[tokio::test]
async fn a_held_poll_near_the_front_hears_it_was_let_in_within_a_few_ticks() {
    let t = test_store(STORE);
    // Three a second: a burst of three (the budget banks a second), then
    // one every third of a second.
    let s = RoomSettings {
        capacity: 10,
        admit_per_second: 3.0,
        abandon_seconds: 9,
        ..RoomSettings::default()
    };
    let room = endgame_room(t.store.as_ref(), "held-in", s).await;
    let o = origin(t.store.clone(), 100).await;
    let tickets = o.join(&room, 8).await;
    o.ticks(&room, 2).await;
    o.store
        .set_sale(&room, sale(SeatsLeft::Available))
        .await
        .unwrap();
    // Once the burst is in, the fourth is first in line, let in within a
    // third of a second; its poll, near the front with a few seats back, is
    // held a second at most and ends when the line moves.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let first = o.status(&room, &tickets[0], None).await;
        if first.json["state"] == "admitted" {
            break;
        }
        assert!(Instant::now() < deadline, "{}", first.json);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let fourth = o.status(&room, &tickets[3], Some("wait=3")).await;
    assert_eq!(fourth.json["state"], "admitted", "{}", fourth.json);
    assert!(
        fourth.took < Duration::from_millis(900),
        "told {:?} after asking (the hold's cap is 1 s)",
        fourth.took
    );
    assert_eq!(o.state.holds.held(), 0);
}

impl Origin {
    /// A visitor let in at its join (a free slot, nobody waiting): its ticket.
    async fn join_inside(&self, room: &RoomId) -> String {
        let r = self
            .http
            .post(self.running.url(&format!("/queue/{room}/join")))
            .send()
            .await
            .unwrap();
        let json: Value = r.json().await.unwrap();
        assert_eq!(json["state"], "admitted", "{json}");
        json["ticket"].as_str().unwrap().to_owned()
    }
}

/// Unix ms of an RFC 3339 time.
fn unix_ms(text: &str) -> u64 {
    let t =
        time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339).unwrap();
    u64::try_from(t.unix_timestamp_nanos() / 1_000_000).unwrap()
}

fn unix_now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// At place 1 of a full room (its one slot taken for ten minutes, so the
/// poll interval is the longest the abandon time allows), a held poll is
/// held for its whole wait, and answered `admitted` within a few ticks of
/// the slot freeing, dated by the store's admission.
#[tokio::test]
async fn at_place_one_of_a_full_room_a_held_poll_hears_it_was_let_in() {
    let t = test_store(STORE);
    let s = RoomSettings {
        capacity: 1,
        admit_per_second: 10.0,
        session_seconds: 600,
        abandon_seconds: 60,
        ..RoomSettings::default()
    };
    let room = make_room(t.store.as_ref(), "held-turn", s).await;
    let o = origin(t.store.clone(), 100).await;
    let inside = o.join_inside(&room).await;
    let tickets = o.join(&room, 2).await;
    o.ticks(&room, 2).await;
    let first = o.status(&room, &tickets[0], None).await;
    assert_eq!(first.json["position"], 1, "{}", first.json);
    // Held as long as its poll interval: 20 s once the stays are known, a
    // second while nothing is (the schedule cannot tell the slot's end).
    let w = (first.json["poll_after_ms"].as_u64().unwrap() / 1000).clamp(1, 20);

    let poll = o.held_answer(&room, &tickets[0], 20);
    let second = o.held_answer(&room, &tickets[1], 20);
    o.until_held(2).await;
    // The scenario: the polls stay held a while before the slot frees.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(o.state.holds.held(), 2, "still held");
    let (left, left_ms) = (Instant::now(), unix_now_ms());
    let r = o
        .http
        .post(o.running.url(&format!("/queue/{room}/leave")))
        .bearer_auth(&inside)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    let a = poll.await.unwrap();
    assert_eq!(a.json["state"], "admitted", "{}", a.json);
    assert_eq!(a.applied, Some(format!("wait={w}")));
    let late = a.done.saturating_duration_since(left);
    eprintln!("place 1 of a full room: told it was let in {late:?} after the slot freed");
    assert!(
        late < Duration::from_secs(1),
        "told {late:?} after the slot freed"
    );
    let at = unix_ms(a.admitted_at.as_deref().expect("dated"));
    assert!(
        at + 50 >= left_ms && at <= unix_now_ms(),
        "let in at {at}, the slot freed at {left_ms}"
    );
    // The one behind it moved up, and is still held (while its hold lasts).
    if w >= 5 {
        assert_eq!(o.state.holds.held(), 1);
    }
    second.abort();
    o.until_held(0).await;
}

/// Every waiter of a paused room is held, far back as at the front, and
/// hears the resume within a few ticks (the figure is printed); a closing
/// wakes them the same way.
#[tokio::test]
async fn every_held_waiter_of_a_paused_room_hears_the_resume() {
    let t = test_store(STORE);
    let s = RoomSettings {
        capacity: 1,
        admit_per_second: 1.0,
        abandon_seconds: 60,
        ..RoomSettings::default()
    };
    let room = make_room(t.store.as_ref(), "held-resume", s).await;
    t.store.set_state(&room, RoomState::Paused).await.unwrap();
    let o = origin(t.store.clone(), 100).await;
    let tickets = o.join(&room, 150).await;
    o.ticks(&room, 2).await;
    let places = [0, 1, 74, 149];
    let polls: Vec<_> = places
        .iter()
        .map(|&i| o.held_answer(&room, &tickets[i], 20))
        .collect();
    o.until_held(places.len()).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(o.state.holds.held(), places.len(), "still held");
    let resumed = Instant::now();
    o.store.set_state(&room, RoomState::Open).await.unwrap();
    let mut heard = Vec::new();
    for (p, i) in polls.into_iter().zip(places) {
        let a = p.await.unwrap();
        assert_eq!(a.applied.as_deref(), Some("wait=20"), "{}", a.json);
        assert_eq!(a.json["room"]["state"], "open", "{}", a.json);
        // The front may have been let in by the tick that followed.
        let state = a.json["state"].as_str().unwrap();
        assert!(
            state == "waiting" || (i == 0 && state == "admitted"),
            "{}",
            a.json
        );
        heard.push(a.done.saturating_duration_since(resumed));
    }
    eprintln!("the resume heard after {heard:?} (places 1, 2, 75, 150)");
    for late in &heard {
        assert!(
            *late < Duration::from_secs(1),
            "heard {heard:?} after the resume"
        );
    }

    // Paused again, then closed: the far back wakes on the closing.
    o.store.set_state(&room, RoomState::Paused).await.unwrap();
    o.ticks(&room, 2).await;
    let far = o.held_answer(&room, &tickets[149], 20);
    o.until_held(1).await;
    let closed_at = Instant::now();
    o.store.set_state(&room, RoomState::Closed).await.unwrap();
    let a = far.await.unwrap();
    assert_eq!(a.json["state"], "closed", "{}", a.json);
    let late = a.done.saturating_duration_since(closed_at);
    assert!(
        late < Duration::from_secs(1),
        "heard {late:?} after the closing"
    );
}
