//! A store that passes every call on to a real one and records what the
//! origin asked of it, for the tests that check what reaches the store
//! rather than what the store does: how often the promoter lists rooms
//! (`faults.rs`), which place limit each join carries (`limits.rs`), how
//! the promoter goes on when one room fails (`promoter.rs`), how many
//! statuses reach the store (`held_polls.rs`), and how many observations
//! of a room were made (`held_polls.rs`, `snapshots.rs`).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use origin::queue::{
    JoinRequest, Joined, PlaceLimit, QueueStore, RoomFigures, SaleSignal, Snapshot, StoreError,
    TickReport,
};
use origin::room::{RoomId, RoomSettings, RoomState};

/// Delegates to `inner`, counting `rooms()` calls and keeping each join's
/// place limit.
pub struct Recording {
    inner: Arc<dyn QueueStore>,
    room_lists: AtomicUsize,
    figures_reads: AtomicUsize,
    join_limits: Mutex<Vec<Option<PlaceLimit>>>,
    observe_delay_ms: AtomicU64,
    /// Rooms whose ticks, and rooms whose observations, fail.
    failing_ticks: Mutex<Vec<RoomId>>,
    failing_observations: Mutex<Vec<RoomId>>,
    /// Rooms whose observations are carried out, then fail (a reply that
    /// timed out after the store did the work).
    late_observations: Mutex<Vec<RoomId>>,
    ticks: Mutex<Vec<RoomId>>,
    /// The room of every observation the store has answered (or failed).
    observations: Mutex<Vec<RoomId>>,
    statuses: AtomicUsize,
    /// A session to end right after its next status is read.
    leave_after_status: Mutex<Option<(RoomId, u64)>>,
}

impl Recording {
    /// Records the calls made to `inner`.
    pub fn new(inner: Arc<dyn QueueStore>) -> Recording {
        Recording {
            inner,
            room_lists: AtomicUsize::new(0),
            figures_reads: AtomicUsize::new(0),
            join_limits: Mutex::new(Vec::new()),
            observe_delay_ms: AtomicU64::new(0),
            failing_ticks: Mutex::new(Vec::new()),
            failing_observations: Mutex::new(Vec::new()),
            late_observations: Mutex::new(Vec::new()),
            ticks: Mutex::new(Vec::new()),
            observations: Mutex::new(Vec::new()),
            statuses: AtomicUsize::new(0),
            leave_after_status: Mutex::new(None),
        }
    }

    /// Ends session `seq` of `room` in the store right after its next
    /// status is read: a session ending between a request's check of it and
    /// the request's own work.
    pub fn leave_after_status(&self, room: &RoomId, seq: u64) {
        *self.leave_after_status.lock().unwrap() = Some((room.clone(), seq));
    }

    /// How many times the room list was read (the promoter reads it first
    /// on every attempt).
    pub fn room_lists(&self) -> usize {
        self.room_lists.load(Ordering::SeqCst)
    }

    /// How many times a room's figures were read.
    pub fn figures_reads(&self) -> usize {
        self.figures_reads.load(Ordering::SeqCst)
    }

    /// Delays every observation's answer by `ms` from now on (a slow
    /// reply, or a stalled task: the store's figures are as old as that
    /// when they arrive).
    pub fn delay_observations(&self, ms: u64) {
        self.observe_delay_ms.store(ms, Ordering::SeqCst);
    }

    /// Every tick of `room` fails from now on, as an unreachable store's.
    pub fn fail_ticks_of(&self, room: &RoomId) {
        self.failing_ticks.lock().unwrap().push(room.clone());
    }

    /// Every observation of `room` fails from now on.
    pub fn fail_observations_of(&self, room: &RoomId) {
        self.failing_observations.lock().unwrap().push(room.clone());
    }

    /// Every observation of `room` is carried out by the store and then
    /// fails from now on, as a reply that timed out.
    pub fn observe_then_fail_of(&self, room: &RoomId) {
        self.late_observations.lock().unwrap().push(room.clone());
    }

    /// Observations of `room` succeed again.
    pub fn heal_observations_of(&self, room: &RoomId) {
        self.failing_observations
            .lock()
            .unwrap()
            .retain(|r| r != room);
    }

    /// How many status calls reached the store so far.
    pub fn statuses(&self) -> usize {
        self.statuses.load(Ordering::SeqCst)
    }

    /// How many ticks of `room` succeeded so far.
    pub fn ticks_of(&self, room: &RoomId) -> usize {
        self.ticks
            .lock()
            .unwrap()
            .iter()
            .filter(|r| *r == room)
            .count()
    }

    /// How many observations of `room` the store has carried out or
    /// failed so far (counted before any delay: the store's part is done).
    pub fn observations_of(&self, room: &RoomId) -> usize {
        self.observations
            .lock()
            .unwrap()
            .iter()
            .filter(|r| *r == room)
            .count()
    }

    /// The place limit of every join so far, in order.
    pub fn join_limits(&self) -> Vec<Option<PlaceLimit>> {
        self.join_limits.lock().unwrap().clone()
    }
}

#[async_trait]
impl QueueStore for Recording {
    async fn put_room(&self, room: &RoomId, s: &RoomSettings) -> Result<(), StoreError> {
        self.inner.put_room(room, s).await
    }
    async fn set_state(&self, room: &RoomId, state: RoomState) -> Result<(), StoreError> {
        self.inner.set_state(room, state).await
    }
    async fn set_sale(&self, room: &RoomId, sale: SaleSignal) -> Result<(), StoreError> {
        self.inner.set_sale(room, sale).await
    }
    async fn rooms(&self) -> Result<Vec<RoomId>, StoreError> {
        self.room_lists.fetch_add(1, Ordering::SeqCst);
        self.inner.rooms().await
    }
    async fn draw(&self, room: &RoomId) -> Result<Option<queue::DrawView>, StoreError> {
        self.inner.draw(room).await
    }
    async fn figures(&self, room: &RoomId) -> Result<RoomFigures, StoreError> {
        self.figures_reads.fetch_add(1, Ordering::SeqCst);
        self.inner.figures(room).await
    }
    async fn join_many(
        &self,
        room: &RoomId,
        joins: &[JoinRequest],
    ) -> Result<Vec<Joined>, StoreError> {
        self.join_limits
            .lock()
            .unwrap()
            .extend(joins.iter().map(|j| j.limit.clone()));
        self.inner.join_many(room, joins).await
    }
    async fn status(&self, room: &RoomId, seq: u64) -> Result<Snapshot, StoreError> {
        self.statuses.fetch_add(1, Ordering::SeqCst);
        let status = self.inner.status(room, seq).await;
        let armed = {
            let mut armed = self.leave_after_status.lock().unwrap();
            let hit = armed.as_ref().is_some_and(|(r, s)| r == room && *s == seq);
            if hit { armed.take() } else { None }
        };
        if armed.is_some() {
            self.inner.leave(room, seq).await?;
        }
        status
    }
    async fn leave(&self, room: &RoomId, seq: u64) -> Result<bool, StoreError> {
        self.inner.leave(room, seq).await
    }
    async fn session_active(&self, room: &RoomId, seq: u64) -> Result<bool, StoreError> {
        self.inner.session_active(room, seq).await
    }
    async fn tick(&self, room: &RoomId) -> Result<TickReport, StoreError> {
        if self.failing_ticks.lock().unwrap().contains(room) {
            return Err(StoreError::Unavailable("this room's tick fails".into()));
        }
        let report = self.inner.tick(room).await?;
        self.ticks.lock().unwrap().push(room.clone());
        Ok(report)
    }
    async fn observe(
        &self,
        room: &RoomId,
        watch: &origin::queue::Watch,
    ) -> Result<origin::queue::Observation, StoreError> {
        if self.failing_observations.lock().unwrap().contains(room) {
            self.observations.lock().unwrap().push(room.clone());
            return Err(StoreError::Unavailable(
                "this room's observation fails".into(),
            ));
        }
        let obs = self.inner.observe(room, watch).await;
        self.observations.lock().unwrap().push(room.clone());
        if self.late_observations.lock().unwrap().contains(room) {
            return Err(StoreError::Unavailable(
                "this room's observation was carried out, then timed out".into(),
            ));
        }
        let delay = self.observe_delay_ms.load(Ordering::SeqCst);
        if delay > 0 {
            // The scenario: a slow reply (`delay_observations`).
            tokio::time::sleep(std::time::Duration::from_millis(delay)).await;
        }
        obs
    }
    async fn ping(&self) -> Result<(), StoreError> {
        self.inner.ping().await
    }
}
