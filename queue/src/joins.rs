//! Joins in groups: the joins one origin instance receives for one room are
//! sent to the store together, as one [`QueueStore::join_many`] (one script
//! call on Redis, one lock on the embedded store), rather than one round
//! trip each.
//!
//! A group commit: a join that finds nothing of its room at the store or
//! gathering leads a batch of its own, and yields to the scheduler once
//! before sending it, so the joins of the same burst (read in the same turn
//! of the scheduler) go with it rather than behind it (no timed wait when
//! traffic is light: a yield is microseconds). Joins that arrive while a
//! batch is at the store wait for it to come back and then go together, in
//! the order they arrived; none waits longer than the window (then its batch
//! goes even though another is still out), and a batch that reaches
//! [`MAX_JOIN_BATCH`] goes at once. The store gives each join its own member
//! from the one counter, in the batch's order, and exactly the answer it
//! would have got alone; a batch that fails fails each of its joins with the
//! same error. A window of zero turns batching off, and so does a store
//! with no round trip to share (the embedded one: measured, batching cost
//! its joins a tenth of their throughput and gained nothing).
//!
//! Batches of a room reach the store in the order they were taken, so the
//! order of members is the order of arrival across batches too: each takes
//! a turn when it is taken, and its call starts only once every earlier
//! turn's has (its first poll writes it to the store's connection, which
//! keeps the order). A batch taken by a full join or a leader goes from a
//! task of its own, which may run after a later batch sent at once by a
//! returning one; without turns that later batch took the lower members.
//! Not kept across an outage: a call's first poll writes nothing while the
//! connection is being made again, and one that finds Redis without the
//! script loads it and sends again, behind calls sent meanwhile; batches
//! in flight at such a moment may reach the store in another order.
//!
//! No queue rule lives here (the stores hold them), and nothing of HTTP.

use std::mem;
use std::pin::pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::Poll;
use std::time::Duration;

use tokio::sync::{Notify, oneshot};

use room::{RoomId, RoomMap};

use crate::store::{JoinRequest, Joined, QueueStore, StoreError};

/// Most joins in one batch: bounds how long one script holds Redis.
pub const MAX_JOIN_BATCH: usize = 128;

/// The window used unless configured (`--join-window-us`).
pub const DEFAULT_JOIN_WINDOW: Duration = Duration::from_millis(1);

type Reply = oneshot::Sender<Result<Joined, StoreError>>;

/// Gathers joins per room and sends them to the store in batches. Cheap to
/// clone; clones share the batches.
#[derive(Clone)]
pub struct Joins {
    shared: Arc<Shared>,
}

struct Shared {
    store: Arc<dyn QueueStore>,
    window: Duration,
    lanes: Mutex<Lanes>,
    batches: AtomicU64,
    joins: AtomicU64,
    alone: AtomicU64,
}

/// How many store calls carried how many joins, since start.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JoinStats {
    /// Store calls (batches, a lone join counting as one).
    pub batches: u64,
    /// Joins they carried.
    pub joins: u64,
    /// Calls that carried one join (each pays a whole script call).
    pub alone: u64,
}

impl JoinStats {
    /// The calls and joins between `earlier` and these.
    pub fn since(self, earlier: JoinStats) -> JoinStats {
        JoinStats {
            batches: self.batches.saturating_sub(earlier.batches),
            joins: self.joins.saturating_sub(earlier.joins),
            alone: self.alone.saturating_sub(earlier.alone),
        }
    }

    /// These and `other` together.
    pub fn plus(self, other: JoinStats) -> JoinStats {
        JoinStats {
            batches: self.batches + other.batches,
            joins: self.joins + other.joins,
            alone: self.alone + other.alone,
        }
    }
}

#[derive(Default)]
struct Lanes {
    by_room: RoomMap<Lane>,
    /// Names each batch as it starts gathering, so a window timer that
    /// fires after its batch went does nothing.
    next_batch: u64,
}

/// One room's joins: the batches at the store and the one gathering.
#[derive(Default)]
struct Lane {
    in_flight: usize,
    batch: u64,
    requests: Vec<JoinRequest>,
    replies: Vec<Reply>,
    /// Turns given to batches taken so far.
    taken: u64,
    /// Turns whose call has started (all below this one).
    started: u64,
    /// Wakes the batches waiting for their turn.
    turns: Arc<Notify>,
}

/// A batch taken from its lane, with its turn to go to the store.
struct Batch {
    requests: Vec<JoinRequest>,
    replies: Vec<Reply>,
    turn: u64,
}

impl Lane {
    fn take(&mut self) -> Batch {
        self.in_flight += 1;
        let turn = self.taken;
        self.taken += 1;
        Batch {
            requests: mem::take(&mut self.requests),
            replies: mem::take(&mut self.replies),
            turn,
        }
    }
}

/// What a join does once its room's lane is updated.
enum Step {
    /// Nothing of the room is at the store or gathering: this join leads
    /// the batch `u64`, sent after one yield to the scheduler.
    Lead(u64, oneshot::Receiver<Result<Joined, StoreError>>),
    /// The batch is full: send it from here, then read the answer.
    Send(Batch, oneshot::Receiver<Result<Joined, StoreError>>),
    /// Wait for the batch to be sent by whoever sends it.
    Wait(oneshot::Receiver<Result<Joined, StoreError>>),
}

impl Joins {
    /// Batches joins to `store` within `window` (zero: every join goes
    /// alone, as it always does on a store with no round trip to share).
    pub fn new(store: Arc<dyn QueueStore>, window: Duration) -> Joins {
        let window = if store.round_trips() {
            window
        } else {
            Duration::ZERO
        };
        Joins {
            shared: Arc::new(Shared {
                store,
                window,
                lanes: Mutex::new(Lanes::default()),
                batches: AtomicU64::new(0),
                joins: AtomicU64::new(0),
                alone: AtomicU64::new(0),
            }),
        }
    }

    /// Store calls and the joins they carried, since start.
    pub fn stats(&self) -> JoinStats {
        JoinStats {
            batches: self.shared.batches.load(Ordering::Relaxed),
            joins: self.shared.joins.load(Ordering::Relaxed),
            alone: self.shared.alone.load(Ordering::Relaxed),
        }
    }

    /// One join (its ticket's seq, draw, cap and account: [`JoinRequest`]),
    /// in a batch with the room's other joins; the answer
    /// [`QueueStore::join_many`] gives it.
    pub async fn join(&self, room: &RoomId, request: JoinRequest) -> Result<Joined, StoreError> {
        let shared = &self.shared;
        if shared.window.is_zero() {
            shared.count(1);
            let mut answers = shared
                .store
                .join_many(room, std::slice::from_ref(&request))
                .await?;
            return answers
                .pop()
                .ok_or_else(|| StoreError::Protocol("a batch of one join gave no answer".into()));
        }
        let step = {
            let mut lanes = shared.lock();
            let Lanes {
                by_room,
                next_batch,
            } = &mut *lanes;
            let lane = by_room.entry(room.clone()).or_default();
            let (tx, rx) = oneshot::channel();
            let lead = lane.in_flight == 0 && lane.requests.is_empty();
            if lane.requests.is_empty() {
                *next_batch += 1;
                lane.batch = *next_batch;
                if !lead {
                    self.start_timer(room.clone(), lane.batch);
                }
            }
            lane.requests.push(request);
            lane.replies.push(tx);
            if lane.requests.len() >= MAX_JOIN_BATCH {
                Step::Send(lane.take(), rx)
            } else if lead {
                Step::Lead(lane.batch, rx)
            } else {
                Step::Wait(rx)
            }
        };
        match step {
            Step::Lead(batch, rx) => {
                let leader = Leader {
                    shared: shared.clone(),
                    room: room.clone(),
                    batch,
                };
                tokio::task::yield_now().await;
                drop(leader); // sends the batch
                answer(rx).await
            }
            Step::Send(batch, rx) => {
                tokio::spawn(run(shared.clone(), room.clone(), batch));
                answer(rx).await
            }
            Step::Wait(rx) => answer(rx).await,
        }
    }

    /// Sends the batch `batch` of `room` once the window has passed, if it
    /// has not gone by then.
    fn start_timer(&self, room: RoomId, batch: u64) {
        let shared = self.shared.clone();
        tokio::spawn(async move {
            tokio::time::sleep(shared.window).await;
            if let Some(taken) = shared.take_gathered(&room, batch) {
                run(shared, room, taken).await;
            }
        });
    }
}

async fn answer(rx: oneshot::Receiver<Result<Joined, StoreError>>) -> Result<Joined, StoreError> {
    rx.await.unwrap_or_else(|_| {
        Err(StoreError::Protocol(
            "a batch of joins ended without an answer".into(),
        ))
    })
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Lanes> {
        // Nothing panics while the lock is held; a poisoned one still holds
        // consistent lanes.
        self.lanes.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn count(&self, joins: usize) {
        self.batches.fetch_add(1, Ordering::Relaxed);
        self.joins.fetch_add(joins as u64, Ordering::Relaxed);
        if joins == 1 {
            self.alone.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The batch `batch` of `room` if it is still gathering (it goes at its
    /// window's end, when full, or when its leader has yielded), now counted
    /// as at the store.
    fn take_gathered(&self, room: &RoomId, batch: u64) -> Option<Batch> {
        let mut lanes = self.lock();
        match lanes.by_room.get_mut(room) {
            Some(lane) if lane.batch == batch && !lane.requests.is_empty() => Some(lane.take()),
            _ => None,
        }
    }

    /// One batch of `room` came back (or was given up): the joins gathered
    /// meanwhile go next when `go_on`, or the lane is forgotten when
    /// nothing is left.
    fn finish(&self, room: &RoomId, go_on: bool) -> Option<Batch> {
        let mut lanes = self.lock();
        let lane = lanes.by_room.get_mut(room)?;
        lane.in_flight = lane.in_flight.saturating_sub(1);
        if go_on && !lane.requests.is_empty() {
            return Some(lane.take());
        }
        if lane.in_flight == 0 && lane.requests.is_empty() {
            lanes.by_room.remove(room);
        }
        None
    }

    /// Waits until every batch of `room` taken before turn `turn` has
    /// started its call.
    async fn wait_turn(&self, room: &RoomId, turn: u64) {
        // What wakes this turn, while an earlier one has not started.
        let earlier = |lanes: &Lanes| {
            let lane = lanes.by_room.get(room).filter(|lane| lane.started < turn)?;
            Some(lane.turns.clone())
        };
        loop {
            let Some(turns) = earlier(&self.lock()) else {
                return;
            };
            let mut notified = pin!(turns.notified());
            notified.as_mut().enable();
            // A turn that started between the check and listening notified
            // no one: look again.
            if earlier(&self.lock()).is_none() {
                return;
            }
            notified.await;
        }
    }

    /// Turn `turn` of `room` has started its call (or never will): the next
    /// may go.
    fn started(&self, room: &RoomId, turn: u64) {
        let mut lanes = self.lock();
        if let Some(lane) = lanes.by_room.get_mut(room)
            && lane.started <= turn
        {
            lane.started = turn + 1;
            lane.turns.notify_waiters();
        }
    }
}

/// A batch between its task's first run and coming back. Dropped before
/// its call started (a panic, or its task cancelled), it still passes its
/// turn on and leaves the lane, so the room's later batches do not wait for
/// it forever. Only a runtime shutting down drops such a task before it
/// runs (no guard then: nothing of the room runs afterwards) or while an
/// earlier turn still waits (the later ones then go first).
struct Flight<'a> {
    shared: &'a Shared,
    room: &'a RoomId,
    turn: u64,
    started: bool,
    landed: bool,
}

impl Flight<'_> {
    fn started(&mut self) {
        self.started = true;
        self.shared.started(self.room, self.turn);
    }

    fn land(&mut self) -> Option<Batch> {
        self.landed = true;
        self.shared.finish(self.room, true)
    }
}

impl Drop for Flight<'_> {
    fn drop(&mut self) {
        if !self.started {
            self.shared.started(self.room, self.turn);
        }
        if !self.landed {
            self.shared.finish(self.room, false);
        }
    }
}

/// Sends batches of `room` until nothing is gathered, each in its turn:
/// each answer to its caller, an error to each alike.
async fn run(shared: Arc<Shared>, room: RoomId, mut batch: Batch) {
    loop {
        let Batch {
            requests,
            replies,
            turn,
        } = batch;
        let mut flight = Flight {
            shared: &shared,
            room: &room,
            turn,
            started: false,
            landed: false,
        };
        shared.wait_turn(&room, turn).await;
        shared.count(requests.len());
        let mut call = pin!(shared.store.join_many(&room, &requests));
        // Its first poll writes the call to the store's connection; the
        // next turn may then go.
        let first = std::future::poll_fn(|cx| Poll::Ready(call.as_mut().poll(cx))).await;
        flight.started();
        let result = match first {
            Poll::Ready(result) => result,
            Poll::Pending => call.await,
        };
        match result {
            Ok(answers) => {
                let mut answers = answers.into_iter();
                for reply in replies {
                    let answer = answers.next().ok_or_else(|| {
                        StoreError::Protocol("a batch of joins gave too few answers".into())
                    });
                    // A caller that went away (its request cancelled) has
                    // its place all the same, as a lone join would.
                    let _ = reply.send(answer);
                }
            }
            Err(e) => {
                for reply in replies {
                    let _ = reply.send(Err(e.clone()));
                }
            }
        }
        match flight.land() {
            Some(next) => batch = next,
            None => return,
        }
    }
}

/// A batch's leader: sends the batch when dropped, after its yield or when
/// its request is cancelled during it (the joins gathered behind it must
/// not wait for a timer that was never started), unless it has gone already
/// (a full batch goes from its last join). From a task of its own, as a
/// timer's batch: a leader cancelled mid-call must not take the others'
/// answers with it.
struct Leader {
    shared: Arc<Shared>,
    room: RoomId,
    batch: u64,
}

impl Drop for Leader {
    fn drop(&mut self) {
        if let Ok(runtime) = tokio::runtime::Handle::try_current()
            && let Some(taken) = self.shared.take_gathered(&self.room, self.batch)
        {
            runtime.spawn(run(self.shared.clone(), self.room.clone(), taken));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::MemoryStore;
    use room::{RoomSettings, RoomState};

    /// A batch taken before another reaches the store before it, even when
    /// the task that sends it runs later (as a full batch's own task may,
    /// behind a later batch that a returning one sends at once): the later
    /// batch waits for its turn, and the members keep the order of arrival.
    #[tokio::test]
    async fn batches_reach_the_store_in_the_order_they_were_taken() {
        let store: Arc<dyn QueueStore> = Arc::new(MemoryStore::new());
        let room = RoomId::parse("turns").unwrap();
        store
            .put_room(&room, &RoomSettings::default())
            .await
            .unwrap();
        store.set_state(&room, RoomState::Paused).await.unwrap();
        let shared = Arc::new(Shared {
            store,
            window: Duration::from_secs(60),
            lanes: Mutex::default(),
            batches: AtomicU64::new(0),
            joins: AtomicU64::new(0),
            alone: AtomicU64::new(0),
        });
        // Two batches of three, taken in order as the lane takes them.
        let mut answers = Vec::new();
        let mut take = || {
            let mut lanes = shared.lock();
            let lane = lanes.by_room.entry(room.clone()).or_default();
            for _ in 0..3 {
                let (tx, rx) = oneshot::channel();
                lane.requests.push(JoinRequest::default());
                lane.replies.push(tx);
                answers.push(rx);
            }
            lane.take()
        };
        let (first, second) = (take(), take());
        // The second's task runs first, the first's only later.
        let later = tokio::spawn(run(shared.clone(), room.clone(), second));
        tokio::time::sleep(Duration::from_millis(50)).await;
        tokio::spawn(run(shared.clone(), room.clone(), first))
            .await
            .unwrap();
        later.await.unwrap();
        let mut seqs = Vec::new();
        for rx in answers {
            let joined = rx.await.unwrap().unwrap();
            seqs.push(joined.answer().unwrap().seq.unwrap());
        }
        assert!(seqs.is_sorted(), "members out of arrival order: {seqs:?}");
        assert!(shared.lock().by_room.is_empty(), "the lane is forgotten");
    }
}
