//! Booking's recent latency per room, which adaptive admission follows
//! (`sale`): the booking routes record the handler's own work for
//! verified sessions (`http::booking::track_latency`), the sale loop reads
//! each room's p99 over the last few seconds.
//!
//! What a client could do to steer it is bounded here: samples come only
//! from sessions of rooms that exist (the caller's check), each session
//! adds at most [`SAMPLES_PER_SECOND`] (a burst of [`SAMPLES_BURST`]), the
//! rooms kept are those the sale loop still lists, and never more than
//! [`MAX_ROOMS`]. Recording is a histogram increment under the room's own
//! lock, not a global one.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use crate::limits::limiter::SessionLimiter;
use room::RoomId;

/// How far back latency is measured.
pub const WINDOW: Duration = Duration::from_secs(5);
/// Fewest samples a p99 is taken from; fewer say nothing.
pub const MIN_SAMPLES: u64 = 5;
/// Samples one session may add a second, and its burst: a person's page
/// makes a few booking requests a second at most; a bot making more does
/// not get more say in the room's admission rate.
pub const SAMPLES_PER_SECOND: u32 = 4;
/// See [`SAMPLES_PER_SECOND`].
pub const SAMPLES_BURST: u32 = 8;
/// Most rooms followed at once (about 60 KB each): rooms are made by the
/// operator, so this is only a ceiling against a mistake.
pub const MAX_ROOMS: usize = 1_000;

/// Largest latency a histogram keeps (longer samples count as this): a
/// minute, past any timeout of the booking path.
const MAX_MICROS: u64 = 60_000_000;

/// One histogram per second of the window, reused as the window turns.
struct Window {
    /// (second since `Latency::started`, that second's samples)
    slots: Vec<(u64, Histogram<u32>)>,
}

impl Window {
    fn new() -> Option<Window> {
        let slots = (0..WINDOW.as_secs() + 1)
            .map(|_| Histogram::new_with_bounds(1, MAX_MICROS, 2).map(|h| (u64::MAX, h)))
            .collect::<Result<Vec<_>, _>>()
            .ok()?;
        Some(Window { slots })
    }

    fn record(&mut self, second: u64, micros: u64) {
        let len = self.slots.len() as u64;
        let Some((at, histogram)) = self.slots.get_mut((second % len) as usize) else {
            return;
        };
        if *at != second {
            histogram.reset();
            *at = second;
        }
        histogram.saturating_record(micros.clamp(1, MAX_MICROS));
    }

    /// The p99 of the seconds within the window before `second`, with
    /// how many samples it rests on.
    fn p99(&self, second: u64) -> Option<(Duration, u64)> {
        let oldest = second.saturating_sub(WINDOW.as_secs());
        let mut merged: Option<Histogram<u32>> = None;
        for (at, histogram) in &self.slots {
            if *at == u64::MAX || *at < oldest || *at > second {
                continue;
            }
            match &mut merged {
                Some(m) => m.add(histogram).ok()?,
                None => merged = Some(histogram.clone()),
            }
        }
        let merged = merged?;
        let count = merged.len();
        let micros = merged.value_at_quantile(0.99);
        Some((Duration::from_micros(micros), count))
    }
}

/// Booking's recent latency per room (see the module doc).
pub struct Latency {
    started: Instant,
    rooms: RwLock<HashMap<RoomId, Arc<Mutex<Window>>>>,
    sessions: SessionLimiter,
}

impl Default for Latency {
    fn default() -> Latency {
        Latency {
            started: Instant::now(),
            rooms: RwLock::default(),
            sessions: SessionLimiter::per_second(SAMPLES_PER_SECOND, SAMPLES_BURST),
        }
    }
}

impl Latency {
    /// Records one booking request of session `seq` in `room` whose own
    /// work took `took`. The caller has verified the session; a session
    /// past its share of samples is not recorded.
    pub fn record(&self, room: &RoomId, seq: u64, took: Duration) {
        if self.sessions.check(room, seq).is_err() {
            return;
        }
        let Some(window) = self.window(room) else {
            return;
        };
        let second = self.started.elapsed().as_secs();
        let micros = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        if let Ok(mut window) = window.lock() {
            window.record(second, micros);
        }
    }

    /// The room's window, made on its first sample (unless [`MAX_ROOMS`]
    /// are followed already).
    fn window(&self, room: &RoomId) -> Option<Arc<Mutex<Window>>> {
        if let Some(w) = self.rooms.read().ok()?.get(room) {
            return Some(w.clone());
        }
        let mut rooms = self.rooms.write().ok()?;
        if let Some(w) = rooms.get(room) {
            return Some(w.clone());
        }
        if rooms.len() >= MAX_ROOMS {
            return None;
        }
        let w = Arc::new(Mutex::new(Window::new()?));
        rooms.insert(room.clone(), w.clone());
        Some(w)
    }

    /// The p99 of the room's requests in the last [`WINDOW`], if there were
    /// at least [`MIN_SAMPLES`] of them.
    pub fn p99(&self, room: &RoomId) -> Option<Duration> {
        let window = self.rooms.read().ok()?.get(room)?.clone();
        let second = self.started.elapsed().as_secs();
        let (p99, count) = window.lock().ok()?.p99(second)?;
        (count >= MIN_SAMPLES).then_some(p99)
    }

    /// Forgets rooms that no longer exist and sessions quiet for a while;
    /// the sale loop calls it every pass.
    pub fn retain(&self, rooms: &[RoomId]) {
        if let Ok(mut followed) = self.rooms.write() {
            followed.retain(|room, _| rooms.contains(room));
        }
        self.sessions.prune();
    }

    /// How many rooms are followed now.
    pub fn rooms(&self) -> usize {
        self.rooms.read().map(|r| r.len()).unwrap_or(0)
    }

    /// How many sessions' sample allowances are kept now.
    pub fn sessions(&self) -> usize {
        self.sessions.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn room(id: &str) -> RoomId {
        RoomId::parse(id).unwrap()
    }

    #[test]
    fn p99_needs_enough_recent_samples() {
        let latency = Latency::default();
        let r = room("r");
        for (seq, ms) in (1..=4).enumerate() {
            latency.record(&r, seq as u64, Duration::from_millis(ms));
        }
        assert_eq!(latency.p99(&r), None);
        for (seq, ms) in (5..=100).enumerate() {
            latency.record(&r, 100 + seq as u64, Duration::from_millis(ms));
        }
        let p99 = latency.p99(&r).unwrap();
        // Two significant digits: within 1 % of 99 ms.
        assert!(p99.as_micros().abs_diff(99_000) <= 1_000, "{p99:?}");
    }

    #[test]
    fn one_session_has_a_bounded_say() {
        let latency = Latency::default();
        let r = room("r");
        // One session floods fast samples; four others are slow.
        for _ in 0..1_000 {
            latency.record(&r, 1, Duration::from_millis(1));
        }
        for seq in 2..=5 {
            latency.record(&r, seq, Duration::from_millis(900));
        }
        let p99 = latency.p99(&r).unwrap();
        assert!(p99 >= Duration::from_millis(890), "{p99:?}");
    }

    #[test]
    fn rooms_that_are_gone_are_forgotten_and_the_map_is_bounded() {
        let latency = Latency::default();
        let (a, b) = (room("a"), room("b"));
        latency.record(&a, 1, Duration::from_millis(1));
        latency.record(&b, 1, Duration::from_millis(1));
        assert_eq!(latency.rooms(), 2);
        latency.retain(std::slice::from_ref(&a));
        assert_eq!(latency.rooms(), 1);
        assert_eq!(latency.p99(&b), None);
    }
}
