//! Every room's recent past, in memory: the last [`SPAN_MS`] of figures at
//! one sample per [`RESOLUTION_MS`], in a ring of fixed size per room, for
//! the operator's console (`GET /admin/rooms/{room}/history`).
//!
//! Nothing here reads a store. The samples are the figures the origin reads
//! anyway: the metrics loop (`telemetry`) reads every room's figures each
//! second and hands them to [`History::record`], and the sale loop (`sale`)
//! hands over the seat counts it reads to decide admission
//! ([`History::note_seats`]). So the history costs no store read, and the
//! console costs nothing when nobody has it open.
//!
//! Memory is bounded: at most [`MAX_ROOMS`] rooms (more are not recorded)
//! of at most [`SAMPLES`] samples each, allocated once when the room is
//! first seen; a room that is gone from the store is dropped with its
//! history. Each origin instance keeps its own (the figures are the
//! store's, so instances agree on them).

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Mutex;

use booking::RoomSeats;
use queue::RoomFigures;
use room::{RoomId, RoomSettings, RoomState, unix_ms};

/// One sample per this many milliseconds (the first figures read in each
/// such slice of time).
pub const RESOLUTION_MS: u64 = 5_000;
/// How far back the history reaches.
pub const SPAN_MS: u64 = 30 * 60 * 1000;
/// Samples kept per room.
pub const SAMPLES: usize = (SPAN_MS / RESOLUTION_MS) as usize;
/// Most rooms recorded; rooms beyond are not (the console still shows
/// their live figures).
pub const MAX_ROOMS: usize = 500;

/// A room's seats, as the sale loop last counted them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Seats {
    /// Neither held nor booked.
    pub available: u32,
    /// In live holds.
    pub held: u32,
    /// Sold.
    pub booked: u32,
}

impl From<RoomSeats> for Seats {
    fn from(s: RoomSeats) -> Seats {
        let small = |n: u64| u32::try_from(n).unwrap_or(u32::MAX);
        Seats {
            available: small(s.available),
            held: small(s.held),
            booked: small(s.booked),
        }
    }
}

/// A room's figures at one instant. Counts are kept in 32 bits (saturating)
/// and rates in `f32`, so a room's ring stays small.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sample {
    /// When the figures were read (unix milliseconds).
    pub at_ms: u64,
    /// The room's state.
    pub state: RoomState,
    /// Everyone in line.
    pub waiting: u32,
    /// Visitors inside.
    pub active: u32,
    /// Most visitors inside at once (the scheduled window's when one runs).
    pub capacity: u32,
    /// Admissions per second achieved recently.
    pub admit_rate: f32,
    /// Admissions per second configured (the window's when one runs).
    pub admit_per_second: f32,
    /// Admitted since the room was created.
    pub admitted_total: u64,
    /// Waiters dropped for not polling since the room was created.
    pub abandoned_total: u64,
    /// How long the front of the line has waited; `None`: nobody waits.
    pub oldest_wait_seconds: Option<u32>,
    /// The room's seats when it has a sale.
    pub seats: Option<Seats>,
}

impl Sample {
    /// The sample of `figures` read at `now_ms`, with the seats last noted.
    pub fn new(now_ms: u64, f: &RoomFigures, seats: Option<Seats>) -> Sample {
        let small = |n: u64| u32::try_from(n).unwrap_or(u32::MAX);
        let settings = effective(&f.settings, now_ms);
        let rate = if f.admit_rate.is_finite() && f.admit_rate > 0.0 {
            f.admit_rate as f32
        } else {
            0.0
        };
        Sample {
            at_ms: now_ms,
            state: f.state,
            waiting: small(f.waiting),
            active: small(f.active),
            capacity: settings.capacity,
            admit_rate: rate,
            admit_per_second: settings.admit_per_second as f32,
            admitted_total: f.admitted_total,
            abandoned_total: f.abandoned_total,
            oldest_wait_seconds: f.oldest_wait_seconds.map(small),
            seats,
        }
    }
}

/// The settings in force at `now_ms`: a scheduled window's, if one runs.
fn effective(settings: &RoomSettings, now_ms: u64) -> RoomSettings {
    let now = i64::try_from(now_ms).unwrap_or(i64::MAX);
    settings
        .windows
        .iter()
        .find(|w| unix_ms(w.starts_at) <= now && now < unix_ms(w.ends_at))
        .map_or_else(|| settings.clone(), |w| settings.in_window(w))
}

/// One room's ring and the seats last noted.
struct Ring {
    samples: VecDeque<Sample>,
    seats: Option<Seats>,
}

impl Ring {
    fn new() -> Ring {
        Ring {
            samples: VecDeque::with_capacity(SAMPLES),
            seats: None,
        }
    }
}

/// Every room's recent figures. Shared by the loops that feed it and the
/// route that reads it; each call holds the lock briefly and never across
/// an await.
#[derive(Default)]
pub struct History {
    rooms: Mutex<HashMap<RoomId, Ring>>,
}

impl History {
    /// Keeps `figures`, read at `now_ms`, as the room's sample for this
    /// [`RESOLUTION_MS`] slice, unless it has one already; the oldest sample
    /// goes when the ring is full.
    pub fn record(&self, room: &RoomId, now_ms: u64, figures: &RoomFigures) {
        let Ok(mut rooms) = self.rooms.lock() else {
            return;
        };
        let Some(ring) = ring(&mut rooms, room) else {
            return;
        };
        if let Some(last) = ring.samples.back() {
            // A clock that went back would otherwise leave samples out of order.
            if now_ms / RESOLUTION_MS <= last.at_ms / RESOLUTION_MS {
                return;
            }
        }
        if ring.samples.len() == SAMPLES {
            ring.samples.pop_front();
        }
        let sample = Sample::new(now_ms, figures, ring.seats);
        ring.samples.push_back(sample);
    }

    /// Notes the room's seat counts (`None`: it sells nothing), which the
    /// next samples carry.
    pub fn note_seats(&self, room: &RoomId, seats: Option<RoomSeats>) {
        let Ok(mut rooms) = self.rooms.lock() else {
            return;
        };
        if let Some(ring) = ring(&mut rooms, room) {
            ring.seats = seats.map(Seats::from);
        }
    }

    /// The room's seat counts as last noted (the sale loop notes them on
    /// every pass); `None` when it sells nothing or is not recorded.
    pub fn seats(&self, room: &RoomId) -> Option<Seats> {
        self.rooms.lock().ok()?.get(room)?.seats
    }

    /// Forgets every room not in `rooms` (the store's list): a deleted
    /// room's history goes with it.
    pub fn retain(&self, rooms: &[RoomId]) {
        let listed: HashSet<&RoomId> = rooms.iter().collect();
        if let Ok(mut kept) = self.rooms.lock() {
            kept.retain(|room, _| listed.contains(room));
        }
    }

    /// The room's samples taken after `since_ms` and within [`SPAN_MS`] of
    /// `now_ms`, oldest first; `None` when the room is not recorded.
    pub fn samples(&self, room: &RoomId, since_ms: u64, now_ms: u64) -> Option<Vec<Sample>> {
        let rooms = self.rooms.lock().ok()?;
        let ring = rooms.get(room)?;
        let from = since_ms.max(now_ms.saturating_sub(SPAN_MS));
        Some(
            ring.samples
                .iter()
                .filter(|s| s.at_ms > from)
                .copied()
                .collect(),
        )
    }

    /// How many rooms are recorded.
    pub fn rooms(&self) -> usize {
        self.rooms.lock().map_or(0, |rooms| rooms.len())
    }

    /// The bytes the rings hold (their allocated capacity), which is what
    /// the bound is about.
    pub fn ring_bytes(&self) -> usize {
        self.rooms.lock().map_or(0, |rooms| {
            rooms
                .values()
                .map(|r| r.samples.capacity() * std::mem::size_of::<Sample>())
                .sum()
        })
    }
}

/// The room's ring, made when there is room for one more.
fn ring<'a>(rooms: &'a mut HashMap<RoomId, Ring>, room: &RoomId) -> Option<&'a mut Ring> {
    if !rooms.contains_key(room) && rooms.len() >= MAX_ROOMS {
        return None;
    }
    Some(rooms.entry(room.clone()).or_insert_with(Ring::new))
}

#[cfg(test)]
mod tests {
    use super::*;
    use queue::SaleSignal;

    fn figures(waiting: u64) -> RoomFigures {
        RoomFigures {
            settings: RoomSettings::default(),
            state: RoomState::Open,
            waiting,
            active: 3,
            admitted_total: 10,
            abandoned_total: 1,
            places_given: 0,
            admit_rate: 2.5,
            sale: SaleSignal::default(),
            oldest_wait_seconds: Some(4),
            capped_clients: 0,
            capped_places: 0,
            accounts: 0,
        }
    }

    fn id(s: &str) -> RoomId {
        RoomId::parse(s).unwrap()
    }

    #[test]
    fn one_sample_per_slice_carrying_the_seats() {
        let h = History::default();
        let r = id("r");
        h.record(&r, 10_000, &figures(1));
        h.record(&r, 14_999, &figures(2));
        h.note_seats(
            &r,
            Some(RoomSeats {
                available: 5,
                held: 1,
                booked: 2,
                total: 8,
            }),
        );
        h.record(&r, 15_000, &figures(3));
        h.record(&r, 9_000, &figures(4)); // the clock went back
        let s = h.samples(&r, 0, 15_000).unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!((s[0].waiting, s[1].waiting), (1, 3));
        assert_eq!(s[0].seats, None);
        assert_eq!(
            s[1].seats,
            Some(Seats {
                available: 5,
                held: 1,
                booked: 2
            })
        );
        assert_eq!(h.samples(&r, 10_000, 15_000).unwrap().len(), 1, "since");
        assert_eq!(h.samples(&id("other"), 0, 15_000), None);
    }

    #[test]
    fn the_seats_last_noted_are_there_between_samples() {
        let h = History::default();
        let r = id("r");
        assert_eq!(h.seats(&r), None, "never noted");
        let count = |held| RoomSeats {
            available: 8 - held,
            held,
            booked: 0,
            total: 8,
        };
        h.note_seats(&r, Some(count(1)));
        h.note_seats(&r, Some(count(3)));
        let live = h.seats(&r).expect("noted");
        assert_eq!(
            (live.available, live.held),
            (5, 3),
            "the last count, unsampled"
        );
        h.note_seats(&r, None);
        assert_eq!(h.seats(&r), None, "sells nothing now");
    }

    #[test]
    fn old_samples_fall_out_and_gone_rooms_are_dropped() {
        let h = History::default();
        let (a, b) = (id("a"), id("b"));
        let mut now = 0;
        for _ in 0..SAMPLES * 3 {
            now += RESOLUTION_MS;
            h.record(&a, now, &figures(1));
            h.record(&b, now, &figures(1));
        }
        let s = h.samples(&a, 0, now).unwrap();
        assert_eq!(s.len(), SAMPLES);
        assert!(s.first().unwrap().at_ms > now - SPAN_MS);
        // A room no longer sampled (the store is away) shows nothing stale.
        assert!(h.samples(&a, 0, now + SPAN_MS).unwrap().is_empty());
        h.retain(std::slice::from_ref(&b));
        assert_eq!(h.samples(&a, 0, now), None);
        assert_eq!(h.rooms(), 1);
    }

    #[test]
    fn a_ring_is_small() {
        let bytes = SAMPLES * std::mem::size_of::<Sample>();
        assert!(bytes <= 32 * 1024, "{bytes} bytes a room");
    }

    #[test]
    fn rooms_are_bounded() {
        let h = History::default();
        for n in 0..MAX_ROOMS + 10 {
            h.record(&id(&format!("room-{n}")), 5_000, &figures(1));
            h.note_seats(&id(&format!("seats-{n}")), None);
        }
        assert_eq!(h.rooms(), MAX_ROOMS);
    }
}
