//! Performances and their seat maps: validation, create or replace (never
//! taking away or repricing a seat in use), the counts, the map's tag and
//! the room's seat signal. Also the change counter every writer bumps. The
//! seat listing itself is `seatmap`'s. No hold or payment logic here.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use sqlx::AnyConnection;
use sqlx::{Any, AssertSqlSafe};
use time::OffsetDateTime;

use super::BookingStore;
use super::perf_row::{PERF_TTL, PerfRow, valid_section_name};
use crate::db::{marks, write_tx};
use crate::error::BookingError;
use crate::model::{
    MAX_SEATS_PER_PERFORMANCE, Performance, PerformanceSpec, PerformanceSummary, RoomSeats,
    SeatCounts, SectionSpec, check_id, db_ms,
};

/// Rows a multi-row INSERT carries at most (well under both databases'
/// placeholder limits).
const INSERT_BATCH: usize = 500;
/// How many rows each performance's counter is split over: every write
/// transaction holds one until it commits, so with 32 the concurrent holds
/// of the benchmark waited on each other thousands of times per run, with
/// 128 about two hundred (readers add up 128 small rows instead of 32).
const COUNTER_SHARDS: i64 = 128;
/// The most sections one map has.
const MAX_SECTIONS: usize = 100;
/// The most rows in a section, and seats in a row.
const MAX_ROWS: u32 = 1_000;
/// The highest price (minor units).
const MAX_PRICE: u64 = 1_000_000_000_000;
/// The most seat ids listed in a `SeatsInUse` answer.
const MAX_LISTED: usize = 50;

/// Checks a spec against the limits; the message names the field.
pub(crate) fn validate(spec: &PerformanceSpec) -> Result<(), BookingError> {
    let bad = |msg: &str| Err(BookingError::Invalid(msg.to_owned()));
    let title_len = spec.title.chars().count();
    if !(1..=200).contains(&title_len) || spec.title.chars().any(char::is_control) {
        return bad("title: 1 to 200 characters, no control characters");
    }
    if !(2000..=9999).contains(&spec.starts_at.year()) {
        return bad("starts_at: a date between the years 2000 and 9999");
    }
    if !(1..=86_400).contains(&spec.hold_seconds) {
        return bad("hold_seconds: 1 to 86400");
    }
    if !(1..=100).contains(&spec.max_seats_per_hold) {
        return bad("max_seats_per_hold: 1 to 100");
    }
    if let Some(max) = spec.max_seats_per_account
        && !(1..=MAX_SEATS_PER_PERFORMANCE).contains(&u64::from(max))
    {
        return bad("max_seats_per_account: 1 to 100000, or null for no limit");
    }
    if spec.sections.is_empty() || spec.sections.len() > MAX_SECTIONS {
        return bad("sections: 1 to 100 sections");
    }
    let mut names = HashSet::new();
    let mut total = 0u64;
    for s in &spec.sections {
        if !valid_section_name(&s.name) {
            return bad("sections[].name: 1 to 8 ASCII letters or digits");
        }
        if !names.insert(s.name.as_str()) {
            return bad("sections[].name: names must be unique");
        }
        if !(1..=MAX_ROWS).contains(&s.rows) || !(1..=MAX_ROWS).contains(&s.seats_per_row) {
            return bad("sections[]: rows and seats_per_row are 1 to 1000");
        }
        if s.price > MAX_PRICE {
            return bad("sections[].price: 0 to 10^12 minor units");
        }
        total += u64::from(s.rows) * u64::from(s.seats_per_row);
    }
    if total > MAX_SEATS_PER_PERFORMANCE {
        return bad("sections: at most 100000 seats per performance");
    }
    Ok(())
}

/// Every seat of the map: (id, section, row, number, price), in map order.
fn map_seats(sections: &[SectionSpec]) -> impl Iterator<Item = (String, &SectionSpec, u32, u32)> {
    sections.iter().flat_map(|s| {
        (1..=s.rows).flat_map(move |r| {
            (1..=s.seats_per_row).map(move |n| (format!("{}-{r}-{n}", s.name), s, r, n))
        })
    })
}

fn total_seats(sections: &[SectionSpec]) -> u64 {
    sections
        .iter()
        .map(|s| u64::from(s.rows) * u64::from(s.seats_per_row))
        .sum()
}

/// A seat's row as `replace_seats` checks it.
#[derive(sqlx::FromRow)]
struct StoredSeat {
    seat: String,
    price: i64,
    held_until: i64,
    booking_id: Option<String>,
}

/// A performance's row as stored, read by column name; [`perf_from`]
/// checks and converts it.
#[derive(sqlx::FromRow)]
struct StoredPerf {
    pkey: i64,
    performance: String,
    title: String,
    starts_at: i64,
    hold_ms: i64,
    max_seats_per_hold: i64,
    max_seats_per_account: Option<i64>,
    total_seats: i64,
    sections: String,
}

/// The columns of [`StoredPerf`].
const PERF_COLUMNS: &str = "pkey, performance, title, starts_at, hold_ms, max_seats_per_hold, \
                            max_seats_per_account, total_seats, sections";

fn perf_from(row: StoredPerf) -> Result<PerfRow, BookingError> {
    let StoredPerf {
        pkey,
        performance: id,
        title,
        starts_at,
        hold_ms,
        max_seats_per_hold: max,
        max_seats_per_account: per_account,
        total_seats: total,
        sections,
    } = row;
    let sections: Vec<SectionSpec> = serde_json::from_str(&sections).map_err(|e| {
        tracing::error!(error = %e, "booking: unreadable sections");
        BookingError::Internal
    })?;
    let starts_at = OffsetDateTime::from_unix_timestamp_nanos(i128::from(starts_at) * 1_000_000)
        .map_err(|_| BookingError::Internal)?;
    Ok(PerfRow {
        pkey,
        id,
        spec: PerformanceSpec {
            title,
            starts_at,
            hold_seconds: u32::try_from(hold_ms / 1000).unwrap_or(u32::MAX),
            max_seats_per_hold: u32::try_from(max).unwrap_or(0),
            max_seats_per_account: per_account.map(|m| u32::try_from(m).unwrap_or(0)),
            sections,
        },
        total: u64::try_from(total).unwrap_or(0),
    })
}

/// Adds one change (and `booked_delta` sold seats) to a counter shard of
/// `pkey`: every write transaction that changes a seat's state calls this,
/// last, so the shard's row lock is held only until commit.
pub(crate) async fn bump(
    conn: &mut AnyConnection,
    pkey: i64,
    booked_delta: i64,
) -> Result<(), BookingError> {
    let shard = i64::from(rand::random::<u8>()) % COUNTER_SHARDS;
    for shard in [shard, 0] {
        let done = sqlx::query(
            "UPDATE booking_counters SET changes = changes + 1, booked = booked + ? \
             WHERE pkey = ? AND shard = ?",
        )
        .bind(booked_delta)
        .bind(pkey)
        .bind(shard)
        .execute(&mut *conn)
        .await?;
        // A performance made when there were fewer shards has no row for
        // this one: shard 0 always exists.
        if done.rows_affected() == 1 {
            return Ok(());
        }
    }
    Err(BookingError::Internal)
}

impl BookingStore {
    /// Creates the performance or replaces its settings and seat map. A
    /// replacement that would remove or reprice a seat held or booked at
    /// `now_ms` fails with `SeatsInUse` and changes nothing.
    pub async fn put_performance(
        &self,
        room: &str,
        performance: &str,
        spec: &PerformanceSpec,
        now_ms: u64,
    ) -> Result<Performance, BookingError> {
        check_id(room, BookingError::Invalid("invalid room id".into()))?;
        check_id(
            performance,
            BookingError::Invalid("performance ids are 1 to 64 of a-z, 0-9 and -".into()),
        )?;
        validate(spec)?;
        let now = db_ms(now_ms);
        let done = write_tx!(self.db, |tx| self.put_in(
            tx.conn(),
            room,
            performance,
            spec,
            now
        ));
        self.forget_performance(room, performance);
        done?;
        self.get_performance(room, performance, now_ms).await
    }

    async fn put_in(
        &self,
        conn: &mut AnyConnection,
        room: &str,
        performance: &str,
        spec: &PerformanceSpec,
        now: i64,
    ) -> Result<(), BookingError> {
        let sections = serde_json::to_string(&spec.sections).map_err(|_| BookingError::Internal)?;
        let starts_at = i64::try_from(spec.starts_at.unix_timestamp_nanos() / 1_000_000)
            .map_err(|_| BookingError::Invalid("starts_at out of range".into()))?;
        let total = i64::try_from(total_seats(&spec.sections)).unwrap_or(i64::MAX);
        let sql = format!(
            "SELECT pkey FROM booking_performances WHERE room = ? AND performance = ?{}",
            self.db.for_update()
        );
        let existing: Option<(i64,)> = sqlx::query_as(AssertSqlSafe(sql))
            .bind(room)
            .bind(performance)
            .fetch_optional(&mut *conn)
            .await?;
        let pkey = match existing {
            Some((pkey,)) => {
                self.replace_seats(conn, pkey, spec, now).await?;
                sqlx::query(
                    "UPDATE booking_performances SET title = ?, starts_at = ?, hold_ms = ?, \
                     max_seats_per_hold = ?, max_seats_per_account = ?, total_seats = ?, \
                     sections = ? WHERE pkey = ?",
                )
                .bind(spec.title.as_str())
                .bind(starts_at)
                .bind(i64::from(spec.hold_seconds) * 1000)
                .bind(i64::from(spec.max_seats_per_hold))
                .bind(spec.max_seats_per_account.map(i64::from))
                .bind(total)
                .bind(sections)
                .bind(pkey)
                .execute(&mut *conn)
                .await?;
                pkey
            }
            None => {
                sqlx::query(
                    "INSERT INTO booking_performances (room, performance, title, starts_at, \
                     hold_ms, max_seats_per_hold, max_seats_per_account, total_seats, sections) \
                     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                )
                .bind(room)
                .bind(performance)
                .bind(spec.title.as_str())
                .bind(starts_at)
                .bind(i64::from(spec.hold_seconds) * 1000)
                .bind(i64::from(spec.max_seats_per_hold))
                .bind(spec.max_seats_per_account.map(i64::from))
                .bind(total)
                .bind(sections)
                .execute(&mut *conn)
                .await
                .map_err(|e| {
                    // Created concurrently (MySQL's READ COMMITTED takes no
                    // gap lock on the missing row): run again as a replace.
                    if crate::error::is_unique_violation(&e) {
                        BookingError::Busy
                    } else {
                        e.into()
                    }
                })?;
                // SQLite's last_insert_id is not carried through the Any
                // driver: read the key back, the same way on both.
                let (pkey,): (i64,) = sqlx::query_as(
                    "SELECT pkey FROM booking_performances WHERE room = ? AND performance = ?",
                )
                .bind(room)
                .bind(performance)
                .fetch_one(&mut *conn)
                .await?;
                let sql = format!(
                    "INSERT INTO booking_counters (pkey, shard, changes, booked) VALUES {}",
                    vec!["(?, ?, 0, 0)"; COUNTER_SHARDS as usize].join(", ")
                );
                let mut q = sqlx::query(AssertSqlSafe(sql));
                for shard in 0..COUNTER_SHARDS {
                    q = q.bind(pkey).bind(shard);
                }
                q.execute(&mut *conn).await?;
                let seats: Vec<_> = map_seats(&spec.sections).collect();
                insert_seats(conn, pkey, &seats).await?;
                pkey
            }
        };
        bump(conn, pkey, 0).await
    }

    /// Brings the seat rows of `pkey` to the new map: refuses (changing
    /// nothing) when a seat in use would go or change price, then deletes,
    /// reprices and adds.
    async fn replace_seats(
        &self,
        conn: &mut AnyConnection,
        pkey: i64,
        spec: &PerformanceSpec,
        now: i64,
    ) -> Result<(), BookingError> {
        let sql = format!(
            "SELECT seat, price, held_until, booking_id FROM booking_seats WHERE pkey = ?{}",
            self.db.for_update()
        );
        let current: Vec<StoredSeat> = sqlx::query_as(AssertSqlSafe(sql))
            .bind(pkey)
            .fetch_all(&mut *conn)
            .await?;
        let wanted: HashMap<String, u64> = map_seats(&spec.sections)
            .map(|(id, s, _, _)| (id, s.price))
            .collect();
        let mut in_use = Vec::new();
        let mut remove = Vec::new();
        let mut existing = HashSet::new();
        for StoredSeat {
            seat,
            price,
            held_until,
            booking_id,
        } in &current
        {
            let used = booking_id.is_some() || *held_until > now;
            let new_price = wanted
                .get(seat)
                .map(|p| i64::try_from(*p).unwrap_or(i64::MAX));
            match new_price {
                None if used => in_use.push(seat.clone()),
                Some(p) if used && p != *price => in_use.push(seat.clone()),
                None => remove.push(seat.clone()),
                Some(_) => {}
            }
            existing.insert(seat.as_str());
        }
        if !in_use.is_empty() {
            in_use.sort();
            in_use.truncate(MAX_LISTED);
            return Err(BookingError::SeatsInUse { seats: in_use });
        }
        for chunk in remove.chunks(INSERT_BATCH) {
            let sql = format!(
                "DELETE FROM booking_seats WHERE pkey = ? AND seat IN ({})",
                marks(chunk.len())
            );
            let mut q = sqlx::query(AssertSqlSafe(sql)).bind(pkey);
            for seat in chunk {
                q = q.bind(seat.as_str());
            }
            q.execute(&mut *conn).await?;
        }
        // Prices are per section; the check above guarantees no seat in use
        // is among the repriced ones.
        for s in &spec.sections {
            sqlx::query(
                "UPDATE booking_seats SET price = ? WHERE pkey = ? AND section = ? AND price <> ?",
            )
            .bind(i64::try_from(s.price).unwrap_or(i64::MAX))
            .bind(pkey)
            .bind(s.name.as_str())
            .bind(i64::try_from(s.price).unwrap_or(i64::MAX))
            .execute(&mut *conn)
            .await?;
        }
        let added: Vec<_> = map_seats(&spec.sections)
            .filter(|(id, ..)| !existing.contains(id.as_str()))
            .collect();
        insert_seats(conn, pkey, &added).await
    }

    /// The performance with its settings, map and counts at `now_ms`.
    pub async fn get_performance(
        &self,
        room: &str,
        performance: &str,
        now_ms: u64,
    ) -> Result<Performance, BookingError> {
        let perf = self.performance_row(room, performance).await?;
        let counts = self.counts(&perf, db_ms(now_ms)).await?;
        Ok(Performance {
            id: perf.id,
            spec: perf.spec,
            counts,
        })
    }

    /// The room's performances (by start, then id) with their counts.
    pub async fn list_performances(
        &self,
        room: &str,
        now_ms: u64,
    ) -> Result<Vec<PerformanceSummary>, BookingError> {
        check_id(room, BookingError::Invalid("invalid room id".into()))?;
        let sql = format!(
            "SELECT {PERF_COLUMNS} FROM booking_performances WHERE room = ? \
             ORDER BY starts_at, performance"
        );
        let rows: Vec<StoredPerf> = sqlx::query_as(AssertSqlSafe(sql))
            .bind(room)
            .fetch_all(&self.db.pool)
            .await?;
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            let perf = perf_from(row)?;
            let counts = self.counts(&perf, db_ms(now_ms)).await?;
            out.push(PerformanceSummary {
                id: perf.id,
                title: perf.spec.title,
                starts_at: perf.spec.starts_at,
                counts,
            });
        }
        Ok(out)
    }

    /// The performance's row, or `UnknownPerformance`.
    pub(crate) async fn performance_row(
        &self,
        room: &str,
        performance: &str,
    ) -> Result<PerfRow, BookingError> {
        if !token::is_valid_room(room) || !token::is_valid_room(performance) {
            return Err(BookingError::UnknownPerformance);
        }
        let sql = format!(
            "SELECT {PERF_COLUMNS} FROM booking_performances WHERE room = ? AND performance = ?"
        );
        let row: Option<StoredPerf> = sqlx::query_as(AssertSqlSafe(sql))
            .bind(room)
            .bind(performance)
            .fetch_optional(&self.db.pool)
            .await?;
        perf_from(row.ok_or(BookingError::UnknownPerformance)?)
    }

    /// The performance's row for a hold: from this process's cache when it
    /// was read less than [`PERF_TTL`] ago, else read (and cached). The
    /// flag says whether it came from the cache.
    pub(crate) async fn cached_performance_row(
        &self,
        room: &str,
        performance: &str,
    ) -> Result<(Arc<PerfRow>, bool), BookingError> {
        let key = (room.to_owned(), performance.to_owned());
        {
            let cache = self
                .perf_cache
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            if let Some((at, perf)) = cache.get(&key)
                && at.elapsed() < PERF_TTL
            {
                return Ok((perf.clone(), true));
            }
        }
        let read_at = std::time::Instant::now();
        let perf = Arc::new(self.performance_row(room, performance).await?);
        let mut cache = self
            .perf_cache
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        // Bounded: performances are few, but drop the expired ones now and then.
        if cache.len() >= 1024 {
            cache.retain(|_, (at, _)| at.elapsed() < PERF_TTL);
        }
        cache.insert(key, (read_at, perf.clone()));
        Ok((perf, false))
    }

    /// The id of the performance `pkey` (which never changes: cached).
    pub(crate) async fn performance_id(
        &self,
        conn: &mut AnyConnection,
        pkey: i64,
    ) -> Result<String, BookingError> {
        let known = self
            .perf_ids
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .get(&pkey)
            .cloned();
        if let Some(id) = known {
            return Ok(id);
        }
        let (id,): (String,) =
            sqlx::query_as("SELECT performance FROM booking_performances WHERE pkey = ?")
                .bind(pkey)
                .fetch_one(conn)
                .await?;
        self.perf_ids
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .insert(pkey, id.clone());
        Ok(id)
    }

    /// Drops the cached row of the performance (it changed, or may have).
    pub(crate) fn forget_performance(&self, room: &str, performance: &str) {
        self.perf_cache
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .remove(&(room.to_owned(), performance.to_owned()));
    }

    /// (changes, booked) of `pkey`, added up over the counter's shards.
    async fn counters(&self, pkey: i64) -> Result<(i64, i64), BookingError> {
        let rows: Vec<(i64, i64)> =
            sqlx::query_as("SELECT changes, booked FROM booking_counters WHERE pkey = ?")
                .bind(pkey)
                .fetch_all(&self.db.pool)
                .await?;
        Ok(rows
            .iter()
            .fold((0, 0), |(c, b), (dc, db)| (c + dc, b + db)))
    }

    /// Seats per state: booked from the counter, held by an index range
    /// (`held_until > now`), available the rest.
    async fn counts(&self, perf: &PerfRow, now: i64) -> Result<SeatCounts, BookingError> {
        let (_, booked) = self.counters(perf.pkey).await?;
        let (held,): (i64,) =
            sqlx::query_as("SELECT COUNT(*) FROM booking_seats WHERE pkey = ? AND held_until > ?")
                .bind(perf.pkey)
                .bind(now)
                .fetch_one(&self.db.pool)
                .await?;
        let booked = u64::try_from(booked).unwrap_or(0);
        let held = u64::try_from(held).unwrap_or(0);
        Ok(SeatCounts {
            available: perf.total.saturating_sub(booked + held),
            held,
            booked,
        })
    }

    /// The map's tag at `now` and the next moment a hold ends after it (0:
    /// none): the change counter and that moment, which changes no row but
    /// frees seats. Two small reads; no seat is read.
    pub(crate) async fn tag_of(
        &self,
        perf: &PerfRow,
        now: i64,
    ) -> Result<(String, i64), BookingError> {
        let (version, _) = self.counters(perf.pkey).await?;
        let (next_end,): (Option<i64>,) = sqlx::query_as(
            "SELECT MIN(held_until) FROM booking_seats WHERE pkey = ? AND held_until > ?",
        )
        .bind(perf.pkey)
        .bind(now)
        .fetch_one(&self.db.pool)
        .await?;
        let next_end = next_end.unwrap_or(0);
        Ok((format!("{}.{}.{}", perf.pkey, version, next_end), next_end))
    }

    /// The room's seats over all its performances at `now_ms`; `None` when
    /// the room sells nothing (no performance), which is no signal at all.
    pub async fn room_seats(
        &self,
        room: &str,
        now_ms: u64,
    ) -> Result<Option<RoomSeats>, BookingError> {
        if !token::is_valid_room(room) {
            return Ok(None);
        }
        let perfs: Vec<(i64, i64)> =
            sqlx::query_as("SELECT pkey, total_seats FROM booking_performances WHERE room = ?")
                .bind(room)
                .fetch_all(&self.db.pool)
                .await?;
        if perfs.is_empty() {
            return Ok(None);
        }
        let (held,): (i64,) = sqlx::query_as(
            "SELECT COUNT(*) FROM booking_seats s JOIN booking_performances p ON s.pkey = p.pkey \
             WHERE p.room = ? AND s.held_until > ?",
        )
        .bind(room)
        .bind(db_ms(now_ms))
        .fetch_one(&self.db.pool)
        .await?;
        let booked: Vec<(i64,)> = sqlx::query_as(
            "SELECT c.booked FROM booking_counters c JOIN booking_performances p \
             ON c.pkey = p.pkey WHERE p.room = ?",
        )
        .bind(room)
        .fetch_all(&self.db.pool)
        .await?;
        let total = perfs
            .iter()
            .map(|(_, t)| u64::try_from(*t).unwrap_or(0))
            .sum::<u64>();
        let booked = u64::try_from(booked.iter().map(|(b,)| b).sum::<i64>()).unwrap_or(0);
        let held = u64::try_from(held).unwrap_or(0);
        Ok(Some(RoomSeats {
            available: total.saturating_sub(booked + held),
            held,
            booked,
            total,
        }))
    }
}

/// Inserts seat rows in batches.
async fn insert_seats(
    conn: &mut AnyConnection,
    pkey: i64,
    seats: &[(String, &SectionSpec, u32, u32)],
) -> Result<(), BookingError> {
    for chunk in seats.chunks(INSERT_BATCH) {
        let sql = format!(
            "INSERT INTO booking_seats (pkey, seat, section, row_no, number, price) VALUES {}",
            vec!["(?, ?, ?, ?, ?, ?)"; chunk.len()].join(", ")
        );
        let mut q = sqlx::query::<Any>(AssertSqlSafe(sql));
        for (id, s, r, n) in chunk {
            q = q
                .bind(pkey)
                .bind(id.as_str())
                .bind(s.name.as_str())
                .bind(i64::from(*r))
                .bind(i64::from(*n))
                .bind(i64::try_from(s.price).unwrap_or(i64::MAX));
        }
        q.execute(&mut *conn).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(sections: Vec<SectionSpec>) -> PerformanceSpec {
        PerformanceSpec {
            title: "t".into(),
            starts_at: OffsetDateTime::from_unix_timestamp(1_900_000_000).unwrap(),
            hold_seconds: 420,
            max_seats_per_hold: 4,
            max_seats_per_account: None,
            sections,
        }
    }

    fn section(name: &str, rows: u32, seats: u32) -> SectionSpec {
        SectionSpec {
            name: name.into(),
            rows,
            seats_per_row: seats,
            price: 100,
        }
    }

    #[test]
    fn limits() {
        assert!(validate(&spec(vec![section("A", 10, 20)])).is_ok());
        assert!(validate(&spec(vec![])).is_err());
        assert!(validate(&spec(vec![section("A", 1, 1), section("A", 1, 1)])).is_err());
        assert!(validate(&spec(vec![section("A-B", 1, 1)])).is_err());
        assert!(validate(&spec(vec![section("A", 0, 1)])).is_err());
        assert!(validate(&spec(vec![section("A", 1000, 100)])).is_ok());
        assert!(validate(&spec(vec![section("A", 1000, 101)])).is_err());
        let mut s = spec(vec![section("A", 1, 1)]);
        s.sections[0].price = MAX_PRICE + 1;
        assert!(validate(&s).is_err());
        s.sections[0].price = 0;
        assert!(validate(&s).is_ok());
        for (max, ok) in [(None, true), (Some(1), true), (Some(100_000), true)] {
            s.max_seats_per_account = max;
            assert_eq!(validate(&s).is_ok(), ok, "{max:?}");
        }
        for max in [Some(0), Some(100_001), Some(u32::MAX)] {
            s.max_seats_per_account = max;
            assert!(validate(&s).is_err(), "{max:?}");
        }
        s.max_seats_per_account = None;
        s.title = String::new();
        assert!(validate(&s).is_err());
    }

    #[test]
    fn map_order_and_prices() {
        let perf = PerfRow {
            pkey: 1,
            id: "p".into(),
            spec: spec(vec![section("B", 2, 2), section("A", 1, 3)]),
            total: 7,
        };
        let ids: Vec<String> = map_seats(&perf.spec.sections).map(|(id, ..)| id).collect();
        assert_eq!(
            ids,
            [
                "B-1-1", "B-1-2", "B-2-1", "B-2-2", "A-1-1", "A-1-2", "A-1-3"
            ]
        );
        assert_eq!(perf.price_of("A-1-3"), Some(100));
        assert_eq!(perf.price_of("A-2-1"), None);
        assert_eq!(perf.price_of("C-1-1"), None);
    }
}
