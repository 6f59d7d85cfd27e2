//! The embedded store and Redis are one behaviour: a randomized model test
//! drives both with the same sequence of operations and clock steps (join,
//! status, leave, tick, expiry and abandonment by stepping the clock,
//! settings changes, pause, resume, close, the sale signal, joins under a
//! per-address cap, the snapshots' observation with its polls, samples and
//! departures, batches of joins as one instance sends them, joins with an
//! account from a handful, so accounts meet their places again in line,
//! inside, after they ended and within one batch) and compares every
//! answer; at the end everyone leaves, and neither the cap nor the account
//! index may hold anything.
//!
//! Both stores run on a pinned clock (Redis scripts take it as their first
//! argument), so time is stepped, not slept. A failure prints the smallest
//! sequence that shows it, and proptest saves its seed beside this file so
//! the case reproduces (`PROPTEST_CASES=1000` runs a longer search).

use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::common::{redis_conn, redis_url, unique_prefix};
use origin::queue::memory::MemoryStore;
use origin::queue::redis::{RedisConfig, RedisStore};
use origin::queue::{
    JoinRequest, PlaceLimit, Proof, QueueStore, SaleSignal, SeatsLeft, StoreError, Watch,
};
use origin::room::{AccountHash, QueueingMethod, RoomId, RoomSettings, RoomState};
use proptest::prelude::*;

/// A fixed start instant (2027-01-15), so runs do not depend on the date.
const T0: u64 = 1_800_000_000_000;

/// Both stores' draw seed, so their pre-queues are drawn alike.
const SEED: [u8; 32] = [0x5e; 32];

#[derive(Clone, Debug)]
enum Op {
    /// Join; `again` picks a known visitor's sequence number to rejoin with.
    Join {
        again: Option<usize>,
        holder: Option<u8>,
        account: Option<u8>,
    },
    /// A batch of joins, as one instance's group of joins sends them.
    Joins(Vec<JoinSpec>),
    Status(usize),
    Leave(usize),
    SessionActive(usize),
    Tick,
    Advance(u64),
    Settings(Box<RoomSettings>),
    State(RoomState),
    /// The promoter's sale signal; some factors are out of range and must be
    /// refused by both.
    Sale(SaleSignal),
    Figures,
    /// The room's pre-queue draw as the draw route reads it.
    Draw,
    /// An instance's once-a-tick observation: these visitors polled; it
    /// last observed `since_back` ms ago.
    Observe {
        polled: Vec<usize>,
        since_back: u64,
        samples: bool,
    },
}

/// One join of a batch: `again`, holder and account as in [`Op::Join`],
/// and its challenge proof ([`proof_of`]).
type JoinSpec = (Option<usize>, Option<u8>, Option<u8>, Option<u8>);

fn any_join() -> impl Strategy<Value = JoinSpec> {
    (
        prop::option::weighted(0.2, 0usize..40),
        prop::option::weighted(0.2, 0u8..3),
        any_account(),
        prop::option::weighted(0.4, 0u8..5),
    )
}

/// Proof number `n` of the test: none, one of four solutions (so one is
/// often shown again, its place standing or ended), or a missing one.
fn proof_of(n: Option<u8>) -> Proof {
    match n {
        None => Proof::NotAsked,
        Some(4) => Proof::Missing,
        Some(k) => Proof::Solved {
            key: [k, 7, 7, 7, 7, 7, 7, k],
            // Far off (2100): both stores keep it through the test.
            expires_at_ms: 4_102_444_800_000,
        },
    }
}

/// A third of joins carry one of four accounts, so an account often finds
/// its place again (or finds it ended).
fn any_account() -> impl Strategy<Value = Option<u8>> {
    prop::option::weighted(0.35, 0u8..4)
}

/// The account hash of account number `n` of the test: the first two bytes
/// differ, so they fall in different buckets of the Redis index, except 3,
/// which shares 0's bucket.
fn account_of(n: Option<u8>) -> Option<AccountHash> {
    n.map(|n| match n {
        3 => AccountHash([0, 0, 9, 9, 9, 9, 9, 9]),
        n => AccountHash([n, n, 1, 2, 3, 4, 5, n]),
    })
}

/// The cap every capped join of the test holds its client to.
fn limit_of(holder: Option<u8>) -> Option<PlaceLimit> {
    holder.map(|h| PlaceLimit {
        holder: format!("client-{h}"),
        max: 2,
    })
}

fn any_sale() -> impl Strategy<Value = SaleSignal> {
    (
        prop_oneof![
            2 => Just(SeatsLeft::Available),
            1 => Just(SeatsLeft::NoneAvailable),
            1 => Just(SeatsLeft::SoldOut)
        ],
        // 0.3 and 0.7 have no exact binary form: the Redis store must
        // compute with the very same double.
        prop_oneof![
            3 => Just(1.0),
            2 => Just(0.5),
            2 => Just(0.3),
            1 => Just(0.7),
            1 => Just(0.05),
            1 => prop_oneof![Just(0.0), Just(1.5), Just(f64::NAN)]
        ],
    )
        .prop_map(|(seats, rate_factor)| SaleSignal { seats, rate_factor })
}

fn any_settings() -> impl Strategy<Value = RoomSettings> {
    (
        1u32..5,
        prop_oneof![Just(0.5), Just(1.0), Just(3.0), Just(50.0)],
        1u32..8,
        3u32..10,
        prop_oneof![
            3 => Just(QueueingMethod::Fifo),
            1 => Just(QueueingMethod::Passthrough),
            1 => Just(QueueingMethod::Reject)
        ],
        prop::option::of(2u64..12),
        prop::option::of(0u64..8_000),
    )
        .prop_map(
            |(capacity, rate, session, abandon, method, max_line, opens_in)| RoomSettings {
                capacity,
                admit_per_second: rate,
                session_seconds: session,
                abandon_seconds: abandon,
                method,
                max_line,
                opens_at: opens_in.map(|ms| {
                    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(T0 + ms) * 1_000_000)
                        .unwrap()
                }),
                windows: Vec::new(),
                entry_seconds: 60,
                max_session_addresses: 3,
                target_booking_p99_ms: None,
                ..RoomSettings::default()
            },
        )
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (
            prop::option::of(0usize..40),
            prop::option::of(0u8..3),
            any_account(),
        )
            .prop_map(|(again, holder, account)| Op::Join {
                again,
                holder,
                account,
            }),
        3 => prop::collection::vec(any_join(), 1..12).prop_map(Op::Joins),
        4 => (0usize..40).prop_map(Op::Status),
        1 => (0usize..40).prop_map(Op::Leave),
        1 => (0usize..40).prop_map(Op::SessionActive),
        4 => Just(Op::Tick),
        3 => prop_oneof![0u64..300, 300u64..3_000, 3_000u64..12_000].prop_map(Op::Advance),
        1 => any_settings().prop_map(|s| Op::Settings(Box::new(s))),
        1 => prop_oneof![Just(RoomState::Open), Just(RoomState::Paused), Just(RoomState::Closed)]
            .prop_map(Op::State),
        2 => any_sale().prop_map(Op::Sale),
        1 => Just(Op::Figures),
        1 => Just(Op::Draw),
        2 => (
            prop::collection::vec(0usize..40, 0..6),
            prop_oneof![Just(0u64), 0u64..5_000, Just(u64::MAX)],
            prop_oneof![3 => Just(true), 1 => Just(false)],
        )
            .prop_map(|(polled, since_back, samples)| Op::Observe {
                polled,
                since_back,
                samples,
            }),
    ]
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| tokio::runtime::Runtime::new().unwrap())
}

/// Runs `ops` on both stores; the first differing answer fails the case.
async fn same_answers(initial: RoomSettings, ops: Vec<Op>) -> Result<(), TestCaseError> {
    let clock = Arc::new(AtomicU64::new(T0));
    let prefix = unique_prefix();
    let redis: Arc<dyn QueueStore> = Arc::new(
        RedisStore::connect(&RedisConfig {
            url: redis_url(),
            prefix: prefix.clone(),
            timeout: Duration::from_secs(5),
            cluster: false,
        })
        .unwrap()
        .with_fixed_clock(clock.clone())
        .with_fixed_seed(SEED),
    );
    let memory: Arc<dyn QueueStore> =
        Arc::new(MemoryStore::with_fixed_clock(clock.clone()).with_fixed_seed(SEED));
    let _cleanup = crate::common::TestStore {
        store: redis.clone(),
        prefix: prefix.clone(),
        kind: crate::common::Store::Redis,
    };
    let room = RoomId::parse("parity").unwrap();
    let stores = [&redis, &memory];
    for s in stores {
        s.put_room(&room, &initial).await.unwrap();
    }
    let mut seqs: Vec<u64> = Vec::new();
    let pick = |seqs: &Vec<u64>, i: usize| seqs.get(i % seqs.len().max(1)).copied().unwrap_or(1);

    for (step, op) in ops.iter().enumerate() {
        let ctx = format!("step {step}: {op:?}");
        match op {
            Op::Join {
                again,
                holder,
                account,
            } => {
                let existing = again.map(|i| pick(&seqs, i));
                let limit = limit_of(*holder);
                // A join with an account is a batch of one; without, the
                // trait's own join.
                let (a, b) = match account_of(*account) {
                    None => (
                        redis.join(&room, existing, limit.as_ref()).await.unwrap(),
                        memory.join(&room, existing, limit.as_ref()).await.unwrap(),
                    ),
                    Some(account) => {
                        let one = [JoinRequest {
                            existing,
                            limit,
                            account: Some(account),
                            proof: Proof::NotAsked,
                        }];
                        let mut a = redis.join_many(&room, &one).await.unwrap();
                        let mut b = memory.join_many(&room, &one).await.unwrap();
                        prop_assert_eq!(a.len(), 1, "{}", ctx);
                        prop_assert_eq!(b.len(), 1, "{}", ctx);
                        (a.pop().unwrap(), b.pop().unwrap())
                    }
                };
                prop_assert_eq!(a, b, "{}", ctx);
                if let Some(seq) = a
                    .answer()
                    .and_then(|snap| snap.seq)
                    .filter(|s| !seqs.contains(s))
                {
                    seqs.push(seq);
                }
            }
            Op::Joins(joins) => {
                let requests: Vec<JoinRequest> = joins
                    .iter()
                    .map(|(again, holder, account, proof)| JoinRequest {
                        existing: again.map(|i| pick(&seqs, i)),
                        limit: limit_of(*holder),
                        account: account_of(*account),
                        proof: proof_of(*proof),
                    })
                    .collect();
                let a = redis.join_many(&room, &requests).await.unwrap();
                let b = memory.join_many(&room, &requests).await.unwrap();
                prop_assert_eq!(&a, &b, "{}", ctx);
                for seq in a
                    .iter()
                    .filter_map(|j| j.answer().and_then(|snap| snap.seq))
                {
                    if !seqs.contains(&seq) {
                        seqs.push(seq);
                    }
                }
            }
            Op::Status(i) => {
                let seq = pick(&seqs, *i);
                let a = redis.status(&room, seq).await.unwrap();
                let b = memory.status(&room, seq).await.unwrap();
                prop_assert_eq!(a, b, "{}", ctx);
            }
            Op::Leave(i) => {
                let seq = pick(&seqs, *i);
                let a = redis.leave(&room, seq).await.unwrap();
                let b = memory.leave(&room, seq).await.unwrap();
                prop_assert_eq!(a, b, "{}", ctx);
            }
            Op::SessionActive(i) => {
                let seq = pick(&seqs, *i);
                let a = redis.session_active(&room, seq).await.unwrap();
                let b = memory.session_active(&room, seq).await.unwrap();
                prop_assert_eq!(a, b, "{}", ctx);
            }
            Op::Tick => {
                let a = redis.tick(&room).await.unwrap();
                let b = memory.tick(&room).await.unwrap();
                prop_assert_eq!(a, b, "{}", ctx);
            }
            Op::Advance(ms) => {
                clock.fetch_add(*ms, Ordering::SeqCst);
            }
            Op::Settings(s) => {
                for store in stores {
                    store.put_room(&room, s).await.unwrap();
                }
            }
            Op::State(state) => {
                for store in stores {
                    store.set_state(&room, *state).await.unwrap();
                }
            }
            Op::Sale(sale) => {
                let a = redis.set_sale(&room, *sale).await;
                let b = memory.set_sale(&room, *sale).await;
                let refused = |r: &Result<(), StoreError>| match r {
                    Ok(()) => false,
                    Err(StoreError::Protocol(_)) => true,
                    Err(e) => panic!("{ctx}: {e}"),
                };
                prop_assert_eq!(refused(&a), refused(&b), "{}", ctx);
                let in_range = sale.rate_factor > 0.0 && sale.rate_factor <= 1.0;
                prop_assert_eq!(refused(&a), !in_range, "{}", ctx);
            }
            Op::Figures => {
                let a = redis.figures(&room).await.unwrap();
                let b = memory.figures(&room).await.unwrap();
                prop_assert_eq!(a, b, "{}", ctx);
            }
            Op::Draw => {
                let a = redis.draw(&room).await.unwrap();
                let b = memory.draw(&room).await.unwrap();
                prop_assert_eq!(a, b, "{}", ctx);
            }
            Op::Observe {
                polled,
                since_back,
                samples,
            } => {
                let now = clock.load(Ordering::SeqCst);
                let watch = Watch {
                    polled: polled.iter().map(|&i| pick(&seqs, i)).collect(),
                    since_ms: now.saturating_sub(*since_back),
                    samples: *samples,
                };
                let a = redis.observe(&room, &watch).await.unwrap();
                let b = memory.observe(&room, &watch).await.unwrap();
                prop_assert_eq!(a, b, "{}", ctx);
            }
        }
    }
    let a = redis.figures(&room).await.unwrap();
    let b = memory.figures(&room).await.unwrap();
    prop_assert_eq!(a, b, "final figures");

    // Everyone leaves: both lines are empty and the per-address cap holds
    // nothing for anyone.
    for &seq in &seqs {
        let a = redis.leave(&room, seq).await.unwrap();
        let b = memory.leave(&room, seq).await.unwrap();
        prop_assert_eq!(a, b, "leave {} at the end", seq);
    }
    let a = redis.figures(&room).await.unwrap();
    let b = memory.figures(&room).await.unwrap();
    prop_assert_eq!(&a, &b, "figures once everyone left");
    prop_assert_eq!(
        (
            a.waiting,
            a.active,
            a.capped_clients,
            a.capped_places,
            a.accounts
        ),
        (0, 0, 0, 0, 0),
        "nothing held once everyone left"
    );
    // And Redis holds nothing of the account index (an empty hash is no key).
    let mut conn = redis_conn().await;
    let left: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{prefix}wr:{{parity}}:acct*"))
        .query_async(&mut conn)
        .await
        .unwrap();
    prop_assert!(left.is_empty(), "account index left behind: {:?}", left);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 48,
        max_shrink_iters: 2_000,
        // Saved beside this file (parity.proptest-regressions) and replayed
        // first on every run, so a failure found once is checked forever.
        failure_persistence: Some(Box::new(
            proptest::test_runner::FileFailurePersistence::WithSource("proptest-regressions"),
        )),
        ..ProptestConfig::default()
    })]

    #[test]
    fn embedded_and_redis_stores_give_the_same_answers(
        initial in any_settings(),
        ops in prop::collection::vec(op(), 1..80),
    ) {
        runtime().block_on(same_answers(initial, ops))?;
    }
}
