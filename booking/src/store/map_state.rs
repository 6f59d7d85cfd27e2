//! The seat map's cached parts, as the store keeps them: a performance's
//! layout (sections, rows, prices), fixed until the performance is
//! replaced and cached by its version, and a state of every seat (one
//! letter a seat, in layout order), each with its answers (JSON, and gzip
//! when asked) written once, on first use. The contract's full listing is
//! drawn from the two, with no seat row read. Below the store: its caches
//! hold these, and `seatmap` reads and shares them.

use std::collections::HashMap;
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use serde::Serialize;
use sha2::{Digest, Sha256};
use tokio::sync::OnceCell;
use utoipa::ToSchema;

use super::perf_row::{PerfRow, parse_seat_id};
use crate::error::BookingError;
use crate::model::{Seat, SeatMap, SeatState, SectionSpec};

/// Answers at least this long are compressed off the async threads.
const BLOCKING_GZIP: usize = 64 * 1024;

/// Letters of the compact state.
const AVAILABLE: u8 = b'a';
const HELD: u8 = b'h';
const BOOKED: u8 = b'b';

/// One performance's latest state, behind the lock its loaders queue on.
pub(crate) type StateSlot = Arc<tokio::sync::Mutex<Option<Arc<MapState>>>>;

/// How much seat map work the store did: the test hook behind "one read
/// and one rendering per state, however many load it".
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SeatMapWork {
    /// States read from the database.
    pub reads: u64,
    /// Answers written (a state's JSON or the full listing; gzip not counted).
    pub renders: u64,
}

/// The counters behind [`SeatMapWork`], and the order loaders ask in.
#[derive(Default)]
pub(crate) struct WorkCounters {
    reads: AtomicU64,
    renders: AtomicU64,
    asked: AtomicU64,
}

impl WorkCounters {
    /// A loader's number in the order loaders ask in.
    pub(crate) fn ask(&self) -> u64 {
        self.asked.fetch_add(1, Ordering::SeqCst)
    }

    /// Counts a state read from the database.
    pub(crate) fn count_read(&self) {
        self.reads.fetch_add(1, Ordering::Relaxed);
    }

    /// The counts so far.
    pub(crate) fn work(&self) -> SeatMapWork {
        SeatMapWork {
            reads: self.reads.load(Ordering::Relaxed),
            renders: self.renders.load(Ordering::Relaxed),
        }
    }
}

/// An answer as sent, and its gzip form, made on first ask.
struct Encoded {
    plain: Bytes,
    gzip: OnceCell<Bytes>,
}

impl Encoded {
    fn new(plain: Vec<u8>) -> Encoded {
        Encoded {
            plain: Bytes::from(plain),
            gzip: OnceCell::new(),
        }
    }

    async fn get(&self, gzip: bool) -> Result<Bytes, BookingError> {
        if !gzip {
            return Ok(self.plain.clone());
        }
        let plain = self.plain.clone();
        self.gzip
            .get_or_try_init(|| async move {
                if plain.len() < BLOCKING_GZIP {
                    return compress(&plain);
                }
                tokio::task::spawn_blocking(move || compress(&plain))
                    .await
                    .map_err(|_| BookingError::Internal)?
            })
            .await
            .cloned()
    }
}

/// Gzip at the fastest level: a state changes often, and its letters (or
/// the listing's repeated keys) shrink well even so.
fn compress(plain: &[u8]) -> Result<Bytes, BookingError> {
    let mut out = flate2::write::GzEncoder::new(
        Vec::with_capacity(plain.len() / 8 + 64),
        flate2::Compression::fast(),
    );
    out.write_all(plain)
        .and_then(|()| out.finish())
        .map(Bytes::from)
        .map_err(|e| {
            tracing::error!(error = %e, "booking: could not compress a seat map");
            BookingError::Internal
        })
}

/// A performance's layout: its sections in order, each seat's place in the
/// state's letters, and the layout answer.
pub struct Layout {
    tag: String,
    performance: String,
    sections: Vec<SectionSpec>,
    /// Each section's first index, rows and seats a row, by its name.
    starts: HashMap<String, (usize, usize, usize)>,
    total: usize,
    body: Encoded,
}

/// The layout answer: seat `{name}-{row}-{number}` of each section, rows
/// 1 to `rows` and numbers 1 to `seats_per_row`, in this order, is the
/// state's letter at the same index.
#[derive(Serialize, ToSchema)]
pub struct SeatLayout<'a> {
    /// The performance id.
    performance: &'a str,
    /// This layout's version: the `layout` a state names.
    layout: &'a str,
    /// Seats in all.
    seats: usize,
    /// In map order, with their prices (minor units).
    #[schema(value_type = Vec<SectionSpec>)]
    sections: &'a [SectionSpec],
}

/// The state answer: one letter a seat, in layout order.
#[derive(Serialize, ToSchema)]
pub struct SeatStates<'a> {
    /// The performance id.
    performance: &'a str,
    /// The version of the layout the letters follow: when it is not the
    /// layout the client has, the client loads the layout again.
    layout: &'a str,
    /// `a` available, `h` held, `b` booked: one per seat, in layout order.
    #[schema(pattern = "^[ahb]*$", example = "aahhab")]
    states: &'a str,
}

impl Layout {
    pub(crate) fn new(perf: &PerfRow) -> Result<Layout, BookingError> {
        let sections_json =
            serde_json::to_vec(&perf.spec.sections).map_err(|_| BookingError::Internal)?;
        let digest = Sha256::digest(&sections_json);
        let hash: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
        let tag = format!("l{}-{hash}", perf.pkey);
        let mut starts = HashMap::new();
        let mut total = 0usize;
        for s in &perf.spec.sections {
            starts.insert(
                s.name.clone(),
                (total, s.rows as usize, s.seats_per_row as usize),
            );
            total += s.rows as usize * s.seats_per_row as usize;
        }
        let body = serde_json::to_vec(&SeatLayout {
            performance: &perf.id,
            layout: &tag,
            seats: total,
            sections: &perf.spec.sections,
        })
        .map_err(|_| BookingError::Internal)?;
        Ok(Layout {
            tag,
            performance: perf.id.clone(),
            sections: perf.spec.sections.clone(),
            starts,
            total,
            body: Encoded::new(body),
        })
    }

    /// The layout's version (its ETag): the performance and a hash of its
    /// sections.
    pub fn tag(&self) -> &str {
        &self.tag
    }

    /// The layout answer (JSON), gzipped when `gzip`.
    pub async fn body(&self, gzip: bool) -> Result<Bytes, BookingError> {
        self.body.get(gzip).await
    }

    /// Whether this is the layout of `perf` as it is now.
    pub(crate) fn is_of(&self, perf: &PerfRow) -> bool {
        self.performance == perf.id && self.sections == perf.spec.sections
    }

    /// Where seat `id` is in the state's letters.
    fn index_of(&self, id: &str) -> Option<usize> {
        let (section, row, number) = parse_seat_id(id)?;
        let (start, rows, per_row) = *self.starts.get(section)?;
        let (row, number) = (row as usize, number as usize);
        (row <= rows && number <= per_row).then(|| start + (row - 1) * per_row + (number - 1))
    }

    /// Every seat in map order: (section, row, number).
    fn seats(&self) -> impl Iterator<Item = (&SectionSpec, u32, u32)> {
        self.sections.iter().flat_map(|s| {
            (1..=s.rows).flat_map(move |r| (1..=s.seats_per_row).map(move |n| (s, r, n)))
        })
    }
}

/// A performance's seats in one state, with its answers.
pub struct MapState {
    tag: String,
    /// The time the states are for, and the next moment a hold ends after
    /// it (0: none): the same letters hold for any time in between.
    now: i64,
    next_end: i64,
    /// Taken from the loaders' counter when the read began: a loader that
    /// asked before this read began may take its answer.
    started: u64,
    layout: Arc<Layout>,
    letters: Vec<u8>,
    state_body: OnceCell<Encoded>,
    map_body: OnceCell<Encoded>,
    work: Arc<WorkCounters>,
}

impl MapState {
    /// The state of `layout`'s seats at `now` (valid until `next_end`, 0:
    /// no hold ends), from the taken seats as (seat, 1 when sold): read by
    /// the loader numbered `started`, counted in `work` when rendered.
    pub(crate) fn new(
        tag: String,
        now: i64,
        next_end: i64,
        started: u64,
        layout: Arc<Layout>,
        taken: &[(String, i64)],
        work: Arc<WorkCounters>,
    ) -> MapState {
        let mut letters = vec![AVAILABLE; layout.total];
        for (seat, sold) in taken {
            if let Some(letter) = layout.index_of(seat).and_then(|i| letters.get_mut(i)) {
                // Sold wins over held, whatever order the rows came in.
                if *sold == 1 {
                    *letter = BOOKED;
                } else if *letter == AVAILABLE {
                    *letter = HELD;
                }
            }
        }
        MapState {
            tag,
            now,
            next_end,
            started,
            layout,
            letters,
            state_body: OnceCell::new(),
            map_body: OnceCell::new(),
            work,
        }
    }

    /// The state's tag (its ETag): changes whenever a seat's state may have.
    pub fn tag(&self) -> &str {
        &self.tag
    }

    /// The layout the letters follow.
    pub fn layout(&self) -> &Arc<Layout> {
        &self.layout
    }

    /// Whether these letters are the seats' states at `now`, for a loader
    /// that asked as number `asked`.
    pub(crate) fn answers(&self, asked: u64, tag: &str, now: i64) -> bool {
        self.tag == tag
            || (self.started > asked
                && now >= self.now
                && (self.next_end == 0 || now < self.next_end))
    }

    /// The state answer (JSON), gzipped when `gzip`; written once.
    pub async fn state_body(&self, gzip: bool) -> Result<Bytes, BookingError> {
        let encoded = self
            .state_body
            .get_or_try_init(|| async {
                self.work.renders.fetch_add(1, Ordering::Relaxed);
                let letters =
                    std::str::from_utf8(&self.letters).map_err(|_| BookingError::Internal)?;
                let body = serde_json::to_vec(&SeatStates {
                    performance: &self.layout.performance,
                    layout: &self.layout.tag,
                    states: letters,
                })
                .map_err(|_| BookingError::Internal)?;
                Ok::<_, BookingError>(Encoded::new(body))
            })
            .await?;
        encoded.get(gzip).await
    }

    /// The contract's full listing (JSON), gzipped when `gzip`; written
    /// once, off the async threads (a large map takes milliseconds).
    pub async fn map_body(self: &Arc<Self>, gzip: bool) -> Result<Bytes, BookingError> {
        let encoded = self
            .map_body
            .get_or_try_init(|| async {
                self.work.renders.fetch_add(1, Ordering::Relaxed);
                let me = self.clone();
                let body = tokio::task::spawn_blocking(move || render_map(&me.layout, &me.letters))
                    .await
                    .map_err(|_| BookingError::Internal)?;
                Ok::<_, BookingError>(Encoded::new(body))
            })
            .await?;
        encoded.get(gzip).await
    }

    /// The seats as the contract lists them.
    pub(crate) fn seat_map(&self) -> SeatMap {
        let seats = self
            .layout
            .seats()
            .zip(&self.letters)
            .map(|((s, row, number), letter)| Seat {
                id: format!("{}-{row}-{number}", s.name),
                section: s.name.clone(),
                row,
                number,
                price: s.price,
                state: state_of(*letter),
            })
            .collect();
        SeatMap {
            performance: self.layout.performance.clone(),
            seats,
            tag: self.tag.clone(),
        }
    }
}

fn state_of(letter: u8) -> SeatState {
    match letter {
        HELD => SeatState::Held,
        BOOKED => SeatState::Booked,
        _ => SeatState::Available,
    }
}

fn state_word(letter: u8) -> &'static [u8] {
    match letter {
        HELD => b"held",
        BOOKED => b"booked",
        _ => b"available",
    }
}

/// The contract's listing, `{"performance": ..., "seats": [...]}`, written
/// straight from the layout and letters: the bytes `serde_json` gives for
/// the [`SeatMap`], without a `Seat` (and its strings) per seat.
fn render_map(layout: &Layout, letters: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(layout.total * 96 + 64);
    let json = |out: &mut Vec<u8>, text: &str| {
        // Strings into a Vec cannot fail to serialise.
        let _ = serde_json::to_writer(&mut *out, text);
    };
    out.extend_from_slice(b"{\"performance\":");
    json(&mut out, &layout.performance);
    out.extend_from_slice(b",\"seats\":[");
    let mut numbers = itoa::Buffer::new();
    let mut i = 0usize;
    for s in &layout.sections {
        let mut name = Vec::new();
        json(&mut name, &s.name);
        // The name's JSON without its quotes: the id's first part.
        let inner = name
            .strip_prefix(b"\"")
            .and_then(|n| n.strip_suffix(b"\""))
            .unwrap_or(&name);
        let price = numbers.format(s.price).as_bytes().to_vec();
        for row in 1..=s.rows {
            let row_text = numbers.format(row).as_bytes().to_vec();
            for number in 1..=s.seats_per_row {
                if i > 0 {
                    out.push(b',');
                }
                let number_text = numbers.format(number);
                out.extend_from_slice(b"{\"id\":\"");
                out.extend_from_slice(inner);
                out.push(b'-');
                out.extend_from_slice(&row_text);
                out.push(b'-');
                out.extend_from_slice(number_text.as_bytes());
                out.extend_from_slice(b"\",\"section\":");
                out.extend_from_slice(&name);
                out.extend_from_slice(b",\"row\":");
                out.extend_from_slice(&row_text);
                out.extend_from_slice(b",\"number\":");
                out.extend_from_slice(number_text.as_bytes());
                out.extend_from_slice(b",\"price\":");
                out.extend_from_slice(&price);
                out.extend_from_slice(b",\"state\":\"");
                out.extend_from_slice(state_word(letters.get(i).copied().unwrap_or(AVAILABLE)));
                out.extend_from_slice(b"\"}");
                i += 1;
            }
        }
    }
    out.extend_from_slice(b"]}");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::PerformanceSpec;

    fn perf() -> PerfRow {
        let section = |name: &str, rows, seats, price| SectionSpec {
            name: name.into(),
            rows,
            seats_per_row: seats,
            price,
        };
        PerfRow {
            pkey: 3,
            id: "night".into(),
            spec: PerformanceSpec {
                title: "t".into(),
                starts_at: time::OffsetDateTime::from_unix_timestamp(1_900_000_000).unwrap(),
                hold_seconds: 420,
                max_seats_per_hold: 4,
                max_seats_per_account: None,
                sections: vec![section("B", 2, 3, 100), section("A1", 1, 12, 2500)],
            },
            total: 18,
        }
    }

    #[test]
    fn the_listing_is_what_serde_writes() {
        let layout = Layout::new(&perf()).unwrap();
        let mut letters = vec![AVAILABLE; layout.total];
        letters[1] = HELD;
        letters[17] = BOOKED;
        let state = MapState {
            tag: "t".into(),
            now: 0,
            next_end: 0,
            started: 0,
            layout: Arc::new(layout),
            letters,
            state_body: OnceCell::new(),
            map_body: OnceCell::new(),
            work: Arc::default(),
        };
        let by_hand = render_map(&state.layout, &state.letters);
        let map = state.seat_map();
        assert_eq!(map.seats[1].state, SeatState::Held);
        assert_eq!(map.seats[17].id, "A1-1-12");
        assert_eq!(map.seats[17].state, SeatState::Booked);
        assert_eq!(
            String::from_utf8(by_hand).unwrap(),
            serde_json::to_string(&map).unwrap()
        );
    }

    #[test]
    fn seat_ids_find_their_letter() {
        let layout = Layout::new(&perf()).unwrap();
        assert_eq!(layout.index_of("B-1-1"), Some(0));
        assert_eq!(layout.index_of("B-2-3"), Some(5));
        assert_eq!(layout.index_of("A1-1-1"), Some(6));
        assert_eq!(layout.index_of("A1-1-12"), Some(17));
        for outside in ["B-3-1", "B-1-4", "A1-2-1", "C-1-1", "nonsense"] {
            assert_eq!(layout.index_of(outside), None, "{outside}");
        }
        let ids: Vec<String> = layout
            .seats()
            .map(|(s, r, n)| format!("{}-{r}-{n}", s.name))
            .collect();
        for (i, id) in ids.iter().enumerate() {
            assert_eq!(layout.index_of(id), Some(i));
        }
    }

    #[test]
    fn a_layout_tag_follows_its_sections() {
        let mut p = perf();
        let a = Layout::new(&p).unwrap();
        assert_eq!(a.tag, Layout::new(&p).unwrap().tag);
        p.spec.sections[0].price = 101;
        assert_ne!(a.tag, Layout::new(&p).unwrap().tag);
        assert!(a.tag.starts_with("l3-"));
    }
}
