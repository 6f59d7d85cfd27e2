//! The sweeper: marks holds whose time is up as expired and clears their
//! seats, so counts, versions and the room's signal move promptly (seats
//! of an ended hold already read as available by time alone), runs
//! recovery for paying holds, and deletes rows past their time (see
//! `retention`). The sale loop calls [`BookingStore::sweep`] every pass.

use super::BookingStore;
use super::holds::{HOLD_COLUMNS, HoldRow, StoredHold, end_held, state};
use super::recovery::RecoveryReport;
use super::retention::PruneReport;
use crate::db::write_tx;
use crate::error::BookingError;
use crate::model::db_ms;

/// What one sweep did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SweepReport {
    /// Holds marked expired.
    pub expired: u64,
    /// What recovery did with paying holds.
    pub recovery: RecoveryReport,
    /// Rows deleted for having served their time.
    pub pruned: PruneReport,
}

/// Holds ended per transaction (bounded, so writers never wait long).
const BATCH: usize = 50;
/// Most ended holds one sweep reads.
const LIMIT: i64 = 1000;

impl BookingStore {
    /// Expires the holds whose time is up at `now_ms`, then recovers
    /// paying holds (see `recover`), then deletes rows past their time
    /// (see `prune`; once a minute).
    pub async fn sweep(&self, now_ms: u64) -> Result<SweepReport, BookingError> {
        let now = db_ms(now_ms);
        let sql = format!(
            "SELECT {HOLD_COLUMNS} FROM booking_holds WHERE state = ? AND expires_at <= ? \
             ORDER BY expires_at LIMIT {LIMIT}"
        );
        let ended: Vec<HoldRow> = sqlx::query_as::<_, StoredHold>(sqlx::AssertSqlSafe(sql))
            .bind(state::HELD)
            .bind(now)
            .fetch_all(&self.db.pool)
            .await?
            .into_iter()
            .map(HoldRow::from)
            .collect();
        let mut report = SweepReport::default();
        for batch in ended.chunks(BATCH) {
            // Locked in hold id order, as a confirm locks a visitor's holds:
            // two transactions never wait on each other in a cycle.
            let mut batch: Vec<&HoldRow> = batch.iter().collect();
            batch.sort_unstable_by(|a, b| a.hold_id.cmp(&b.hold_id));
            report.expired += write_tx!(self.db, |tx| async {
                let mut n = 0;
                for hold in &batch {
                    // Still held and still ended: a confirm may have started
                    // paying for it meanwhile under another clock.
                    if hold.expires_at <= now
                        && end_held(tx.conn(), hold, state::EXPIRED, now).await?
                    {
                        n += 1;
                    }
                }
                Ok(n)
            })?;
        }
        report.recovery = self.recover(now_ms).await?;
        report.pruned = self.prune_when_due(now_ms).await?;
        Ok(report)
    }
}
