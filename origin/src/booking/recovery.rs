//! Finishing paying holds whose confirm did not (a crash, a lost answer):
//! run at start and by every sweep. What the payment attempt recorded
//! decides: a success becomes the booking at once; a decline or failure
//! puts the hold back; an attempt with no result is refunded (voided,
//! recorded, logged) once its paying window has passed, since until then
//! its confirm may still be running. Never paid and no ticket.

use super::confirm::{Finalized, Outcome, Paying, payment_state};
use super::holds::{HOLD_COLUMNS, HoldRow, HoldTuple, state};
use super::{BookingError, BookingStore, db_ms, new_id};

/// What a recovery pass did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    /// Paid holds turned into their bookings.
    pub completed: u64,
    /// Attempts with no known result, refunded and their holds put back.
    pub refunded: u64,
    /// Declined or failed attempts whose holds were put back.
    pub settled: u64,
}

/// Most paying holds one pass looks at (the rest wait for the next pass).
const BATCH: i64 = 200;

impl BookingStore {
    /// Finishes the paying holds that can be finished at `now_ms`.
    pub async fn recover(&self, now_ms: u64) -> Result<RecoveryReport, BookingError> {
        let now = db_ms(now_ms);
        let sql = format!(
            "SELECT {HOLD_COLUMNS} FROM booking_holds WHERE state = ? ORDER BY expires_at LIMIT {BATCH}"
        );
        let holds: Vec<HoldTuple> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .bind(state::PAYING)
            .fetch_all(&self.db.pool)
            .await?;
        let mut report = RecoveryReport::default();
        for hold in holds.into_iter().map(HoldRow::from) {
            let attempt: Option<(String, String)> = sqlx::query_as(
                "SELECT attempt_id, state FROM booking_payments WHERE hold_id = ? \
                 ORDER BY created_at DESC, attempt_id DESC LIMIT 1",
            )
            .bind(hold.hold_id.as_str())
            .fetch_optional(&self.db.pool)
            .await?;
            let Some((attempt_id, attempt_state)) = attempt else {
                tracing::error!(hold = %hold.hold_id, "booking: paying hold without a payment attempt");
                continue;
            };
            let (performance,): (String,) =
                sqlx::query_as("SELECT performance FROM booking_performances WHERE pkey = ?")
                    .bind(hold.pkey)
                    .fetch_one(&self.db.pool)
                    .await?;
            let paying_until = hold.paying_until;
            let amount = u64::try_from(hold.total).unwrap_or(0);
            let paying = Paying {
                hold,
                attempt_id,
                performance,
            };
            let hold_id = paying.hold.hold_id.as_str();
            match attempt_state.as_str() {
                payment_state::SUCCEEDED => {
                    if let Finalized::Booked(b) =
                        self.finalize(&paying, new_id(now_ms), now).await?
                    {
                        tracing::warn!(hold = hold_id, booking = %b.booking_id,
                            "booking: completed a paid booking after an interruption");
                        report.completed += 1;
                    }
                }
                payment_state::STARTED if paying_until <= now => {
                    let (from, to) = (payment_state::STARTED, payment_state::REFUNDED);
                    if self
                        .settle_unpaid(&paying, from, to, Outcome::Failed, now)
                        .await?
                    {
                        // Recorded first, voided second: had the confirm
                        // recorded a success meanwhile, nothing is voided.
                        self.void(&paying.attempt_id, amount).await;
                        tracing::warn!(hold = hold_id, attempt = %paying.attempt_id,
                            "booking: payment with no known result refunded");
                        report.refunded += 1;
                    }
                }
                payment_state::STARTED => {}
                settled => {
                    let outcome = if settled == payment_state::DECLINED {
                        Outcome::Declined
                    } else {
                        Outcome::Failed
                    };
                    if self
                        .settle_unpaid(&paying, settled, settled, outcome, now)
                        .await?
                    {
                        report.settled += 1;
                    }
                }
            }
        }
        Ok(report)
    }
}
