//! The seat map as visitors load it: the layout, cached by its version,
//! and the state of every seat, which every hold, release and booking
//! changes (both kept in `map_state`).
//!
//! A state is read once for however many ask at that moment: loaders of a
//! performance queue on one lock, and a state read after a loader asked
//! answers it too, so loaders arriving while one read runs share the next.
//! Reading a state costs one query of the taken seats only (held, or
//! sold): a layout of 100,000 seats is never read row by row.

use std::sync::Arc;

use super::BookingStore;
use super::map_state::{Layout, MapState, SeatMapWork};
use super::perf_row::PerfRow;
use crate::error::BookingError;
use crate::model::{SeatMap, db_ms};

/// What a loader knows before any state is read: the performance and the
/// map's tag at its time.
pub struct MapTag {
    room: String,
    performance: String,
    pkey: i64,
    tag: String,
    now: i64,
    asked: u64,
}

impl MapTag {
    /// The map's tag now (its ETag).
    pub fn tag(&self) -> &str {
        &self.tag
    }
}

impl BookingStore {
    /// The performance's layout, cached by its version (a replacement of
    /// the performance that changes its sections makes a new one).
    pub async fn seat_layout(
        &self,
        room: &str,
        performance: &str,
    ) -> Result<Arc<Layout>, BookingError> {
        let perf = self.performance_row(room, performance).await?;
        self.layout_of(&perf)
    }

    fn layout_of(&self, perf: &PerfRow) -> Result<Arc<Layout>, BookingError> {
        let known = self
            .layouts
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .get(&perf.pkey)
            .filter(|l| l.is_of(perf))
            .cloned();
        if let Some(layout) = known {
            return Ok(layout);
        }
        let layout = Arc::new(Layout::new(perf)?);
        // One entry per performance (a performance keeps its key for good).
        self.layouts
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .insert(perf.pkey, layout.clone());
        Ok(layout)
    }

    /// The map's tag at `now_ms` (three small reads, no seat), for a
    /// conditional answer before any state is read.
    pub async fn seat_map_tag(
        &self,
        room: &str,
        performance: &str,
        now_ms: u64,
    ) -> Result<MapTag, BookingError> {
        let perf = self.performance_row(room, performance).await?;
        let now = db_ms(now_ms);
        let (tag, _) = self.tag_of(&perf, now).await?;
        Ok(MapTag {
            room: room.to_owned(),
            performance: performance.to_owned(),
            pkey: perf.pkey,
            tag,
            now,
            // Taken after the tag was read: a state read begun later sees
            // every change this tag saw, and any made since.
            asked: self.work.ask(),
        })
    }

    /// The seats' state for a loader that read `at`: the one in hand when
    /// it has that tag or was read after the loader asked, else read now,
    /// once, while the performance's other loaders wait for it.
    pub async fn seat_map_state(&self, at: &MapTag) -> Result<Arc<MapState>, BookingError> {
        let slot = {
            let mut slots = self
                .map_states
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            // Keyed by performances that exist (their rows were read).
            slots.entry(at.pkey).or_default().clone()
        };
        let mut current = slot.lock().await;
        if let Some(state) = current.as_ref()
            && state.answers(at.asked, &at.tag, at.now)
        {
            return Ok(state.clone());
        }
        let state = Arc::new(self.read_state(at).await?);
        *current = Some(state.clone());
        Ok(state)
    }

    /// Reads the performance (its layout may have changed), the tag, then
    /// the taken seats: the letters are at least as new as the tag.
    async fn read_state(&self, at: &MapTag) -> Result<MapState, BookingError> {
        let started = self.work.ask();
        self.work.count_read();
        let perf = self.performance_row(&at.room, &at.performance).await?;
        let layout = self.layout_of(&perf)?;
        let (tag, next_end) = self.tag_of(&perf, at.now).await?;
        let taken: Vec<(String, i64)> = sqlx::query_as(
            "SELECT seat, 1 FROM booking_seat_sales WHERE pkey = ? \
             UNION ALL \
             SELECT seat, 0 FROM booking_seats WHERE pkey = ? AND held_until > ?",
        )
        .bind(perf.pkey)
        .bind(perf.pkey)
        .bind(at.now)
        .fetch_all(&self.db.pool)
        .await?;
        Ok(MapState::new(
            tag,
            at.now,
            next_end,
            started,
            layout,
            &taken,
            self.work.clone(),
        ))
    }

    /// Every seat with its state at `now_ms`, in map order, from the same
    /// shared state the API answers from.
    pub async fn seats(
        &self,
        room: &str,
        performance: &str,
        now_ms: u64,
    ) -> Result<SeatMap, BookingError> {
        let at = self.seat_map_tag(room, performance, now_ms).await?;
        Ok(self.seat_map_state(&at).await?.seat_map())
    }

    /// A tag that changes whenever a seat's state may have changed: the
    /// change counter, plus the next moment a hold ends by time (which
    /// changes no row). Three small reads; no seat is read.
    pub async fn seats_tag(
        &self,
        room: &str,
        performance: &str,
        now_ms: u64,
    ) -> Result<String, BookingError> {
        Ok(self.seat_map_tag(room, performance, now_ms).await?.tag)
    }

    /// How much seat map work this store has done (a test hook).
    #[doc(hidden)]
    pub fn seat_map_work(&self) -> SeatMapWork {
        self.work.work()
    }
}
