//! The line's behaviour through the real router on the suite's store: admit
//! at once, the pre-queue, expiry, abandonment, leave, rejoin, pause and
//! close. The scenarios themselves live in `common/scenarios.rs`, shared
//! with the Redis Cluster test; this file runs each as a test of its own.

use super::STORE;
use crate::common::{scenarios, test_store};

/// One test per scenario in the list, each on a fresh store.
macro_rules! a_test_each {
    ($($name:ident => $room:literal),* $(,)?) => {
        $(
            #[tokio::test]
            async fn $name() {
                let t = test_store(STORE);
                scenarios::$name(t.store.clone(), $room).await;
            }
        )*
    };
}

scenarios::every_scenario!(a_test_each);
