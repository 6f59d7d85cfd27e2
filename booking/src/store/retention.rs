//! How long rows that no rule needs any more are kept, and their deletion
//! by the sweeper, a bounded batch of each kind per pass:
//! - an `Idempotency-Key`'s row (its first answer) lives [`IDEMPOTENCY_TTL`]
//!   from the key's first use: a repeat within it gets that answer (another
//!   hold or body under it is 409); after it the key is new again;
//! - a declined payment attempt (nothing was charged) lives as long;
//! - a released or expired hold without a booking and without a payment
//!   attempt left lives as long past its end.
//!
//! Bookings, their holds and payments, and attempts that failed, were
//! refunded or are still open stay: they are the money trail.
//!
//! The sweep prunes once every [`PRUNE_EVERY`] (sooner while a backlog
//! fills whole batches). Each kind is looked for with a plain read first, so
//! a pass with nothing to delete takes no write lock (on SQLite every write
//! transaction queues beside the holds of real buyers).

use std::time::Duration;

use sqlx::AssertSqlSafe;

use super::BookingStore;
use super::confirm::payment_state;
use super::holds::state;
use crate::db::{Backend, write_tx};
use crate::error::BookingError;
use crate::model::db_ms;

/// How long an idempotency key's answer is kept (a day, as common payment
/// APIs keep theirs), and so declined attempts and holds that ended without
/// a sale.
pub const IDEMPOTENCY_TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// Most rows of each kind one pass deletes: a backlog goes over a few
/// passes rather than in one long transaction.
const PRUNE_LIMIT: i64 = 1000;
/// How often the sweep prunes: rows live a day, a minute more is nothing,
/// and the reads that find them (kept holds with failed payments included)
/// need not run every pass.
const PRUNE_EVERY: Duration = Duration::from_secs(60);

/// What one pass deleted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PruneReport {
    /// Idempotency keys older than [`IDEMPOTENCY_TTL`].
    pub keys: u64,
    /// Declined payment attempts older than it.
    pub declined_payments: u64,
    /// Holds that ended without a sale more than that ago.
    pub ended_holds: u64,
}

/// One kind of row: the table and which of its rows have served their time
/// (`?` is the cutoff, repeated `cutoffs` times, after `binds`).
struct Kind {
    table: &'static str,
    filter: &'static str,
    binds: &'static [&'static str],
    cutoffs: usize,
}

const KEYS: Kind = Kind {
    table: "booking_idempotency",
    filter: "created_at < ?",
    binds: &[],
    cutoffs: 1,
};

const DECLINED: Kind = Kind {
    table: "booking_payments",
    filter: "state = ? AND updated_at < ?",
    binds: &[payment_state::DECLINED],
    cutoffs: 1,
};

/// `expires_at` leads (the `(state, expires_at)` index); a released hold
/// ended before its expiry, so it goes up to one hold length later.
const ENDED: Kind = Kind {
    table: "booking_holds",
    filter: "state IN (?, ?) AND expires_at < ? AND ended_at < ? AND booking_id IS NULL \
             AND NOT EXISTS (SELECT 1 FROM booking_payments p WHERE p.hold_id = booking_holds.hold_id)",
    binds: &[state::RELEASED, state::EXPIRED],
    cutoffs: 2,
};

impl PruneReport {
    /// Whether a kind filled its batch: more may be waiting.
    fn full(&self) -> bool {
        let limit = PRUNE_LIMIT as u64;
        self.keys >= limit || self.declined_payments >= limit || self.ended_holds >= limit
    }
}

impl BookingStore {
    /// [`BookingStore::prune`] when it is due at `now_ms`: once every
    /// [`PRUNE_EVERY`], or at once after a pass that filled a batch (or if
    /// the clock went back); else nothing.
    pub(crate) async fn prune_when_due(&self, now_ms: u64) -> Result<PruneReport, BookingError> {
        use std::sync::atomic::Ordering;
        let next = self.next_prune_ms.load(Ordering::Relaxed);
        let every = PRUNE_EVERY.as_millis() as u64;
        if now_ms < next && next - now_ms <= every {
            return Ok(PruneReport::default());
        }
        let report = self.prune(now_ms).await?;
        let next = if report.full() {
            now_ms
        } else {
            now_ms.saturating_add(every)
        };
        self.next_prune_ms.store(next, Ordering::Relaxed);
        Ok(report)
    }

    /// Deletes, at `now_ms`, at most `PRUNE_LIMIT` rows of each kind that
    /// has served its time (see the module doc). Declined attempts go
    /// before holds, so a hold whose only attempts were declines goes in
    /// the same pass.
    pub async fn prune(&self, now_ms: u64) -> Result<PruneReport, BookingError> {
        let cutoff = db_ms(now_ms).saturating_sub(db_ms(IDEMPOTENCY_TTL.as_millis() as u64));
        Ok(PruneReport {
            keys: self.prune_kind(&KEYS, cutoff).await?,
            declined_payments: self.prune_kind(&DECLINED, cutoff).await?,
            ended_holds: self.prune_kind(&ENDED, cutoff).await?,
        })
    }

    async fn prune_kind(&self, kind: &Kind, cutoff: i64) -> Result<u64, BookingError> {
        let bind = |sql: String| {
            let mut q = sqlx::query(AssertSqlSafe(sql));
            for b in kind.binds {
                q = q.bind(*b);
            }
            for _ in 0..kind.cutoffs {
                q = q.bind(cutoff);
            }
            q
        };
        let (table, filter) = (kind.table, kind.filter);
        let any = bind(format!("SELECT 1 FROM {table} WHERE {filter} LIMIT 1"))
            .fetch_optional(&self.db.pool)
            .await?;
        if any.is_none() {
            return Ok(0);
        }
        let sql = match self.db.backend {
            Backend::MySql => format!("DELETE FROM {table} WHERE {filter} LIMIT {PRUNE_LIMIT}"),
            Backend::Sqlite => format!(
                "DELETE FROM {table} WHERE rowid IN \
                 (SELECT rowid FROM {table} WHERE {filter} LIMIT {PRUNE_LIMIT})"
            ),
        };
        let deleted = write_tx!(self.db, |tx| async {
            Ok(bind(sql.clone()).execute(tx.conn()).await?.rows_affected())
        })?;
        if deleted > 0 {
            tracing::debug!(table, deleted, "booking: rows past their time deleted");
        }
        Ok(deleted)
    }
}
