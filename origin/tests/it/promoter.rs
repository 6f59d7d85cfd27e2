//! The promoter when one room fails and the others do not: a room whose
//! tick or observation fails (a reply too slow for its line, a key another
//! program wrote) is no outage of the store. The other rooms keep their
//! tick every interval; a backoff for all (growing to 5 s) would slow every
//! room's admission and, past half an abandon time between ticks, read as
//! an outage in which nobody is dropped.

use super::STORE;
use std::sync::Arc;
use std::time::Duration;

use crate::common::recording::Recording;
use crate::common::{make_room, test_store};
use origin::queue::QueueStore;
use origin::queue::promoter;
use origin::queue::snapshot::Snapshots;
use origin::room::RoomSettings;
use tokio_util::sync::CancellationToken;

/// The promoter's interval here.
const INTERVAL: Duration = Duration::from_millis(20);
/// How long it runs.
const RUN: Duration = Duration::from_millis(1500);

#[derive(Clone, Copy, Debug)]
enum Failing {
    Tick,
    Observation,
}

#[tokio::test]
async fn one_failing_room_does_not_slow_the_others() {
    for failing in [Failing::Tick, Failing::Observation] {
        let t = test_store(STORE);
        let store = Arc::new(Recording::new(t.store.clone()));
        let bad = make_room(store.as_ref(), "bad", RoomSettings::default()).await;
        let good = make_room(store.as_ref(), "good", RoomSettings::default()).await;
        match failing {
            Failing::Tick => store.fail_ticks_of(&bad),
            Failing::Observation => store.fail_observations_of(&bad),
        }
        let snapshots = Arc::new(Snapshots::new(INTERVAL));
        let cancel = CancellationToken::new();
        let run = tokio::spawn(promoter::run(
            store.clone() as Arc<dyn QueueStore>,
            snapshots.clone(),
            INTERVAL,
            cancel.clone(),
        ));
        // A window to count the good room's ticks in (a rate, no event).
        tokio::time::sleep(RUN).await;
        cancel.cancel();
        run.await.unwrap();
        // Every interval (75 in the run) less the steps' own time; a backoff
        // doubling from 20 ms gives 7.
        let ticks = store.ticks_of(&good);
        assert!(
            ticks >= 25,
            "{failing:?}: the good room ticked {ticks} times in {RUN:?}"
        );
        // And it was observed: its status snapshot is there.
        assert!(snapshots.watch(&good).is_some(), "{failing:?}");
    }
}
