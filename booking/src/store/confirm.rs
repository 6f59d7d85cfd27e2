//! Confirming a hold into a booking, idempotently, with the payment outside
//! any transaction (the steps are in the module doc of `booking`); reading
//! and cancelling bookings. The transactions that end a paying hold
//! (`finalize`, `settle_unpaid`) are shared with recovery: each is
//! conditional on the hold still paying for the same attempt (that attempt
//! still open), so whichever of the confirm and recovery comes second
//! changes nothing, and neither touches a later attempt on the hold.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use sqlx::AnyConnection;
use sqlx::AssertSqlSafe;

use super::holds::{HoldRow, free_seats, split_seats, state};
use super::performances::bump;
use super::{BookingStore, MAX_DECLINES_PER_HOLD, OUTCOME_MARGIN, PAYING};
use crate::db::{marks, write_tx};
use crate::error::BookingError;
use crate::model::{
    Booking, BookingStatus, check_id, db_ms, is_uuid, new_id, validate_idempotency_key, visitor_key,
};
use crate::payment::PaymentError;

/// Payment attempt states in the database.
pub(crate) mod payment_state {
    pub(crate) const STARTED: &str = "started";
    pub(crate) const SUCCEEDED: &str = "succeeded";
    pub(crate) const DECLINED: &str = "declined";
    pub(crate) const FAILED: &str = "failed";
    pub(crate) const REFUNDED: &str = "refunded";
}

/// The first answer to a key, stored as JSON so every repeat gets it back.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub(crate) enum Outcome {
    Booked { booking: Booking },
    Declined,
    Failed,
    HoldExpired,
    NotFound,
}

impl Outcome {
    fn into_result(self) -> Result<Booking, BookingError> {
        match self {
            Outcome::Booked { booking } => Ok(booking),
            Outcome::Declined => Err(BookingError::PaymentDeclined),
            Outcome::Failed => Err(BookingError::PaymentFailed),
            Outcome::HoldExpired => Err(BookingError::HoldExpired),
            Outcome::NotFound => Err(BookingError::NotFound),
        }
    }

    fn to_json(&self) -> Result<String, BookingError> {
        serde_json::to_string(self).map_err(|_| BookingError::Internal)
    }

    fn from_json(text: &str) -> Result<Outcome, BookingError> {
        serde_json::from_str(text).map_err(|e| {
            tracing::error!(error = %e, "booking: unreadable stored outcome");
            BookingError::Internal
        })
    }
}

/// What the first transaction of a confirm decided.
enum Start {
    /// The key has an answer already.
    Replay(Outcome),
    /// The key's first request is still running.
    Pending,
    /// Answered now without paying (and stored under the key).
    Done(Outcome),
    /// The hold is paying: go and charge.
    Pay(Paying),
}

/// A hold that is now paying, with its payment attempt.
pub(crate) struct Paying {
    pub(crate) hold: HoldRow,
    pub(crate) attempt_id: String,
    pub(crate) performance: String,
}

/// How the booking transaction ended.
pub(crate) enum Finalized {
    Booked(Booking),
    /// The hold no longer pays: the confirm or recovery settled it first.
    AlreadySettled,
}

/// The request's identity under its key: the hold and the body.
fn fingerprint(hold_id: &str, payment_token: &str) -> String {
    let mut h = Sha256::new();
    h.update(hold_id.as_bytes());
    h.update([0u8]);
    h.update(payment_token.as_bytes());
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// How often a repeat of a running request looks for its answer: first
/// after `POLL`, then twice as long each time up to `POLL_MAX`, so copies
/// of a request held for a payment's whole timeout cost the database a few
/// reads a second each, not a hundred.
const POLL: Duration = Duration::from_millis(10);
const POLL_MAX: Duration = Duration::from_millis(250);

impl BookingStore {
    /// Confirms the visitor's hold: pays `payment_token` for it and books
    /// its seats. The same `idempotency_key` again (also concurrently) gets
    /// the first answer, success or error, and never pays twice; the same key
    /// with another hold or token is `IdempotencyKeyReused`.
    pub async fn confirm(
        &self,
        room: &str,
        visitor: u128,
        hold_id: &str,
        idempotency_key: &str,
        payment_token: &str,
        now_ms: u64,
    ) -> Result<Booking, BookingError> {
        validate_idempotency_key(idempotency_key)?;
        if payment_token.is_empty() || payment_token.chars().count() > 255 {
            return Err(BookingError::Invalid(
                "payment_token: 1 to 255 characters".into(),
            ));
        }
        check_id(room, BookingError::NotFound)?;
        let visitor = visitor_key(visitor);
        let fp = fingerprint(hold_id, payment_token);
        let now = db_ms(now_ms);
        // The clock after the payment, for settling an unpaid hold: the
        // session may have ended meanwhile and cut the hold's time to then.
        let started = std::time::Instant::now();
        let later =
            || now.saturating_add(i64::try_from(started.elapsed().as_millis()).unwrap_or(0));
        let key = idempotency_key;
        let start = write_tx!(self.db, |tx| self.start_payment(
            tx.conn(),
            room,
            &visitor,
            hold_id,
            key,
            &fp,
            now
        ))?;
        let paying = match start {
            Start::Replay(o) | Start::Done(o) => return o.into_result(),
            Start::Pending => return self.await_outcome(room, &visitor, key, &fp).await,
            Start::Pay(p) => p,
        };
        let amount = u64::try_from(paying.hold.total).unwrap_or(0);
        let charge = self
            .payment
            .charge(&paying.attempt_id, payment_token, amount);
        match tokio::time::timeout(self.payment_timeout, charge).await {
            Ok(Ok(reference)) => {
                if !self
                    .record_success(&paying.attempt_id, &reference, now)
                    .await?
                {
                    // Recovery gave this attempt up (its paying window had
                    // passed) and stored the answer: void this charge too.
                    self.void(&paying.attempt_id, amount).await;
                    return self.await_outcome(room, &visitor, key, &fp).await;
                }
                if let Some(hook) = &self.faults.after_payment_recorded {
                    hook();
                }
                match self.finalize(&paying, new_id(now_ms), now).await? {
                    Finalized::Booked(b) => Ok(b),
                    Finalized::AlreadySettled => self.await_outcome(room, &visitor, key, &fp).await,
                }
            }
            Ok(Err(PaymentError::Declined)) => {
                self.settle_unpaid(
                    &paying,
                    payment_state::STARTED,
                    payment_state::DECLINED,
                    Outcome::Declined,
                    later(),
                )
                .await?;
                self.await_outcome(room, &visitor, key, &fp).await
            }
            failed => {
                let why = match failed {
                    Ok(Err(e)) => e.to_string(),
                    _ => "timed out".to_owned(),
                };
                tracing::warn!(hold = %paying.hold.hold_id, %why, "booking: payment failed");
                // A timed-out charge may have gone through: void it.
                self.void(&paying.attempt_id, amount).await;
                self.settle_unpaid(
                    &paying,
                    payment_state::STARTED,
                    payment_state::FAILED,
                    Outcome::Failed,
                    later(),
                )
                .await?;
                self.await_outcome(room, &visitor, key, &fp).await
            }
        }
    }

    /// The answer a key already used got (or gets, if its first request is
    /// still running), without changing anything; `None` when the key was
    /// never used by this visitor in this room. The HTTP layer asks this
    /// once the session has ended, since a booking ends it: a repeat of the
    /// confirm must still get the booking.
    pub async fn replay(
        &self,
        room: &str,
        visitor: u128,
        hold_id: &str,
        idempotency_key: &str,
        payment_token: &str,
    ) -> Result<Option<Result<Booking, BookingError>>, BookingError> {
        validate_idempotency_key(idempotency_key)?;
        check_id(room, BookingError::NotFound)?;
        let visitor = visitor_key(visitor);
        let fp = fingerprint(hold_id, payment_token);
        let mut conn = self.db.pool.acquire().await?;
        let found = self
            .read_key(&mut conn, room, &visitor, idempotency_key)
            .await?;
        drop(conn);
        Ok(match found {
            None => None,
            Some((first, _)) if first != fp => Some(Err(BookingError::IdempotencyKeyReused)),
            Some((_, Some(outcome))) => Some(outcome.into_result()),
            Some((_, None)) => Some(
                self.await_outcome(room, &visitor, idempotency_key, &fp)
                    .await,
            ),
        })
    }

    /// The first transaction: claims the key, checks the hold, marks it
    /// paying (its seats protected) and writes the payment attempt.
    #[allow(clippy::too_many_arguments)]
    async fn start_payment(
        &self,
        conn: &mut AnyConnection,
        room: &str,
        visitor: &str,
        hold_id: &str,
        key: &str,
        fp: &str,
        now: i64,
    ) -> Result<Start, BookingError> {
        let claimed = sqlx::query(
            "INSERT INTO booking_idempotency (room, visitor, idem_key, fingerprint, hold_id, \
             outcome, created_at) VALUES (?, ?, ?, ?, ?, NULL, ?)",
        )
        .bind(room)
        .bind(visitor)
        .bind(key)
        .bind(fp)
        // Anything but a hold id (too long for the column, not ASCII: a
        // 500 on MySQL) is kept as none; the fingerprint names it.
        .bind(if is_uuid(hold_id) { hold_id } else { "" })
        .bind(now)
        .execute(&mut *conn)
        .await;
        match claimed {
            Err(e) if crate::error::is_unique_violation(&e) => {
                let (first_fp, outcome) = self
                    .read_key(&mut *conn, room, visitor, key)
                    .await?
                    .ok_or(BookingError::Busy)?;
                if first_fp != fp {
                    return Err(BookingError::IdempotencyKeyReused);
                }
                return Ok(match outcome {
                    Some(o) => Start::Replay(o),
                    None => Start::Pending,
                });
            }
            other => other?,
        };
        // One purchase per admission (visitor ids are per place): a booking
        // ends the session, so a hold on another performance confirmed
        // alongside, or just after it before the session's end is heard,
        // would buy twice. The visitor's holds are locked first, all in one
        // order, so its confirms queue here and each sees the others.
        let sql = format!(
            "SELECT hold_id, state FROM booking_holds \
             WHERE room = ? AND visitor = ? AND state IN (?, ?, ?){}",
            self.db.for_update()
        );
        let mine: Vec<(String, String)> = sqlx::query_as(AssertSqlSafe(sql))
            .bind(room)
            .bind(visitor)
            .bind(state::HELD)
            .bind(state::PAYING)
            .bind(state::CONFIRMED)
            .fetch_all(&mut *conn)
            .await?;
        if mine.iter().any(|(id, _)| id == hold_id) {
            let other = |st: &str| mine.iter().any(|(id, s)| id != hold_id && s == st);
            if other(state::CONFIRMED) {
                // Bought already: this hold ends with the session.
                return Err(BookingError::HoldExpired);
            }
            if other(state::PAYING) {
                return Err(BookingError::PaymentInProgress);
            }
        }
        let hold = if is_uuid(hold_id) {
            self.lock_hold(&mut *conn, room, hold_id).await?
        } else {
            None
        };
        let verdict = match hold.filter(|h| h.visitor == visitor) {
            // The key keeps this answer, as the contract has it: the same
            // key with another hold is then 409.
            None => Err(Outcome::NotFound),
            Some(h) if h.state == state::PAYING => return Err(BookingError::PaymentInProgress),
            Some(h) if h.state != state::HELD || h.expires_at <= now => Err(Outcome::HoldExpired),
            Some(h) => Ok(h),
        };
        let hold = match verdict {
            Ok(hold) => hold,
            Err(outcome) => {
                self.store_outcome(&mut *conn, room, visitor, key, &outcome)
                    .await?;
                return Ok(Start::Done(outcome));
            }
        };
        let n = hold.seats.len();
        let sql = format!(
            "UPDATE booking_seats SET held_until = ? WHERE pkey = ? AND seat IN ({}) \
             AND hold_id = ? AND booking_id IS NULL AND +held_until > ?",
            marks(n)
        );
        let mut q = sqlx::query(AssertSqlSafe(sql)).bind(PAYING).bind(hold.pkey);
        for seat in &hold.seats {
            q = q.bind(seat.as_str());
        }
        let protected = q
            .bind(hold.hold_id.as_str())
            .bind(now)
            .execute(&mut *conn)
            .await?
            .rows_affected();
        if protected != n as u64 {
            // Another caller's clock already saw the hold end and took a
            // seat: the hold has ended.
            return Err(BookingError::HoldExpired);
        }
        sqlx::query("UPDATE booking_holds SET state = ?, paying_until = ? WHERE hold_id = ?")
            .bind(state::PAYING)
            .bind(now.saturating_add(self.paying_window_ms()))
            .bind(hold.hold_id.as_str())
            .execute(&mut *conn)
            .await?;
        let attempt_id = new_id(u64::try_from(now).unwrap_or(0));
        sqlx::query(
            "INSERT INTO booking_payments (attempt_id, hold_id, amount, state, reference, \
             created_at, updated_at) VALUES (?, ?, ?, ?, NULL, ?, ?)",
        )
        .bind(attempt_id.as_str())
        .bind(hold.hold_id.as_str())
        .bind(hold.total)
        .bind(payment_state::STARTED)
        .bind(now)
        .bind(now)
        .execute(&mut *conn)
        .await?;
        let performance = self.performance_id(&mut *conn, hold.pkey).await?;
        bump(conn, hold.pkey, 0).await?;
        Ok(Start::Pay(Paying {
            hold,
            attempt_id,
            performance,
        }))
    }

    /// The key's fingerprint and stored answer, if the key exists.
    async fn read_key(
        &self,
        conn: &mut AnyConnection,
        room: &str,
        visitor: &str,
        key: &str,
    ) -> Result<Option<(String, Option<Outcome>)>, BookingError> {
        let row: Option<(String, Option<String>)> = sqlx::query_as(
            "SELECT fingerprint, outcome FROM booking_idempotency \
             WHERE room = ? AND visitor = ? AND idem_key = ?",
        )
        .bind(room)
        .bind(visitor)
        .bind(key)
        .fetch_optional(conn)
        .await?;
        match row {
            None => Ok(None),
            Some((fp, None)) => Ok(Some((fp, None))),
            Some((fp, Some(text))) => Ok(Some((fp, Some(Outcome::from_json(&text)?)))),
        }
    }

    async fn store_outcome(
        &self,
        conn: &mut AnyConnection,
        room: &str,
        visitor: &str,
        key: &str,
        outcome: &Outcome,
    ) -> Result<(), BookingError> {
        sqlx::query(
            "UPDATE booking_idempotency SET outcome = ? \
             WHERE room = ? AND visitor = ? AND idem_key = ?",
        )
        .bind(outcome.to_json()?)
        .bind(room)
        .bind(visitor)
        .bind(key)
        .execute(conn)
        .await?;
        Ok(())
    }

    /// Waits for the answer the key's first request stores (bounded by the
    /// payment timeout and the paying margin), then returns it.
    async fn await_outcome(
        &self,
        room: &str,
        visitor: &str,
        key: &str,
        fp: &str,
    ) -> Result<Booking, BookingError> {
        let wait = self.payment_timeout + OUTCOME_MARGIN;
        let polled = tokio::time::timeout(wait, async {
            let mut pause = POLL;
            loop {
                let mut conn = self.db.pool.acquire().await?;
                match self.read_key(&mut conn, room, visitor, key).await? {
                    None => return Err(BookingError::Busy),
                    Some((first_fp, _)) if first_fp != fp => {
                        return Err(BookingError::IdempotencyKeyReused);
                    }
                    Some((_, Some(outcome))) => return outcome.into_result(),
                    Some((_, None)) => {}
                }
                drop(conn);
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(POLL_MAX);
            }
        })
        .await;
        polled.unwrap_or(Err(BookingError::Busy))
    }

    /// Records a successful charge before anything else is written, so a
    /// crash after it still ends in a booking. False when the attempt was
    /// no longer waiting for its result (recovery refunded it).
    async fn record_success(
        &self,
        attempt_id: &str,
        reference: &str,
        now: i64,
    ) -> Result<bool, BookingError> {
        let done = sqlx::query(
            "UPDATE booking_payments SET state = ?, reference = ?, updated_at = ? \
             WHERE attempt_id = ? AND state = ?",
        )
        .bind(payment_state::SUCCEEDED)
        .bind(reference)
        .bind(now)
        .bind(attempt_id)
        .bind(payment_state::STARTED)
        .execute(&self.db.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Refunds (voids) an attempt, logging a failure: the attempt row says
    /// what to reconcile. The refund runs in a task of its own, so a caller
    /// cut short (a client hanging up, a request's deadline, the sale
    /// loop's) never drops a refund its attempt already records.
    pub(crate) async fn void(&self, attempt_id: &str, amount: u64) {
        let payment = self.payment.clone();
        let timeout = self.payment_timeout;
        let attempt_id = attempt_id.to_owned();
        let refund = tokio::spawn(async move {
            let refund = payment.refund(&attempt_id, amount);
            match tokio::time::timeout(timeout, refund).await {
                Ok(Ok(())) => {
                    tracing::info!(attempt = attempt_id, amount, "booking: payment refunded");
                }
                other => {
                    tracing::error!(attempt = attempt_id, amount, result = ?other.map(|r| r.err()),
                    "booking: refund failed; reconcile this attempt with the provider");
                }
            }
        });
        let _ = refund.await;
    }

    /// The second transaction: the seats sold, the booking written, the
    /// answer stored. Only while the hold still pays.
    pub(crate) async fn finalize(
        &self,
        paying: &Paying,
        booking_id: String,
        now: i64,
    ) -> Result<Finalized, BookingError> {
        let done = write_tx!(self.db, |tx| self.finalize_in(
            tx.conn(),
            paying,
            &booking_id,
            now
        ));
        match done {
            Err(BookingError::SeatUnavailable { seats }) => {
                // Cannot happen while paying seats are protected; if it does,
                // the customer gets their money back, never a seat sold twice.
                tracing::error!(hold = %paying.hold.hold_id, ?seats, "booking: paid hold lost seats; refunding");
                let refunded = self
                    .settle_unpaid(
                        paying,
                        payment_state::SUCCEEDED,
                        payment_state::REFUNDED,
                        Outcome::HoldExpired,
                        now,
                    )
                    .await?;
                if refunded {
                    self.void(
                        &paying.attempt_id,
                        u64::try_from(paying.hold.total).unwrap_or(0),
                    )
                    .await;
                }
                Ok(Finalized::AlreadySettled)
            }
            other => other,
        }
    }

    async fn finalize_in(
        &self,
        conn: &mut AnyConnection,
        paying: &Paying,
        booking_id: &str,
        now: i64,
    ) -> Result<Finalized, BookingError> {
        let hold = &paying.hold;
        // Only while the hold pays for this very attempt (its success still
        // open): a hold put back and paying for a later attempt is not this
        // attempt's to book.
        let confirmed = sqlx::query(
            "UPDATE booking_holds SET state = ?, live_visitor = NULL, ended_at = ?, booking_id = ? \
             WHERE hold_id = ? AND state = ? AND EXISTS (SELECT 1 FROM booking_payments \
             WHERE attempt_id = ? AND hold_id = ? AND state = ?)",
        )
        .bind(state::CONFIRMED)
        .bind(now)
        .bind(booking_id)
        .bind(hold.hold_id.as_str())
        .bind(state::PAYING)
        .bind(paying.attempt_id.as_str())
        .bind(hold.hold_id.as_str())
        .bind(payment_state::SUCCEEDED)
        .execute(&mut *conn)
        .await?
        .rows_affected();
        if confirmed == 0 {
            return Ok(Finalized::AlreadySettled);
        }
        let n = hold.seats.len();
        let sql = format!(
            "UPDATE booking_seats SET booking_id = ?, hold_id = NULL, held_until = 0 \
             WHERE pkey = ? AND seat IN ({}) AND hold_id = ? AND booking_id IS NULL",
            marks(n)
        );
        let mut q = sqlx::query(AssertSqlSafe(sql))
            .bind(booking_id)
            .bind(hold.pkey);
        for seat in &hold.seats {
            q = q.bind(seat.as_str());
        }
        let sold = q
            .bind(hold.hold_id.as_str())
            .execute(&mut *conn)
            .await?
            .rows_affected();
        let lost = || BookingError::SeatUnavailable {
            seats: hold.seats.clone(),
        };
        if sold != n as u64 {
            return Err(lost());
        }
        let sql = format!(
            "INSERT INTO booking_seat_sales (pkey, seat, booking_id) VALUES {}",
            vec!["(?, ?, ?)"; n].join(", ")
        );
        let mut q = sqlx::query(AssertSqlSafe(sql));
        for seat in &hold.seats {
            q = q.bind(hold.pkey).bind(seat.as_str()).bind(booking_id);
        }
        match q.execute(&mut *conn).await {
            Err(e) if crate::error::is_unique_violation(&e) => return Err(lost()),
            other => other?,
        };
        let booking = Booking {
            booking_id: booking_id.to_owned(),
            performance: paying.performance.clone(),
            seats: hold.seats.clone(),
            total: u64::try_from(hold.total).unwrap_or(0),
            status: BookingStatus::Confirmed,
            created_at: u64::try_from(now).unwrap_or(0),
        };
        sqlx::query(
            "INSERT INTO booking_bookings (booking_id, pkey, room, performance, visitor, hold_id, \
             seats, total, status, created_at, account) \
             SELECT ?, pkey, room, ?, visitor, hold_id, seats, total, ?, ?, account \
             FROM booking_holds WHERE hold_id = ?",
        )
        .bind(booking_id)
        .bind(paying.performance.as_str())
        .bind(status_text(BookingStatus::Confirmed))
        .bind(now)
        .bind(hold.hold_id.as_str())
        .execute(&mut *conn)
        .await?;
        sqlx::query(
            "UPDATE booking_idempotency SET outcome = ? WHERE hold_id = ? AND outcome IS NULL",
        )
        .bind(
            Outcome::Booked {
                booking: booking.clone(),
            }
            .to_json()?,
        )
        .bind(hold.hold_id.as_str())
        .execute(&mut *conn)
        .await?;
        bump(conn, hold.pkey, i64::try_from(n).unwrap_or(0)).await?;
        Ok(Finalized::Booked(booking))
    }

    /// Ends a paying hold without a booking: the attempt goes from `from`
    /// (an open state: started or succeeded) to `to`, the hold back to held
    /// (or expired, if its own time is up or this was its last allowed
    /// decline, [`MAX_DECLINES_PER_HOLD`]), the answer stored. False when
    /// the attempt had already moved on (someone else settled it). An open
    /// attempt is the one its hold pays for, so a hold found not paying
    /// here is a broken invariant, not a race.
    pub(crate) async fn settle_unpaid(
        &self,
        paying: &Paying,
        from: &str,
        to: &str,
        outcome: Outcome,
        now: i64,
    ) -> Result<bool, BookingError> {
        let outcome = outcome.to_json()?;
        write_tx!(self.db, |tx| async {
            let conn = tx.conn();
            let hold = &paying.hold;
            let moved = sqlx::query(
                "UPDATE booking_payments SET state = ?, updated_at = ? WHERE attempt_id = ? AND state = ?",
            )
            .bind(to)
            .bind(now)
            .bind(paying.attempt_id.as_str())
            .bind(from)
            .execute(&mut *conn)
            .await?
            .rows_affected();
            if moved == 0 {
                return Ok(false);
            }
            // The row's time, not the copy read before paying: the session
            // may have ended meanwhile (`end_session`), and the hold with it.
            let sql = format!(
                "SELECT expires_at FROM booking_holds WHERE hold_id = ?{}",
                self.db.for_update()
            );
            let expires_at = sqlx::query_as::<_, (i64,)>(AssertSqlSafe(sql))
                .bind(hold.hold_id.as_str())
                .fetch_optional(&mut *conn)
                .await?
                .map_or(now, |(at,)| at);
            // A hold takes a bounded number of declined cards: the last
            // one ends it, so one admission cannot try cards on it for ever.
            let spent = to == payment_state::DECLINED
                && declines(&mut *conn, &hold.hold_id).await? >= MAX_DECLINES_PER_HOLD;
            let still_held = expires_at > now && !spent;
            let back = if still_held {
                sqlx::query("UPDATE booking_holds SET state = ?, paying_until = 0 WHERE hold_id = ? AND state = ?")
                    .bind(state::HELD)
                    .bind(hold.hold_id.as_str())
                    .bind(state::PAYING)
            } else {
                sqlx::query(
                    "UPDATE booking_holds SET state = ?, live_visitor = NULL, ended_at = ?, paying_until = 0 \
                     WHERE hold_id = ? AND state = ?",
                )
                .bind(state::EXPIRED)
                .bind(now)
                .bind(hold.hold_id.as_str())
                .bind(state::PAYING)
            };
            if back.execute(&mut *conn).await?.rows_affected() == 0 {
                tracing::error!(hold = %hold.hold_id, "booking: an attempt was open on a hold not paying");
                return Err(BookingError::Internal);
            }
            if still_held {
                let sql = format!(
                    "UPDATE booking_seats SET held_until = ? WHERE pkey = ? AND seat IN ({}) \
                     AND hold_id = ? AND booking_id IS NULL",
                    marks(hold.seats.len())
                );
                let mut q = sqlx::query(AssertSqlSafe(sql))
                    .bind(expires_at)
                    .bind(hold.pkey);
                for seat in &hold.seats {
                    q = q.bind(seat.as_str());
                }
                q.bind(hold.hold_id.as_str()).execute(&mut *conn).await?;
            } else {
                free_seats(&mut *conn, hold).await?;
            }
            sqlx::query(
                "UPDATE booking_idempotency SET outcome = ? WHERE hold_id = ? AND outcome IS NULL",
            )
            .bind(outcome.as_str())
            .bind(hold.hold_id.as_str())
            .execute(&mut *conn)
            .await?;
            bump(conn, hold.pkey, 0).await?;
            Ok(true)
        })
    }

    /// The visitor's booking in this room; another visitor's is `NotFound`.
    pub async fn get_booking(
        &self,
        room: &str,
        visitor: u128,
        booking_id: &str,
    ) -> Result<Booking, BookingError> {
        check_id(room, BookingError::NotFound)?;
        if !is_uuid(booking_id) {
            return Err(BookingError::NotFound);
        }
        let mut conn = self.db.pool.acquire().await?;
        let row = read_booking(&mut conn, room, booking_id, "").await?;
        match row {
            Some((b, owner, _)) if owner == visitor_key(visitor) => Ok(b),
            _ => Err(BookingError::NotFound),
        }
    }

    /// Cancels the visitor's booking: its seats are available again at
    /// once. Cancelling twice is fine; another visitor's is `NotFound`.
    pub async fn cancel_booking(
        &self,
        room: &str,
        visitor: u128,
        booking_id: &str,
        now_ms: u64,
    ) -> Result<(), BookingError> {
        check_id(room, BookingError::NotFound)?;
        if !is_uuid(booking_id) {
            return Err(BookingError::NotFound);
        }
        let visitor = visitor_key(visitor);
        let now = db_ms(now_ms);
        let lock = self.db.for_update();
        write_tx!(self.db, |tx| async {
            let conn = tx.conn();
            let (booking, owner, pkey) =
                match read_booking(&mut *conn, room, booking_id, lock).await? {
                    Some(row) if row.1 == visitor => row,
                    _ => return Err(BookingError::NotFound),
                };
            if booking.status == BookingStatus::Cancelled {
                return Ok(());
            }
            debug_assert_eq!(owner, visitor);
            sqlx::query(
                "UPDATE booking_bookings SET status = ?, cancelled_at = ? WHERE booking_id = ?",
            )
            .bind(status_text(BookingStatus::Cancelled))
            .bind(now)
            .bind(booking_id)
            .execute(&mut *conn)
            .await?;
            let n = booking.seats.len();
            let sql = format!(
                "DELETE FROM booking_seat_sales WHERE pkey = ? AND seat IN ({}) AND booking_id = ?",
                marks(n)
            );
            let mut q = sqlx::query(AssertSqlSafe(sql)).bind(pkey);
            for seat in &booking.seats {
                q = q.bind(seat.as_str());
            }
            q.bind(booking_id).execute(&mut *conn).await?;
            let sql = format!(
                "UPDATE booking_seats SET booking_id = NULL, hold_id = NULL, held_until = 0 \
                 WHERE pkey = ? AND seat IN ({}) AND booking_id = ?",
                marks(n)
            );
            let mut q = sqlx::query(AssertSqlSafe(sql)).bind(pkey);
            for seat in &booking.seats {
                q = q.bind(seat.as_str());
            }
            q.bind(booking_id).execute(&mut *conn).await?;
            bump(conn, pkey, -i64::try_from(n).unwrap_or(0)).await
        })
    }
}

/// How many of the hold's payment attempts were declined.
async fn declines(conn: &mut AnyConnection, hold_id: &str) -> Result<u32, BookingError> {
    let (n,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM booking_payments WHERE hold_id = ? AND state = ?")
            .bind(hold_id)
            .bind(payment_state::DECLINED)
            .fetch_one(conn)
            .await?;
    Ok(u32::try_from(n).unwrap_or(u32::MAX))
}

pub(crate) fn status_text(s: BookingStatus) -> &'static str {
    match s {
        BookingStatus::Confirmed => "confirmed",
        BookingStatus::Cancelled => "cancelled",
    }
}

/// A booking's row as stored, read by column name.
#[derive(sqlx::FromRow)]
struct StoredBooking {
    booking_id: String,
    performance: String,
    visitor: String,
    seats: String,
    total: i64,
    status: String,
    created_at: i64,
    pkey: i64,
}

/// A booking with its owner and performance key; `lock` is `""` or the
/// locking-read suffix.
async fn read_booking(
    conn: &mut AnyConnection,
    room: &str,
    booking_id: &str,
    lock: &str,
) -> Result<Option<(Booking, String, i64)>, BookingError> {
    let sql = format!(
        "SELECT booking_id, performance, visitor, seats, total, status, created_at, pkey \
         FROM booking_bookings WHERE booking_id = ? AND room = ?{lock}"
    );
    let row: Option<StoredBooking> = sqlx::query_as(AssertSqlSafe(sql))
        .bind(booking_id)
        .bind(room)
        .fetch_optional(conn)
        .await?;
    Ok(row.map(|r| {
        (
            Booking {
                booking_id: r.booking_id,
                performance: r.performance,
                seats: split_seats(&r.seats),
                total: u64::try_from(r.total).unwrap_or(0),
                status: if r.status == "cancelled" {
                    BookingStatus::Cancelled
                } else {
                    BookingStatus::Confirmed
                },
                created_at: u64::try_from(r.created_at).unwrap_or(0),
            },
            r.visitor,
            r.pkey,
        )
    }))
}
