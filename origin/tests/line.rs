//! The line's behaviour through the real router on the real Redis: admit at
//! once, the pre-queue, expiry, abandonment, leave, rejoin, pause and close.
//! The scenarios themselves live in `common/scenarios.rs`, shared with the
//! Redis Cluster test.

mod common;

use common::{scenarios, test_store};

#[tokio::test]
async fn an_empty_room_with_free_capacity_admits_at_once() {
    let t = test_store();
    scenarios::an_empty_room_with_free_capacity_admits_at_once(t.store.clone()).await;
}

#[tokio::test]
async fn cookies_are_secure_off_loopback() {
    let t = test_store();
    scenarios::cookies_are_secure_off_loopback(t.store.clone()).await;
}

#[tokio::test]
async fn the_prequeue_draws_places_at_the_opening_and_later_joins_queue_behind() {
    let t = test_store();
    scenarios::the_prequeue_draws_places_at_the_opening_and_later_joins_queue_behind(
        t.store.clone(),
    )
    .await;
}

#[tokio::test]
async fn an_ended_session_frees_its_slot_and_its_token_is_refused() {
    let t = test_store();
    scenarios::an_ended_session_frees_its_slot_and_its_token_is_refused(t.store.clone()).await;
}

#[tokio::test]
async fn waiters_who_stop_polling_are_dropped_and_their_place_freed() {
    let t = test_store();
    scenarios::waiters_who_stop_polling_are_dropped_and_their_place_freed(t.store.clone()).await;
}

#[tokio::test]
async fn leaving_frees_the_slot_or_the_place_at_once() {
    let t = test_store();
    scenarios::leaving_frees_the_slot_or_the_place_at_once(t.store.clone()).await;
}

#[tokio::test]
async fn rejoining_with_a_valid_ticket_keeps_the_place() {
    let t = test_store();
    scenarios::rejoining_with_a_valid_ticket_keeps_the_place(t.store.clone()).await;
}

#[tokio::test]
async fn pausing_stops_admissions_and_closing_takes_no_places() {
    let t = test_store();
    scenarios::pausing_stops_admissions_and_closing_takes_no_places(t.store.clone()).await;
}

#[tokio::test]
async fn status_reports_an_eta_from_the_achieved_rate_and_paces_polls() {
    let t = test_store();
    scenarios::status_reports_an_eta_from_the_achieved_rate_and_paces_polls(t.store.clone()).await;
}
