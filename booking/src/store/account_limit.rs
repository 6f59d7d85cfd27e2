//! The performance setting `max_seats_per_account`: the seats one account
//! holds (live holds) and has booked (confirmed, not cancelled) in a
//! performance, over all its sessions, never exceed it.
//!
//! A hold checks it inside its own write transaction, before it claims any
//! seat: it takes the account's lock for the performance, then counts. On
//! MySQL the lock is the account's row of `booking_account_locks` (made on
//! its first hold there), so two sessions of one account queue on it while
//! holds of other accounts never wait on each other; on SQLite the write
//! transaction (`BEGIN IMMEDIATE`) already holds the only write lock. Only
//! holds raise the count, and every one of them under a limit takes the
//! lock, so the count read under it stays true until commit: confirming,
//! releasing, cancelling and time only lower it.
//!
//! What counts is what the seats' own rules say is taken: a held hold
//! until its time is up (as its seats are free then, sweeper or not), a
//! paying one until its payment settles, a confirmed booking until it is
//! cancelled. Visitors without an account, and performances without a
//! limit, never come here.

use sqlx::AnyConnection;

use super::BookingStore;
use super::confirm::status_text;
use super::holds::{split_seats, state};
use crate::db::Backend;
use crate::error::BookingError;
use crate::model::BookingStatus;

impl BookingStore {
    /// Refuses (`AccountLimit`) a hold of `wanted` seats that would take
    /// `account` past `max` in the performance `pkey` at `now`. Runs in the
    /// hold's write transaction, first: the lock it takes is held to commit.
    pub(crate) async fn check_account_limit(
        &self,
        conn: &mut AnyConnection,
        pkey: i64,
        account: &str,
        wanted: usize,
        max: u32,
        now: i64,
    ) -> Result<(), BookingError> {
        if self.db.backend == Backend::MySql {
            // Inserts the account's row, or finds it: either way the row is
            // locked exclusively until commit (InnoDB locks the duplicate
            // row of an `ON DUPLICATE KEY UPDATE`).
            sqlx::query(
                "INSERT INTO booking_account_locks (pkey, account) VALUES (?, ?) \
                 ON DUPLICATE KEY UPDATE account = account",
            )
            .bind(pkey)
            .bind(account)
            .execute(&mut *conn)
            .await?;
        }
        let taken = account_seats(conn, pkey, account, now).await?;
        if taken.saturating_add(wanted) > max as usize {
            return Err(BookingError::AccountLimit { max });
        }
        Ok(())
    }
}

/// How many seats `account` holds and has booked in the performance `pkey`
/// at `now`: the seat lists of its live holds and its confirmed bookings,
/// each found through its `(pkey, account, state)` index.
async fn account_seats(
    conn: &mut AnyConnection,
    pkey: i64,
    account: &str,
    now: i64,
) -> Result<usize, BookingError> {
    let rows: Vec<(String,)> = sqlx::query_as(
        "SELECT seats FROM booking_holds WHERE pkey = ? AND account = ? AND state IN (?, ?) \
         AND (state = ? OR expires_at > ?) \
         UNION ALL \
         SELECT seats FROM booking_bookings WHERE pkey = ? AND account = ? AND status = ?",
    )
    .bind(pkey)
    .bind(account)
    .bind(state::HELD)
    .bind(state::PAYING)
    .bind(state::PAYING)
    .bind(now)
    .bind(pkey)
    .bind(account)
    .bind(status_text(BookingStatus::Confirmed))
    .fetch_all(conn)
    .await?;
    Ok(rows.iter().map(|(seats,)| split_seats(seats).len()).sum())
}
