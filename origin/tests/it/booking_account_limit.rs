//! The performance setting `max_seats_per_account` on both databases: what
//! one account holds and has booked in a performance, over all its
//! sessions, stays within it; sessions of one account racing for its last
//! seat get it once; other accounts and visitors without an account are
//! untouched. The HTTP layer carries no account yet, so these call the
//! store directly (the setting's admin API is in `booking_api.rs`).

use std::sync::Arc;
use std::time::Duration;

use crate::common::booking::*;
use origin::booking::{AccountHash, BookingError, BookingStore, SeatState};
use origin::error::ApiError;
use sqlx::Connection;

both!(
    an_account_keeps_to_its_limit_over_its_sessions,
    sessions_of_one_account_race_for_its_last_seat,
    sessions_of_a_new_account_race_for_its_only_seat,
    accounts_do_not_interfere,
    an_ended_hold_does_not_count,
    a_hold_being_paid_for_counts,
    visitors_without_an_account_are_not_limited,
    the_setting_is_kept_and_checked,
);

const HOUR: u64 = 3_600_000;

fn account(n: u8) -> Option<AccountHash> {
    Some(AccountHash([0xac, 0xc0, 0, 0, 0, 0, 0, n]))
}

/// A fresh room with the performance `p` of 2 rows of 10 seats, at most
/// `max` seats per account.
async fn limited(store: &BookingStore, tag: &str, max: Option<u32>) -> String {
    let room = format!("{tag}-{:08x}", rand::random::<u32>());
    let mut s = spec(&[("A", 2, 10, 1000)]);
    s.max_seats_per_account = max;
    store.put_performance(&room, "p", &s, T0).await.unwrap();
    room
}

/// Whether every one of `ids` is available at `now`.
async fn available(store: &BookingStore, room: &str, ids: &[&str], now: u64) -> bool {
    let map = store.seats(room, "p", now).await.unwrap();
    ids.iter().all(|id| {
        map.seats
            .iter()
            .any(|s| s.id == *id && s.state == SeatState::Available)
    })
}

/// The live holds and confirmed bookings of `account` (hex) in the database.
async fn recorded(db: &TestDb, account: &str) -> (i64, i64) {
    let mut conn = db.raw().await;
    let (holds,): (i64,) = sqlx::query_as(
        "SELECT COUNT(*) FROM booking_holds WHERE account = ? AND state IN ('held', 'paying')",
    )
    .bind(account)
    .fetch_one(&mut conn)
    .await
    .unwrap();
    let (bookings,): (i64,) = sqlx::query_as(
        "SELECT COUNT(*) FROM booking_bookings WHERE account = ? AND status = 'confirmed'",
    )
    .bind(account)
    .fetch_one(&mut conn)
    .await
    .unwrap();
    conn.close().await.ok();
    (holds, bookings)
}

/// (a) Two seats booked by two sessions of an account with a limit of 2:
/// a third session holds nothing, until a booking is cancelled.
async fn an_account_keeps_to_its_limit_over_its_sessions(db: &TestDb) {
    let (store, _) = db.store_counting().await;
    let room = &limited(&store, "acct", Some(2)).await;
    let a = account(1);
    let mut bookings = Vec::new();
    for (visitor, seat) in [(1, "A-1-1"), (2, "A-1-2")] {
        let hold = store
            .hold(room, "p", visitor, a, &seats(&[seat]), T0 + HOUR, T0)
            .await
            .unwrap();
        let key = format!("k{visitor}");
        let booking = store
            .confirm(room, visitor, &hold.hold_id, &key, "tok_visa", T0 + 10)
            .await
            .unwrap();
        bookings.push((visitor, booking.booking_id));
    }
    assert_eq!(
        recorded(db, &a.unwrap().to_hex()).await,
        (0, 2),
        "the bookings record the account"
    );

    // A new session of the account (another visitor id, another place).
    for want in [&["A-1-3"][..], &["A-1-3", "A-1-4"]] {
        let refused = store
            .hold(room, "p", 3, a, &seats(want), T0 + HOUR, T0 + 20)
            .await
            .unwrap_err();
        assert_eq!(refused, BookingError::AccountLimit { max: 2 });
        assert!(available(&store, room, want, T0 + 20).await, "nothing held");
    }
    let perf = store.get_performance(room, "p", T0 + 20).await.unwrap();
    assert_eq!((perf.counts.held, perf.counts.booked), (0, 2));

    // The HTTP layer's answer: 409 `account_limit`, saying the limit.
    let api = ApiError::from(BookingError::AccountLimit { max: 2 });
    let (status, code, message) = api.parts();
    assert_eq!((status.as_u16(), code), (409, "account_limit"));
    assert!(message.contains("at most 2 seats per account"), "{message}");

    // A cancelled booking counts no more: the account holds one again, and
    // is at its limit again.
    let (visitor, booking_id) = &bookings[0];
    store
        .cancel_booking(room, *visitor, booking_id, T0 + 30)
        .await
        .unwrap();
    store
        .hold(room, "p", 3, a, &seats(&["A-1-3"]), T0 + HOUR, T0 + 40)
        .await
        .unwrap();
    assert_eq!(
        store
            .hold(room, "p", 4, a, &seats(&["A-1-4"]), T0 + HOUR, T0 + 50)
            .await
            .unwrap_err(),
        BookingError::AccountLimit { max: 2 }
    );
    assert_eq!(recorded(db, &a.unwrap().to_hex()).await, (1, 1));
}

/// Holds one seat for each of `visitors` at once, all sessions of
/// `account`, each on a seat of its own; returns how many won and every
/// refusal.
async fn race(
    store: &Arc<BookingStore>,
    room: &str,
    account: Option<AccountHash>,
    visitors: std::ops::Range<u128>,
    now: u64,
) -> (usize, Vec<BookingError>) {
    let n = usize::try_from(visitors.end - visitors.start).unwrap();
    let barrier = Arc::new(tokio::sync::Barrier::new(n));
    let tasks: Vec<_> = visitors
        .map(|visitor| {
            let (store, room, barrier) = (store.clone(), room.to_owned(), barrier.clone());
            // Distinct seats: only the account's limit stands between them.
            let seat = format!("A-2-{}", visitor % 10 + 1);
            tokio::spawn(async move {
                barrier.wait().await;
                store
                    .hold(&room, "p", visitor, account, &[seat], now + HOUR, now)
                    .await
            })
        })
        .collect();
    let mut won = 0;
    let mut refused = Vec::new();
    for task in tasks {
        match task.await.unwrap() {
            Ok(_) => won += 1,
            Err(e) => refused.push(e),
        }
    }
    (won, refused)
}

/// (b) An account at one seat of two: its other sessions race for the
/// last one, round after round; exactly one wins each time.
async fn sessions_of_one_account_race_for_its_last_seat(db: &TestDb) {
    let (store, _) = db.store_counting().await;
    let store = Arc::new(store);
    for round in 0..6u8 {
        let room = &limited(&store, "race", Some(2)).await;
        let a = account(10 + round);
        store
            .hold(room, "p", 1, a, &seats(&["A-1-1"]), T0 + HOUR, T0)
            .await
            .unwrap();
        // Session A' (the account again, in a new place) and B, and more.
        let (won, refused) = race(&store, room, a, 100..108, T0 + 10).await;
        assert_eq!(won, 1, "round {round}: {refused:?}");
        assert!(
            refused
                .iter()
                .all(|e| *e == BookingError::AccountLimit { max: 2 }),
            "round {round}: {refused:?}"
        );
        let perf = store.get_performance(room, "p", T0 + 10).await.unwrap();
        assert_eq!(perf.counts.held, 2, "round {round}");
        assert_eq!(recorded(db, &a.unwrap().to_hex()).await, (2, 0));
    }
}

/// (b) The same for an account's first hold in a performance (on MySQL its
/// lock row does not exist yet): a limit of 1, one winner.
async fn sessions_of_a_new_account_race_for_its_only_seat(db: &TestDb) {
    let (store, _) = db.store_counting().await;
    let store = Arc::new(store);
    for round in 0..6u8 {
        let room = &limited(&store, "first", Some(1)).await;
        let a = account(20 + round);
        let (won, refused) = race(&store, room, a, 0..8, T0).await;
        assert_eq!(won, 1, "round {round}: {refused:?}");
        assert!(
            refused
                .iter()
                .all(|e| *e == BookingError::AccountLimit { max: 1 }),
            "round {round}: {refused:?}"
        );
    }
}

/// (c) Accounts count apart: one at its limit leaves another free, many
/// accounts holding at once all get their seats, and (on MySQL) an
/// account's lock held open does not hold up another account's hold.
async fn accounts_do_not_interfere(db: &TestDb) {
    let (store, _) = db.store_counting().await;
    let store = Arc::new(store);
    let room = &limited(&store, "apart", Some(1)).await;
    let (x, y) = (account(30), account(31));
    store
        .hold(room, "p", 1, x, &seats(&["A-1-1"]), T0 + HOUR, T0)
        .await
        .unwrap();
    assert_eq!(
        store
            .hold(room, "p", 2, x, &seats(&["A-1-2"]), T0 + HOUR, T0)
            .await
            .unwrap_err(),
        BookingError::AccountLimit { max: 1 }
    );
    store
        .hold(room, "p", 3, y, &seats(&["A-1-2"]), T0 + HOUR, T0)
        .await
        .unwrap();

    // Ten accounts at once, one seat each: all held.
    let tasks: Vec<_> = (0..10u8)
        .map(|i| {
            let (store, room) = (store.clone(), room.clone());
            tokio::spawn(async move {
                let seat = format!("A-2-{}", i + 1);
                store
                    .hold(
                        &room,
                        "p",
                        100 + u128::from(i),
                        account(40 + i),
                        &[seat],
                        T0 + HOUR,
                        T0,
                    )
                    .await
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap().unwrap();
    }

    if db.kind == Kind::MySql {
        // Account x's lock taken as a hold takes it, and kept open by a
        // transaction of its own: x's next session waits for it, while new
        // accounts hold meanwhile, the one whose row sorts just before x's
        // too (the lock is the row's, not the gap's).
        let mut conn = db.raw().await;
        sqlx::query("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
            .execute(&mut conn)
            .await
            .unwrap();
        let mut tx = conn.begin().await.unwrap();
        let (pkey,): (i64,) =
            sqlx::query_as("SELECT pkey FROM booking_performances WHERE room = ?")
                .bind(room.as_str())
                .fetch_one(&mut *tx)
                .await
                .unwrap();
        sqlx::query(
            "INSERT INTO booking_account_locks (pkey, account) VALUES (?, ?) \
             ON DUPLICATE KEY UPDATE account = account",
        )
        .bind(pkey)
        .bind(x.unwrap().to_hex())
        .execute(&mut *tx)
        .await
        .unwrap();
        let waiting = {
            let (store, room) = (store.clone(), room.clone());
            tokio::spawn(async move {
                let want = seats(&["A-1-9"]);
                store.hold(&room, "p", 300, x, &want, T0 + HOUR, T0).await
            })
        };
        for (visitor, other, seat) in [(200, account(29), "A-1-5"), (201, account(32), "A-1-6")] {
            let want = seats(&[seat]);
            let held = store.hold(room, "p", visitor, other, &want, T0 + HOUR, T0);
            tokio::time::timeout(Duration::from_secs(3), held)
                .await
                .expect("another account's hold does not wait for x's lock")
                .unwrap();
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(
            !waiting.is_finished(),
            "x's next session waits for x's lock"
        );
        tx.rollback().await.unwrap();
        assert_eq!(
            waiting.await.unwrap().unwrap_err(),
            BookingError::AccountLimit { max: 1 }
        );
        conn.close().await.ok();
    }
}

/// (d) A hold whose time is up counts no more, sweeper or not; nor does a
/// released one.
async fn an_ended_hold_does_not_count(db: &TestDb) {
    let (store, _) = db.store_counting().await;
    let room = &limited(&store, "ended", Some(2)).await;
    let a = account(60);
    // Two seats until the session's end, T0 + 5 s.
    let first = store
        .hold(room, "p", 1, a, &seats(&["A-1-1", "A-1-2"]), T0 + 5_000, T0)
        .await
        .unwrap();
    assert_eq!(first.expires_at, T0 + 5_000);
    assert_eq!(
        store
            .hold(room, "p", 2, a, &seats(&["A-1-3"]), T0 + HOUR, T0 + 4_999)
            .await
            .unwrap_err(),
        BookingError::AccountLimit { max: 2 }
    );
    // Ended by time alone: two seats again, for another session.
    let second = store
        .hold(
            room,
            "p",
            2,
            a,
            &seats(&["A-1-3", "A-1-4"]),
            T0 + HOUR,
            T0 + 5_000,
        )
        .await
        .unwrap();
    store
        .release_hold(room, 2, &second.hold_id, T0 + 6_000)
        .await
        .unwrap();
    store
        .hold(
            room,
            "p",
            3,
            a,
            &seats(&["A-1-5", "A-1-6"]),
            T0 + HOUR,
            T0 + 7_000,
        )
        .await
        .unwrap();
}

/// A hold being paid for still counts (its seats are protected); once the
/// payment books it, the booking does.
async fn a_hold_being_paid_for_counts(db: &TestDb) {
    let pay = Arc::new(CountingPayment::new(Duration::from_millis(800)));
    let store = Arc::new(db.store(pay, T0).await);
    let room = &limited(&store, "paying", Some(1)).await;
    let a = account(70);
    let hold = store
        .hold(room, "p", 1, a, &seats(&["A-1-1"]), T0 + HOUR, T0)
        .await
        .unwrap();
    let confirm = {
        let (store, room) = (store.clone(), room.clone());
        tokio::spawn(async move {
            store
                .confirm(&room, 1, &hold.hold_id, "k", "tok_visa", T0 + 10)
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(recorded(db, &a.unwrap().to_hex()).await, (1, 0), "paying");
    assert_eq!(
        store
            .hold(room, "p", 2, a, &seats(&["A-1-2"]), T0 + HOUR, T0 + 20)
            .await
            .unwrap_err(),
        BookingError::AccountLimit { max: 1 }
    );
    confirm.await.unwrap().unwrap();
    assert_eq!(
        store
            .hold(room, "p", 2, a, &seats(&["A-1-2"]), T0 + HOUR, T0 + 30)
            .await
            .unwrap_err(),
        BookingError::AccountLimit { max: 1 }
    );
}

/// (e) Visitors without an account hold as before under a limit, and
/// leave no trace of one: no account recorded, no lock row taken.
async fn visitors_without_an_account_are_not_limited(db: &TestDb) {
    let (store, _) = db.store_counting().await;
    let room = &limited(&store, "anon", Some(1)).await;
    for (visitor, want) in [
        (1, &["A-1-1", "A-1-2", "A-1-3", "A-1-4"][..]),
        (2, &["A-1-5", "A-1-6", "A-1-7"]),
    ] {
        store
            .hold(room, "p", visitor, None, &seats(want), T0 + HOUR, T0)
            .await
            .unwrap();
    }
    // An account at its limit beside them changes nothing for them.
    let a = account(80);
    store
        .hold(room, "p", 3, a, &seats(&["A-2-1"]), T0 + HOUR, T0)
        .await
        .unwrap();
    store
        .hold(
            room,
            "p",
            4,
            None,
            &seats(&["A-2-2", "A-2-3"]),
            T0 + HOUR,
            T0,
        )
        .await
        .unwrap();
    // An account in a performance without a limit: recorded, not counted.
    let free = &limited(&store, "nolimit", None).await;
    for visitor in 10..13 {
        let seat = format!("A-1-{}", visitor - 9);
        store
            .hold(free, "p", visitor, a, &[seat], T0 + HOUR, T0)
            .await
            .unwrap();
    }
    let mut conn = db.raw().await;
    let (anonymous,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM booking_holds WHERE account IS NULL")
            .fetch_one(&mut conn)
            .await
            .unwrap();
    assert_eq!(anonymous, 3);
    conn.close().await.ok();
    assert_eq!(recorded(db, &a.unwrap().to_hex()).await, (4, 0));
    if db.kind == Kind::MySql {
        // One lock row: the one hold of an account under a limit.
        assert_eq!(db.rows("booking_account_locks").await, 1);
    }
}

/// The setting is kept with the performance, replaced with it, and read
/// back; out of range is `Invalid` and changes nothing.
async fn the_setting_is_kept_and_checked(db: &TestDb) {
    let (store, _) = db.store_counting().await;
    let room = &limited(&store, "setting", Some(3)).await;
    let perf = store.get_performance(room, "p", T0).await.unwrap();
    assert_eq!(perf.spec.max_seats_per_account, Some(3));
    let json = serde_json::to_value(&perf).unwrap();
    assert_eq!(json["max_seats_per_account"], 3);
    let mut s = perf.spec.clone();
    for bad in [Some(0), Some(100_001)] {
        s.max_seats_per_account = bad;
        assert!(matches!(
            store.put_performance(room, "p", &s, T0).await,
            Err(BookingError::Invalid(_))
        ));
    }
    assert_eq!(
        store
            .get_performance(room, "p", T0)
            .await
            .unwrap()
            .spec
            .max_seats_per_account,
        Some(3)
    );
    s.max_seats_per_account = None;
    let perf = store.put_performance(room, "p", &s, T0).await.unwrap();
    assert_eq!(perf.spec.max_seats_per_account, None);
    assert!(serde_json::to_value(&perf).unwrap()["max_seats_per_account"].is_null());
    // Lifted at once for holds (this process's cached row is dropped).
    let a = account(90);
    store
        .hold(
            room,
            "p",
            1,
            a,
            &seats(&["A-1-1", "A-1-2", "A-1-3", "A-1-4"]),
            T0 + HOUR,
            T0,
        )
        .await
        .unwrap();
    s.max_seats_per_account = Some(1);
    store.put_performance(room, "p", &s, T0).await.unwrap();
    assert_eq!(
        store
            .hold(room, "p", 2, a, &seats(&["A-2-1"]), T0 + HOUR, T0)
            .await
            .unwrap_err(),
        BookingError::AccountLimit { max: 1 }
    );
}
