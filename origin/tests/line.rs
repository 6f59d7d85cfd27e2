//! The line's behaviour through the real router on the real Redis: admit at
//! once, the pre-queue, expiry, abandonment, leave, rejoin, pause and close.
//! The scenarios themselves live in `common/scenarios.rs`, shared with the
//! Redis Cluster test.

mod common;

use common::{redis, scenarios};

#[tokio::test]
async fn an_empty_room_with_free_capacity_admits_at_once() {
    let redis = redis();
    scenarios::an_empty_room_with_free_capacity_admits_at_once(redis.store.clone()).await;
}

#[tokio::test]
async fn cookies_are_secure_off_loopback() {
    let redis = redis();
    scenarios::cookies_are_secure_off_loopback(redis.store.clone()).await;
}

#[tokio::test]
async fn the_prequeue_draws_places_at_the_opening_and_later_joins_queue_behind() {
    let redis = redis();
    scenarios::the_prequeue_draws_places_at_the_opening_and_later_joins_queue_behind(
        redis.store.clone(),
    )
    .await;
}

#[tokio::test]
async fn an_ended_session_frees_its_slot_and_its_token_is_refused() {
    let redis = redis();
    scenarios::an_ended_session_frees_its_slot_and_its_token_is_refused(redis.store.clone()).await;
}

#[tokio::test]
async fn waiters_who_stop_polling_are_dropped_and_their_place_freed() {
    let redis = redis();
    scenarios::waiters_who_stop_polling_are_dropped_and_their_place_freed(redis.store.clone())
        .await;
}

#[tokio::test]
async fn leaving_frees_the_slot_or_the_place_at_once() {
    let redis = redis();
    scenarios::leaving_frees_the_slot_or_the_place_at_once(redis.store.clone()).await;
}

#[tokio::test]
async fn rejoining_with_a_valid_ticket_keeps_the_place() {
    let redis = redis();
    scenarios::rejoining_with_a_valid_ticket_keeps_the_place(redis.store.clone()).await;
}

#[tokio::test]
async fn pausing_stops_admissions_and_closing_takes_no_places() {
    let redis = redis();
    scenarios::pausing_stops_admissions_and_closing_takes_no_places(redis.store.clone()).await;
}

#[tokio::test]
async fn status_reports_an_eta_from_the_achieved_rate_and_paces_polls() {
    let redis = redis();
    scenarios::status_reports_an_eta_from_the_achieved_rate_and_paces_polls(redis.store.clone())
        .await;
}
