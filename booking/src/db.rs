//! The database handle: connecting (MySQL, or the SQLite file when no URL is
//! given), the migrations of each, and the few places the two differ
//! (locking reads, how a writer takes its lock, session settings). Write
//! transactions go through [`write_tx!`](crate::db::write_tx), which
//! commits, rolls back and retries lock contention a bounded number of times.
//!
//! Queries are runtime-checked through sqlx's `Any` driver: `?` placeholders,
//! BIGINT numbers and text ids only, so one query text serves both databases.
//! No domain rule lives here.

use std::time::Duration;

use sqlx::AnyConnection;
use sqlx::any::AnyPoolOptions;
use sqlx::{Any, AnyPool, Connection, Transaction};

use crate::error::BookingError;

/// Which database is behind the pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// MySQL or MariaDB (InnoDB).
    MySql,
    /// An SQLite file in WAL mode.
    Sqlite,
}

/// How many times a transaction that hit a deadlock, a lock wait timeout or
/// SQLite's busy is run in all, before the caller gets [`BookingError::Busy`].
const MAX_ATTEMPTS: u32 = 6;

/// The pool and what the queries need to know about the database.
pub(crate) struct Db {
    /// Reads (and, on MySQL, writes).
    pub(crate) pool: AnyPool,
    pub(crate) backend: Backend,
    /// Writes. On SQLite a pool of one connection: SQLite has one writer at
    /// a time, so writers queue here (fairly, without SQLite's sleeping
    /// busy handler, and without holding a reader's connection), then take
    /// the file's write lock up front with `BEGIN IMMEDIATE`, so a
    /// transaction that reads before it writes can never fail with "busy".
    /// On MySQL the same pool as `pool`.
    write_pool: AnyPool,
}

/// A write transaction.
pub(crate) struct WriteTx {
    tx: Transaction<'static, Any>,
}

impl WriteTx {
    /// The connection to run the transaction's statements on.
    pub(crate) fn conn(&mut self) -> &mut AnyConnection {
        &mut self.tx
    }

    pub(crate) async fn commit(self) -> Result<(), BookingError> {
        self.tx.commit().await?;
        Ok(())
    }

    /// Rolls back now, rather than when the connection is next used.
    pub(crate) async fn rollback(self) {
        if let Err(e) = self.tx.rollback().await {
            tracing::warn!(error = %e, "booking rollback failed");
        }
    }
}

impl Db {
    /// Connects, applies the database's migrations, and sets each new
    /// connection up (MySQL: READ COMMITTED, a short lock wait; SQLite: WAL).
    /// A connection is waited for at most `timeout` (then `Unavailable`):
    /// a stopped server (sqlx retries a refused connection until then), a
    /// frozen one (its idle connections are pinged before use), or a pool
    /// whose connections are all busy.
    pub(crate) async fn connect(
        url: &str,
        max_connections: u32,
        timeout: Duration,
    ) -> Result<Db, BookingError> {
        sqlx::any::install_default_drivers();
        let backend = if url.starts_with("mysql:") || url.starts_with("mariadb:") {
            Backend::MySql
        } else if url.starts_with("sqlite:") {
            Backend::Sqlite
        } else {
            return Err(BookingError::Invalid(
                "the booking database URL must start with mysql:// or sqlite:".into(),
            ));
        };
        if url.starts_with("mysql:") {
            create_if_missing(url).await?;
        }
        let pool = AnyPoolOptions::new()
            .max_connections(max_connections)
            .acquire_timeout(timeout)
            .after_connect(move |conn, _meta| {
                Box::pin(async move {
                    let setup: &[&'static str] = match backend {
                        // READ COMMITTED: no gap locks, so claims of different
                        // seats never block each other; every decision here is
                        // a conditional UPDATE or a unique key, which need no
                        // repeatable snapshot.
                        Backend::MySql => &[
                            "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED",
                            // Our transactions hold row locks for a few
                            // statements: waiting 5 s means something is
                            // stuck, and the retry loop takes over (1205).
                            "SET SESSION innodb_lock_wait_timeout = 5",
                        ],
                        Backend::Sqlite => &[
                            "PRAGMA journal_mode = WAL",
                            "PRAGMA busy_timeout = 5000",
                            // WAL with NORMAL: a commit survives the
                            // process dying (the crash tests); power loss
                            // may lose the last commits, never corrupts.
                            // A lost payment record is then refunded by
                            // recovery, never a paid hold without ticket.
                            "PRAGMA synchronous = NORMAL",
                        ],
                    };
                    for stmt in setup {
                        sqlx::query(*stmt).execute(&mut *conn).await?;
                    }
                    Ok(())
                })
            })
            .connect(url)
            .await
            .map_err(|e| {
                tracing::error!(error = %e, "cannot connect to the booking database");
                BookingError::Unavailable
            })?;
        let migrated = match backend {
            Backend::MySql => sqlx::migrate!("migrations/mysql").run(&pool).await,
            Backend::Sqlite => sqlx::migrate!("migrations/sqlite").run(&pool).await,
        };
        migrated.map_err(|e| {
            tracing::error!(error = %e, "booking migrations failed");
            BookingError::Unavailable
        })?;
        let write_pool = match backend {
            Backend::MySql => pool.clone(),
            Backend::Sqlite => AnyPoolOptions::new()
                .max_connections(1)
                .acquire_timeout(Duration::from_secs(30))
                .after_connect(|conn, _meta| {
                    Box::pin(async move {
                        sqlx::query("PRAGMA busy_timeout = 5000")
                            .execute(&mut *conn)
                            .await?;
                        sqlx::query("PRAGMA synchronous = NORMAL")
                            .execute(&mut *conn)
                            .await?;
                        Ok(())
                    })
                })
                .connect(url)
                .await
                .map_err(|e| {
                    tracing::error!(error = %e, "cannot connect to the booking database");
                    BookingError::Unavailable
                })?,
        };
        Ok(Db {
            pool,
            backend,
            write_pool,
        })
    }

    /// Starts a write transaction (on SQLite after this process's earlier
    /// writers, with the file's write lock taken up front).
    pub(crate) async fn begin(&self) -> Result<WriteTx, BookingError> {
        let tx = match self.backend {
            Backend::MySql => self.write_pool.begin().await?,
            Backend::Sqlite => self.write_pool.begin_with("BEGIN IMMEDIATE").await?,
        };
        Ok(WriteTx { tx })
    }

    /// The suffix of a locking read: `FOR UPDATE` on MySQL; SQLite's
    /// `BEGIN IMMEDIATE` already holds the only write lock.
    pub(crate) fn for_update(&self) -> &'static str {
        match self.backend {
            Backend::MySql => " FOR UPDATE",
            Backend::Sqlite => "",
        }
    }

    /// Waits a little before retry `attempt` (1, 2, …): exponential with
    /// jitter, so transactions that collided do not collide again in step.
    pub(crate) async fn backoff(&self, attempt: u32) {
        let base = 2u64 << attempt.min(6);
        let jitter = rand::random::<u64>() % base.max(1);
        tokio::time::sleep(Duration::from_millis(base + jitter)).await;
    }

    /// Closes the pool (tests reconnect to the same database).
    pub(crate) async fn close(&self) {
        self.write_pool.close().await;
        self.pool.close().await;
    }

    /// Whether another attempt is allowed after `attempt` failed.
    pub(crate) fn may_retry(attempt: u32) -> bool {
        attempt < MAX_ATTEMPTS
    }

    /// Checks that the database answers (`SELECT 1`).
    pub(crate) async fn ping(&self) -> Result<(), BookingError> {
        let mut conn = self.pool.acquire().await?;
        conn.ping().await?;
        Ok(())
    }
}

/// `n` comma-separated `?` placeholders, for an `IN (…)` list.
pub(crate) fn marks(n: usize) -> String {
    let mut s = String::with_capacity(n * 3);
    for i in 0..n {
        if i > 0 {
            s.push_str(", ");
        }
        s.push('?');
    }
    s
}

/// Runs `$body` (an expression using the transaction `$tx`, a
/// `&mut WriteTx`) in a write transaction: commit on `Ok`, roll back on
/// `Err`, and run it again from the start on lock contention, a bounded
/// number of times (then [`BookingError::Busy`]).
macro_rules! write_tx {
    ($db:expr, |$tx:ident| $body:expr) => {{
        let db = &$db;
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            let result: Result<_, $crate::error::BookingError> = async {
                let mut tx = db.begin().await?;
                let out = {
                    let $tx = &mut tx;
                    $body.await
                };
                match out {
                    Ok(v) => {
                        tx.commit().await?;
                        Ok(v)
                    }
                    Err(e) => {
                        tx.rollback().await;
                        Err(e)
                    }
                }
            }
            .await;
            match result {
                Err(e) if e.is_retryable() && $crate::db::Db::may_retry(attempt) => {
                    db.backoff(attempt).await;
                }
                other => break other,
            }
        }
    }};
}
pub(crate) use write_tx;

/// Creates the MySQL database `url` names when the server has no such
/// database, so a first start needs no `CREATE DATABASE` by hand; a server
/// that refuses (no such right) is told in the log with what to run.
async fn create_if_missing(url: &str) -> Result<(), BookingError> {
    use sqlx::migrate::MigrateDatabase;
    match sqlx::MySql::database_exists(url).await {
        Ok(true) => Ok(()),
        Ok(false) => sqlx::MySql::create_database(url).await.map_err(|e| {
            tracing::error!(
                error = %e,
                "the booking database does not exist and could not be created: \
                 create it (CREATE DATABASE <name>) or give a user that may"
            );
            BookingError::Unavailable
        }),
        // Unreachable or refused: the pool's connect below says so, and
        // waits for a server that is still starting.
        Err(_) => Ok(()),
    }
}
