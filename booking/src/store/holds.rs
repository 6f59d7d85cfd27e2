//! Holds: claiming seats all or nothing, releasing them, and ending a
//! session's holds. A claim is one conditional `UPDATE` of the wanted seats
//! (free: not booked and `held_until <= now`), in sorted seat order so
//! overlapping claims lock in the same order; anything short of every seat
//! rolls back. Payment and bookings live in `confirm`.

use room::AccountHash;
use sqlx::AnyConnection;
use sqlx::AssertSqlSafe;

use super::perf_row::PerfRow;
use super::performances::bump;
use crate::db::{marks, write_tx};

use super::BookingStore;
use crate::error::BookingError;
use crate::model::{Hold, account_key, check_id, db_ms, is_uuid, new_id, visitor_key};

/// A hold's row, as the writers that end it need it.
pub(crate) struct HoldRow {
    pub(crate) hold_id: String,
    pub(crate) pkey: i64,
    pub(crate) visitor: String,
    pub(crate) seats: Vec<String>,
    pub(crate) total: i64,
    pub(crate) state: String,
    pub(crate) expires_at: i64,
    pub(crate) paying_until: i64,
}

/// A hold's row as stored (its seats still joined), read by column name.
#[derive(sqlx::FromRow)]
pub(crate) struct StoredHold {
    hold_id: String,
    pkey: i64,
    visitor: String,
    seats: String,
    total: i64,
    state: String,
    expires_at: i64,
    paying_until: i64,
}

/// The columns of [`StoredHold`].
pub(crate) const HOLD_COLUMNS: &str =
    "hold_id, pkey, visitor, seats, total, state, expires_at, paying_until";

impl From<StoredHold> for HoldRow {
    fn from(r: StoredHold) -> HoldRow {
        HoldRow {
            hold_id: r.hold_id,
            pkey: r.pkey,
            visitor: r.visitor,
            seats: split_seats(&r.seats),
            total: r.total,
            state: r.state,
            expires_at: r.expires_at,
            paying_until: r.paying_until,
        }
    }
}

/// The stored form of a seat list is its ids joined by commas.
pub(crate) fn split_seats(text: &str) -> Vec<String> {
    text.split(',')
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Hold states in the database.
pub(crate) mod state {
    pub(crate) const HELD: &str = "held";
    pub(crate) const PAYING: &str = "paying";
    pub(crate) const CONFIRMED: &str = "confirmed";
    pub(crate) const RELEASED: &str = "released";
    pub(crate) const EXPIRED: &str = "expired";
}

/// The queue session a hold is made in: its sequence number (`None`:
/// outside any session) and when it ends (unix ms), which ends the hold too.
#[derive(Clone, Copy, Debug)]
pub struct Session {
    /// The session's (the ticket's) sequence number in its room.
    pub seq: Option<u64>,
    /// When the session ends.
    pub ends_ms: u64,
}

/// Who a hold is for: the visitor (its id in the database's text form) and,
/// when identified, its account's.
#[derive(Clone, Copy)]
struct Holder<'a> {
    visitor: &'a str,
    account: Option<&'a str>,
}

impl BookingStore {
    /// Holds `seats` of the performance for `visitor`, all or nothing, until
    /// `hold_seconds` from `now_ms` or `session_ends_ms`, whichever is first.
    /// A seat whose hold has ended counts as free, sweeper or not.
    ///
    /// `account` is the visitor's account when it is identified: the hold
    /// (and the booking it becomes) records it, and where the performance
    /// has a `max_seats_per_account`, a hold that would take the account
    /// past it is `AccountLimit`, with nothing held. `None` is counted
    /// against no limit and costs no extra query.
    #[allow(clippy::too_many_arguments)]
    pub async fn hold(
        &self,
        room: &str,
        performance: &str,
        visitor: u128,
        account: Option<AccountHash>,
        seats: &[String],
        session_ends_ms: u64,
        now_ms: u64,
    ) -> Result<Hold, BookingError> {
        let session = Session {
            seq: None,
            ends_ms: session_ends_ms,
        };
        self.hold_in_session(room, performance, visitor, account, seats, session, now_ms)
            .await
    }

    /// [`BookingStore::hold`], made in the queue session `session.seq`: a
    /// purchase of the hold that recovery finishes ends that session
    /// ([`BookingStore::take_booked_sessions`]), as a confirm would.
    #[allow(clippy::too_many_arguments)]
    pub async fn hold_in_session(
        &self,
        room: &str,
        performance: &str,
        visitor: u128,
        account: Option<AccountHash>,
        seats: &[String],
        session: Session,
        now_ms: u64,
    ) -> Result<Hold, BookingError> {
        let visitor = visitor_key(visitor);
        let account = account.map(account_key);
        let holder = Holder {
            visitor: &visitor,
            account: account.as_deref(),
        };
        let (mut perf, mut cached) = self.cached_performance_row(room, performance).await?;
        loop {
            let held = self
                .hold_with(&perf, room, holder, seats, session, now_ms)
                .await;
            match held {
                // A refusal that rests on the performance's settings, or a
                // claim that matched fewer seats with none of them taken
                // (a seat gone or repriced): with a cached row, read it
                // again and decide on that.
                Err(ref e) if cached && rests_on_perf(e) => {
                    self.forget_performance(room, performance);
                    (perf, cached) = self.cached_performance_row(room, performance).await?;
                }
                // No seat taken, yet not all claimed: freed again between
                // the two statements; report them all.
                Err(BookingError::SeatUnavailable { seats: taken }) if taken.is_empty() => {
                    let mut all = seats.to_vec();
                    all.sort();
                    return Err(BookingError::SeatUnavailable { seats: all });
                }
                other => return other,
            }
        }
    }

    async fn hold_with(
        &self,
        perf: &PerfRow,
        room: &str,
        holder: Holder<'_>,
        seats: &[String],
        session: Session,
        now_ms: u64,
    ) -> Result<Hold, BookingError> {
        let session_ends_ms = session.ends_ms;
        if seats.is_empty() {
            return Err(BookingError::NoSeats);
        }
        if seats.len() > perf.spec.max_seats_per_hold as usize {
            return Err(BookingError::TooManySeats {
                max: perf.spec.max_seats_per_hold,
            });
        }
        let mut wanted = seats.to_vec();
        wanted.sort();
        wanted.dedup();
        if wanted.len() != seats.len() {
            return Err(BookingError::Invalid("a seat is listed twice".into()));
        }
        let unknown: Vec<String> = wanted
            .iter()
            .filter(|s| perf.price_of(s).is_none())
            .cloned()
            .collect();
        if !unknown.is_empty() {
            return Err(BookingError::UnknownSeat(unknown));
        }
        let total: u64 = wanted.iter().filter_map(|s| perf.price_of(s)).sum();
        let expires_at = now_ms.saturating_add(perf.hold_ms()).min(session_ends_ms);
        if expires_at <= now_ms {
            return Err(BookingError::SessionEnded);
        }
        let now = db_ms(now_ms);
        // A plain read first: the many losers of a popular seat learn it
        // here without taking any lock.
        let taken =
            taken_seats(&mut *self.db.pool.acquire().await?, perf.pkey, &wanted, now).await?;
        if !taken.is_empty() {
            return Err(BookingError::SeatUnavailable { seats: taken });
        }
        let hold = Hold {
            hold_id: new_id(now_ms),
            performance: perf.id.clone(),
            seats: wanted,
            total,
            expires_at,
        };
        let lock = self.db.for_update();
        let seq = session.seq.and_then(|seq| i64::try_from(seq).ok());
        // The account's limit, where there is one to keep: checked first in
        // the transaction, under the account's lock (see `account_limit`).
        let limit = holder.account.zip(perf.spec.max_seats_per_account);
        write_tx!(self.db, |tx| async {
            if let Some((account, max)) = limit {
                self.check_account_limit(tx.conn(), perf.pkey, account, hold.seats.len(), max, now)
                    .await?;
            }
            claim(tx.conn(), perf, room, holder, (&hold, seq), now, lock).await
        })?;
        Ok(hold)
    }

    /// Ends the visitor's hold now; its seats are available at once. An
    /// already ended hold is fine; another visitor's is `NotFound`.
    pub async fn release_hold(
        &self,
        room: &str,
        visitor: u128,
        hold_id: &str,
        now_ms: u64,
    ) -> Result<(), BookingError> {
        check_id(room, BookingError::NotFound)?;
        if !is_uuid(hold_id) {
            return Err(BookingError::NotFound);
        }
        let visitor = visitor_key(visitor);
        let now = db_ms(now_ms);
        write_tx!(self.db, |tx| async {
            let hold = self
                .lock_hold(tx.conn(), room, hold_id)
                .await?
                .filter(|h| h.visitor == visitor)
                .ok_or(BookingError::NotFound)?;
            match hold.state.as_str() {
                state::HELD => end_held(tx.conn(), &hold, state::RELEASED, now)
                    .await
                    .map(|_| ()),
                state::PAYING => Err(BookingError::PaymentInProgress),
                state::CONFIRMED => Err(BookingError::HoldExpired),
                _ => Ok(()),
            }
        })
    }

    /// Ends every held hold of the visitor in the room: the session ended.
    /// A paying one is left to its payment (a charge that goes through books
    /// it) but its time is cut to now, so a failed payment ends it rather
    /// than putting it back. Returns how many ended.
    pub async fn end_session(
        &self,
        room: &str,
        visitor: u128,
        now_ms: u64,
    ) -> Result<u64, BookingError> {
        if !token::is_valid_room(room) {
            return Ok(0);
        }
        let visitor = visitor_key(visitor);
        let now = db_ms(now_ms);
        let ids: Vec<(String,)> = sqlx::query_as(
            "SELECT hold_id FROM booking_holds WHERE room = ? AND visitor = ? AND state IN (?, ?)",
        )
        .bind(room)
        .bind(visitor.as_str())
        .bind(state::HELD)
        .bind(state::PAYING)
        .fetch_all(&self.db.pool)
        .await?;
        let mut ended = 0;
        for (hold_id,) in ids {
            // Each under its lock: a hold that turned paying since the read
            // is found paying here.
            let done = write_tx!(self.db, |tx| async {
                match self.lock_hold(tx.conn(), room, &hold_id).await? {
                    Some(h) if h.state == state::HELD => {
                        end_held(tx.conn(), &h, state::RELEASED, now).await
                    }
                    Some(h) if h.state == state::PAYING && h.expires_at > now => {
                        sqlx::query("UPDATE booking_holds SET expires_at = ? WHERE hold_id = ?")
                            .bind(now)
                            .bind(h.hold_id.as_str())
                            .execute(tx.conn())
                            .await?;
                        Ok(false)
                    }
                    _ => Ok(false),
                }
            })?;
            ended += u64::from(done);
        }
        Ok(ended)
    }

    /// The hold's row, locked for this transaction (MySQL) or under the
    /// write lock (SQLite).
    pub(crate) async fn lock_hold(
        &self,
        conn: &mut AnyConnection,
        room: &str,
        hold_id: &str,
    ) -> Result<Option<HoldRow>, BookingError> {
        let sql = format!(
            "SELECT {HOLD_COLUMNS} FROM booking_holds WHERE hold_id = ? AND room = ?{}",
            self.db.for_update()
        );
        let row: Option<StoredHold> = sqlx::query_as(AssertSqlSafe(sql))
            .bind(hold_id)
            .bind(room)
            .fetch_optional(conn)
            .await?;
        Ok(row.map(HoldRow::from))
    }
}

/// The claim itself: the seats, then the hold row (whose unique live key
/// refuses a second live hold of the visitor in the room, whatever the
/// performance; it records the account too), then the counter. `lock` is
/// the locking-read suffix.
///
/// `+held_until` keeps the planner on the primary key (the seats asked for);
/// without it SQLite prefers the `(pkey, held_until)` index and scans every
/// free seat of the performance.
async fn claim(
    conn: &mut AnyConnection,
    perf: &PerfRow,
    room: &str,
    holder: Holder<'_>,
    (hold, session_seq): (&Hold, Option<i64>),
    now: i64,
    lock: &str,
) -> Result<(), BookingError> {
    let visitor = holder.visitor;
    let n = hold.seats.len();
    // Each seat must still have the price the (possibly cached) performance
    // row says: the hold's total is what the confirm charges.
    let sql = format!(
        "UPDATE booking_seats SET hold_id = ?, held_until = ? \
         WHERE pkey = ? AND seat IN ({}) AND booking_id IS NULL AND +held_until <= ? \
         AND price = CASE seat{} END",
        marks(n),
        " WHEN ? THEN ?".repeat(n)
    );
    let mut q = sqlx::query(AssertSqlSafe(sql))
        .bind(hold.hold_id.as_str())
        .bind(db_ms(hold.expires_at))
        .bind(perf.pkey);
    for seat in &hold.seats {
        q = q.bind(seat.as_str());
    }
    q = q.bind(now);
    for seat in &hold.seats {
        let price = perf.price_of(seat).unwrap_or(u64::MAX);
        q = q
            .bind(seat.as_str())
            .bind(i64::try_from(price).unwrap_or(i64::MAX));
    }
    let claimed = q.execute(&mut *conn).await?.rows_affected();
    if claimed != n as u64 {
        // Empty when none is taken: freed again between the statements, or
        // the map changed; the caller tells which.
        let taken = taken_seats(conn, perf.pkey, &hold.seats, now).await?;
        return Err(BookingError::SeatUnavailable { seats: taken });
    }
    // Usually the visitor has no live hold in the room here; when the
    // unique live key says otherwise, the previous one (on this performance
    // or another) may have ended by time only: end it properly (its live
    // slot freed) and try once more.
    for first in [true, false] {
        let inserted = sqlx::query(
            "INSERT INTO booking_holds (hold_id, pkey, room, visitor, live_visitor, seats, total, \
             state, created_at, expires_at, paying_until, session_seq, account) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?)",
        )
        .bind(hold.hold_id.as_str())
        .bind(perf.pkey)
        .bind(room)
        .bind(visitor)
        .bind(visitor)
        .bind(hold.seats.join(","))
        .bind(i64::try_from(hold.total).unwrap_or(i64::MAX))
        .bind(state::HELD)
        .bind(now)
        .bind(db_ms(hold.expires_at))
        .bind(session_seq)
        .bind(holder.account)
        .execute(&mut *conn)
        .await;
        match inserted {
            Ok(_) => break,
            Err(e) if crate::error::is_unique_violation(&e) => {
                if !first {
                    return Err(BookingError::HoldExists);
                }
            }
            Err(e) => return Err(e.into()),
        }
        if !end_live_by_time(&mut *conn, room, visitor, now, lock).await? {
            return Err(BookingError::HoldExists);
        }
    }
    bump(conn, perf.pkey, 0).await
}

/// Ends the visitor's live hold in the room if it is held and its time is
/// up at `now` (its seats freed, its performance's map bumped); whether it
/// did. A live hold still running, or paying, stays.
async fn end_live_by_time(
    conn: &mut AnyConnection,
    room: &str,
    visitor: &str,
    now: i64,
    lock: &str,
) -> Result<bool, BookingError> {
    let sql = format!(
        "SELECT {HOLD_COLUMNS} FROM booking_holds WHERE room = ? AND live_visitor = ?{lock}"
    );
    let live: Option<StoredHold> = sqlx::query_as(AssertSqlSafe(sql))
        .bind(room)
        .bind(visitor)
        .fetch_optional(&mut *conn)
        .await?;
    match live.map(HoldRow::from) {
        Some(h) if h.state == state::HELD && h.expires_at <= now => {
            end_held(conn, &h, state::EXPIRED, now).await
        }
        _ => Ok(false),
    }
}

/// Whether a hold's refusal may come from a stale performance row.
fn rests_on_perf(e: &BookingError) -> bool {
    match e {
        BookingError::UnknownSeat(_)
        | BookingError::TooManySeats { .. }
        | BookingError::AccountLimit { .. } => true,
        BookingError::SeatUnavailable { seats } => seats.is_empty(),
        _ => false,
    }
}

/// Which of `seats` are booked or held at `now`.
pub(crate) async fn taken_seats(
    conn: &mut AnyConnection,
    pkey: i64,
    seats: &[String],
    now: i64,
) -> Result<Vec<String>, BookingError> {
    let sql = format!(
        "SELECT seat FROM booking_seats WHERE pkey = ? AND seat IN ({}) \
         AND (booking_id IS NOT NULL OR +held_until > ?)",
        marks(seats.len())
    );
    let mut q = sqlx::query_as::<_, (String,)>(AssertSqlSafe(sql)).bind(pkey);
    for seat in seats {
        q = q.bind(seat.as_str());
    }
    let mut taken: Vec<String> = q
        .bind(now)
        .fetch_all(conn)
        .await?
        .into_iter()
        .map(|(s,)| s)
        .collect();
    taken.sort();
    Ok(taken)
}

/// Ends a held hold as `new_state` (released or expired) and frees its
/// seats, if it is still held; returns whether it was.
pub(crate) async fn end_held(
    conn: &mut AnyConnection,
    hold: &HoldRow,
    new_state: &str,
    now: i64,
) -> Result<bool, BookingError> {
    let ended = sqlx::query(
        "UPDATE booking_holds SET state = ?, live_visitor = NULL, ended_at = ? \
         WHERE hold_id = ? AND state = ?",
    )
    .bind(new_state)
    .bind(now)
    .bind(hold.hold_id.as_str())
    .bind(state::HELD)
    .execute(&mut *conn)
    .await?
    .rows_affected();
    if ended == 0 {
        return Ok(false);
    }
    free_seats(conn, hold).await?;
    bump(conn, hold.pkey, 0).await?;
    Ok(true)
}

/// Frees the seats the hold still has (not those claimed by others since).
pub(crate) async fn free_seats(
    conn: &mut AnyConnection,
    hold: &HoldRow,
) -> Result<(), BookingError> {
    if hold.seats.is_empty() {
        return Ok(());
    }
    let sql = format!(
        "UPDATE booking_seats SET hold_id = NULL, held_until = 0 \
         WHERE pkey = ? AND seat IN ({}) AND hold_id = ? AND booking_id IS NULL",
        marks(hold.seats.len())
    );
    let mut q = sqlx::query(AssertSqlSafe(sql)).bind(hold.pkey);
    for seat in &hold.seats {
        q = q.bind(seat.as_str());
    }
    q.bind(hold.hold_id.as_str()).execute(conn).await?;
    Ok(())
}
