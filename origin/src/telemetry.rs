//! Metrics: the process-wide Prometheus recorder (`metrics` with
//! `metrics-exporter-prometheus`, which writes the exposition format), the
//! metric names, and the loop that refreshes the per-room gauges from the
//! store; and the binary's log filter. The HTTP side (the `/metrics` route
//! and the latency middleware) is in `http::metrics`; nothing here knows
//! HTTP.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use metrics::{Unit, counter, describe_counter, describe_gauge, describe_histogram, gauge};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use tokio_util::sync::CancellationToken;
use tracing_subscriber::EnvFilter;

use crate::history::History;
use crate::metric_names::{
    CONFIRMS, HELD_POLLS, HOLDS, HTTP_DURATION, JOINS_RATE_LIMITED, ROOM_ABANDONED, ROOM_ACTIVE,
    ROOM_ADMIT_RATE, ROOM_ADMITTED, ROOM_CAPACITY, ROOM_OLDEST_WAIT, ROOM_RATE_FACTOR, ROOM_STATE,
    ROOM_WAITING, SEATS, SESSION_RATE_LIMITED, SESSIONS_SHARED, STORE_UP,
};
use crate::sessions::Sessions;
use queue::{QueueStore, StoreError};
use room::clock::Clock;

/// The `origin` binary's log filter: `RUST_LOG` when set, else `info` with
/// the Redis client's own lines off (it logs every reconnection attempt,
/// many a second while Redis is away; the store reports outages itself,
/// once). The bench logs through it too, to pay what a deployed origin pays.
pub fn log_filter() -> EnvFilter {
    EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info,redis=off"))
}

/// Latency buckets in seconds: a join is about a millisecond on loopback
/// Redis; the slow end is the store timeout.
const LATENCY_BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
];

/// The recorder's handle, installed as the global recorder on first use.
/// Installing can only fail when something else installed a recorder first;
/// then this handle renders only what it records itself (nothing), and
/// start-up says so in the log.
pub fn handle() -> &'static PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE.get_or_init(|| {
        let builder = PrometheusBuilder::new()
            .set_buckets_for_metric(Matcher::Full(HTTP_DURATION.into()), LATENCY_BUCKETS)
            .unwrap_or_else(|_| PrometheusBuilder::new());
        let recorder = builder.build_recorder();
        let handle = recorder.handle();
        if let Err(e) = metrics::set_global_recorder(recorder) {
            tracing::warn!(error = %e, "another metrics recorder is installed; /metrics stays empty");
        }
        describe();
        handle
    })
}

fn describe() {
    describe_histogram!(
        HTTP_DURATION,
        Unit::Seconds,
        "Time from request to response, by matched route, method and status."
    );
    describe_gauge!(ROOM_WAITING, "Everyone in line, per room.");
    describe_gauge!(ROOM_ACTIVE, "Visitors inside now, per room.");
    describe_gauge!(
        ROOM_CAPACITY,
        "Most visitors inside at once (setting), per room."
    );
    describe_counter!(
        ROOM_ADMITTED,
        "Visitors admitted since the room was created."
    );
    describe_counter!(
        ROOM_ABANDONED,
        "Waiters dropped for not polling since the room was created."
    );
    describe_gauge!(
        ROOM_ADMIT_RATE,
        "Admissions per second actually achieved recently, per room."
    );
    describe_gauge!(
        ROOM_OLDEST_WAIT,
        Unit::Seconds,
        "How long the visitor at the front of the line has waited, per room."
    );
    describe_gauge!(
        ROOM_STATE,
        "1 for the room's state (open, paused, closed), else 0."
    );
    describe_gauge!(
        STORE_UP,
        "1 when the last refresh of room figures reached the store, else 0."
    );
    describe_counter!(
        JOINS_RATE_LIMITED,
        "Joins refused by the per-address join rate."
    );
    describe_counter!(
        SESSION_RATE_LIMITED,
        "Booking writes (holds, releases, confirms) refused by a session's allowance."
    );
    describe_counter!(
        SESSIONS_SHARED,
        "Sessions ended for being used from more client addresses than the room allows."
    );
    describe_gauge!(
        HELD_POLLS,
        "Status polls held now (Prefer: wait, while a sale is on)."
    );
    describe_gauge!(
        SEATS,
        "Seats of the room's performances by state (available, held, booked), per room."
    );
    describe_gauge!(
        ROOM_RATE_FACTOR,
        "Adaptive admission's factor on the admit rate (1: none), per room."
    );
    describe_counter!(HOLDS, "Holds made, per room.");
    describe_counter!(
        CONFIRMS,
        "Confirms answered by outcome (booked, declined, refused), per room."
    );
    // Series that start at zero rather than at their first event, so a
    // rate over them reads 0, not "no data".
    gauge!(HELD_POLLS).increment(0.0);
    counter!(JOINS_RATE_LIMITED).absolute(0);
    counter!(SESSION_RATE_LIMITED).absolute(0);
}

/// Reads every room's figures into the per-room gauges and the rooms'
/// history (the same read: the history costs no store call), and drops the
/// history of rooms that are gone.
pub async fn refresh(
    store: &dyn QueueStore,
    sessions: &Sessions,
    history: &History,
    now_ms: u64,
) -> Result<(), StoreError> {
    let rooms = store.rooms().await?;
    history.retain(&rooms);
    for room in rooms {
        let f = match store.figures(&room).await {
            Ok(f) => f,
            Err(StoreError::UnknownRoom) => continue,
            Err(e) => return Err(e),
        };
        sessions.learn(&room, &f.settings);
        history.record(&room, now_ms, &f);
        let id = room.to_string();
        gauge!(ROOM_WAITING, "room" => id.clone()).set(f.waiting as f64);
        gauge!(ROOM_ACTIVE, "room" => id.clone()).set(f.active as f64);
        gauge!(ROOM_CAPACITY, "room" => id.clone()).set(f64::from(f.settings.capacity));
        counter!(ROOM_ADMITTED, "room" => id.clone()).absolute(f.admitted_total);
        counter!(ROOM_ABANDONED, "room" => id.clone()).absolute(f.abandoned_total);
        let rate = if f.admit_rate.is_finite() {
            f.admit_rate
        } else {
            0.0
        };
        gauge!(ROOM_ADMIT_RATE, "room" => id.clone()).set(rate);
        gauge!(ROOM_OLDEST_WAIT, "room" => id.clone())
            .set(f.oldest_wait_seconds.unwrap_or(0) as f64);
        gauge!(ROOM_RATE_FACTOR, "room" => id.clone()).set(f.sale.rate_factor);
        // The per-room event counters from zero (`absolute` keeps a higher count).
        counter!(HOLDS, "room" => id.clone()).absolute(0);
        counter!(SESSIONS_SHARED, "room" => id.clone()).absolute(0);
        for outcome in ["booked", "declined", "refused"] {
            counter!(CONFIRMS, "room" => id.clone(), "outcome" => outcome).absolute(0);
        }
        for state in [
            room::RoomState::Open,
            room::RoomState::Paused,
            room::RoomState::Closed,
        ] {
            let on = if state == f.state { 1.0 } else { 0.0 };
            gauge!(ROOM_STATE, "room" => id.clone(), "state" => state.as_str()).set(on);
        }
    }
    gauge!(STORE_UP).set(1.0);
    Ok(())
}

/// Refreshes the room gauges and runs the recorder's upkeep every
/// `interval` until `cancel` fires. A failing store is logged when it starts
/// and stops failing, not on every round.
pub async fn run(
    store: Arc<dyn QueueStore>,
    sessions: Arc<Sessions>,
    history: Arc<History>,
    clock: Clock,
    interval: Duration,
    cancel: CancellationToken,
) {
    let handle = handle();
    let mut failing = false;
    loop {
        match refresh(store.as_ref(), &sessions, &history, clock.now_ms()).await {
            Ok(()) => {
                if failing {
                    tracing::info!("metrics: store reachable again");
                    failing = false;
                }
            }
            Err(e) => {
                if !failing {
                    tracing::warn!(error = %e, "metrics: cannot read room figures");
                    failing = true;
                }
                gauge!(STORE_UP).set(0.0);
            }
        }
        handle.run_upkeep();
        tokio::select! {
            () = cancel.cancelled() => break,
            () = tokio::time::sleep(interval) => {}
        }
    }
    tracing::info!("metrics refresh stopped");
}
