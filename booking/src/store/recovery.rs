//! Finishing paying holds whose confirm did not (a crash, a lost answer):
//! run at start and by every sweep. What the payment attempt recorded
//! decides: a success becomes the booking at once; an attempt with no result
//! is refunded (voided, recorded, logged) once its paying window has passed,
//! since until then its confirm may still be running. A decline or failure
//! needs nothing here: the confirm records it and puts the hold back in one
//! transaction. Never paid and no ticket.

use super::BookingStore;
use super::confirm::{Finalized, Outcome, Paying, payment_state};
use super::holds::{HOLD_COLUMNS, HoldRow, StoredHold, state};
use crate::error::BookingError;
use crate::model::{db_ms, new_id};

/// What a recovery pass did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    /// Paid holds turned into their bookings.
    pub completed: u64,
    /// Attempts with no known result, refunded and their holds put back.
    pub refunded: u64,
}

/// A paying hold's row with its open attempt's id and state (none: the
/// hold has no open attempt), its room and its session.
#[derive(sqlx::FromRow)]
struct PayingRow {
    #[sqlx(flatten)]
    hold: StoredHold,
    attempt_id: Option<String>,
    attempt_state: Option<String>,
    room: String,
    session_seq: Option<i64>,
}

/// Most sessions kept for the sale loop to end; past it the oldest go (they
/// end at their own time all the same).
const MAX_BOOKED_SESSIONS: usize = 10_000;

/// Most paying holds one pass looks at (the rest wait for the next pass).
const BATCH: i64 = 200;

impl BookingStore {
    /// The queue sessions whose purchase recovery finished since the last
    /// call (room, sequence number): a confirm ends its session once it
    /// books, and one that never answered left that to whoever reads this.
    pub fn take_booked_sessions(&self) -> Vec<(String, u64)> {
        self.booked_sessions
            .lock()
            .map(|mut s| std::mem::take(&mut *s))
            .unwrap_or_default()
    }

    /// Puts sessions back for the next [`BookingStore::take_booked_sessions`].
    pub fn keep_booked_sessions(&self, sessions: Vec<(String, u64)>) {
        for (room, seq) in sessions {
            self.note_booked_session(&room, seq);
        }
    }

    fn note_booked_session(&self, room: &str, seq: u64) {
        if let Ok(mut sessions) = self.booked_sessions.lock() {
            if sessions.len() >= MAX_BOOKED_SESSIONS {
                sessions.remove(0);
            }
            sessions.push((room.to_owned(), seq));
        }
    }

    /// Finishes the paying holds that can be finished at `now_ms`.
    pub async fn recover(&self, now_ms: u64) -> Result<RecoveryReport, BookingError> {
        let now = db_ms(now_ms);
        // Each paying hold with its open attempt (started or succeeded), read
        // in one statement so the two agree: a hold's earlier attempts are all
        // settled (settling one puts the hold back in the same transaction),
        // so the open one is the attempt the hold pays for now. Picking "the
        // latest" attempt instead, or reading it after the hold, could see a
        // settled decline while the hold already pays for the next attempt,
        // and settle that one over it (the good card then paid, unbooked).
        // Named with `AS`: the row is read by column name, and both tables
        // have a `state`.
        let columns: Vec<String> = HOLD_COLUMNS
            .split(", ")
            .map(|c| format!("h.{c} AS {c}"))
            .collect();
        let sql = format!(
            "SELECT {}, p.attempt_id AS attempt_id, p.state AS attempt_state, h.room AS room, \
             h.session_seq AS session_seq FROM booking_holds h \
             LEFT JOIN booking_payments p ON p.hold_id = h.hold_id AND p.state IN (?, ?) \
             WHERE h.state = ? ORDER BY h.expires_at LIMIT {BATCH}",
            columns.join(", ")
        );
        let holds: Vec<PayingRow> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .bind(payment_state::STARTED)
            .bind(payment_state::SUCCEEDED)
            .bind(state::PAYING)
            .fetch_all(&self.db.pool)
            .await?;
        let mut report = RecoveryReport::default();
        for row in holds {
            let PayingRow {
                hold,
                attempt_id,
                attempt_state,
                room,
                session_seq,
            } = row;
            let hold = HoldRow::from(hold);
            let (Some(attempt_id), Some(attempt_state)) = (attempt_id, attempt_state) else {
                tracing::error!(hold = %hold.hold_id, "booking: paying hold without an open payment attempt");
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
                        if let Some(seq) = session_seq.and_then(|s| u64::try_from(s).ok()) {
                            self.note_booked_session(&room, seq);
                        }
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
                _ => {}
            }
        }
        Ok(report)
    }
}
