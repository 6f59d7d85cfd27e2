//! Shared by the booking tests: a fresh database per test (a `wr_test_*`
//! database on the machine's MariaDB, or a temporary SQLite file), dropped
//! at the end, a counting payment, a clock, and `both!` to run a scenario
//! on both databases. Tests of behaviour live in the `booking_*.rs` files.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use origin::booking::{
    BookingConfig, BookingStore, Payment, PaymentError, PerformanceSpec, SectionSpec,
};
use sqlx::{AnyConnection, Connection, Executor};

/// The MariaDB server the tests use (`WR_TEST_MYSQL_URL` overrides it).
pub fn mysql_server() -> String {
    std::env::var("WR_TEST_MYSQL_URL").unwrap_or_else(|_| "mysql://root@127.0.0.1:3306".into())
}

/// A start time for test clocks (2030-03-17): tests move forward from it.
pub const T0: u64 = 1_900_000_000_000;

/// Which database a test runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    MySql,
    Sqlite,
}

/// A database made for one test; dropped when the test ends (also on panic).
pub struct TestDb {
    pub kind: Kind,
    /// The URL the store connects to.
    pub url: Option<String>,
    pub sqlite_path: PathBuf,
    name: String,
    _dir: Option<tempfile_dir::TempDir>,
}

mod tempfile_dir {
    //! A temporary directory removed on drop (no extra crate needed).
    use std::path::{Path, PathBuf};

    pub struct TempDir(PathBuf);

    impl TempDir {
        pub fn new(tag: &str) -> TempDir {
            let dir = std::env::temp_dir().join(format!(
                "wr-booking-{tag}-{}-{:x}",
                std::process::id(),
                rand::random::<u64>()
            ));
            std::fs::create_dir_all(&dir).expect("temp dir");
            TempDir(dir)
        }

        pub fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

impl TestDb {
    /// A new empty database of `kind`.
    pub async fn new(kind: Kind) -> TestDb {
        let _ = tracing_subscriber::fmt()
            .with_test_writer()
            .with_env_filter("origin=info")
            .try_init();
        sqlx::any::install_default_drivers();
        let name = format!("wr_test_{:016x}", rand::random::<u64>());
        match kind {
            Kind::MySql => {
                let mut conn = AnyConnection::connect(&format!("{}/test", mysql_server()))
                    .await
                    .expect(
                        "MariaDB on 127.0.0.1:3306 (user root) must be running for booking tests",
                    );
                conn.execute(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
                    .await
                    .expect("create test database");
                conn.close().await.ok();
                TestDb {
                    kind,
                    url: Some(format!("{}/{name}", mysql_server())),
                    sqlite_path: PathBuf::new(),
                    name,
                    _dir: None,
                }
            }
            Kind::Sqlite => {
                let dir = tempfile_dir::TempDir::new(&name);
                TestDb {
                    kind,
                    url: None,
                    sqlite_path: dir.path().join("booking.sqlite"),
                    name,
                    _dir: Some(dir),
                }
            }
        }
    }

    /// A MySQL database name nobody has created yet (dropped after, if
    /// something made it).
    pub fn missing_mysql() -> TestDb {
        sqlx::any::install_default_drivers();
        let name = format!("wr_test_{:016x}", rand::random::<u64>());
        TestDb {
            kind: Kind::MySql,
            url: Some(format!("{}/{name}", mysql_server())),
            sqlite_path: PathBuf::new(),
            name,
            _dir: None,
        }
    }

    /// The configuration for this database with `payment`.
    pub fn config(&self, payment: Arc<dyn Payment>) -> BookingConfig {
        let mut config = BookingConfig::new(self.url.clone(), self.sqlite_path.clone());
        config.max_connections = if self.kind == Kind::MySql { 12 } else { 6 };
        config.payment = payment;
        config.payment_timeout = Duration::from_secs(10);
        // Bursts of thousands of calls at once queue for the pool longer
        // than a visitor's request would; these tests are about correctness.
        config.timeout = Duration::from_secs(10);
        config
    }

    /// A store on this database (migrated, recovered at `now`).
    pub async fn store(&self, payment: Arc<dyn Payment>, now: u64) -> BookingStore {
        BookingStore::connect(&self.config(payment), now)
            .await
            .expect("connect booking store")
    }

    /// A store with the counting payment.
    pub async fn store_counting(&self) -> (BookingStore, Arc<CountingPayment>) {
        let pay = Arc::new(CountingPayment::new(Duration::ZERO));
        (self.store(pay.clone(), T0).await, pay)
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        if self.kind != Kind::MySql {
            return;
        }
        let name = self.name.clone();
        // Drop runs inside the test's runtime: use a thread of our own.
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async {
                if let Ok(mut conn) =
                    AnyConnection::connect(&format!("{}/test", mysql_server())).await
                {
                    let _ = conn
                        .execute(sqlx::AssertSqlSafe(format!(
                            "DROP DATABASE IF EXISTS {name}"
                        )))
                        .await;
                    let _ = conn.close().await;
                }
            });
        })
        .join();
    }
}

/// Runs `async fn $scenario(db: &TestDb)` as two tests, `mysql` and `sqlite`.
macro_rules! both {
    ($($scenario:ident),* $(,)?) => {$(
        mod $scenario {
            use super::*;

            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn mysql() {
                let db = TestDb::new(Kind::MySql).await;
                super::$scenario(&db).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn sqlite() {
                let db = TestDb::new(Kind::Sqlite).await;
                super::$scenario(&db).await;
            }
        }
    )*};
}
pub(crate) use both;

/// A payment that succeeds (declines `tok_decline`) after `latency`, and
/// counts charges and refunds.
pub struct CountingPayment {
    pub latency: Duration,
    pub charges: AtomicU64,
    pub refunds: AtomicU64,
}

impl CountingPayment {
    pub fn new(latency: Duration) -> CountingPayment {
        CountingPayment {
            latency,
            charges: AtomicU64::new(0),
            refunds: AtomicU64::new(0),
        }
    }

    pub fn charges(&self) -> u64 {
        self.charges.load(Ordering::SeqCst)
    }

    pub fn refunds(&self) -> u64 {
        self.refunds.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl Payment for CountingPayment {
    async fn charge(
        &self,
        attempt_id: &str,
        token: &str,
        _amount: u64,
    ) -> Result<String, PaymentError> {
        self.charges.fetch_add(1, Ordering::SeqCst);
        if !self.latency.is_zero() {
            // The scenario: the payment provider's latency.
            tokio::time::sleep(self.latency).await;
        }
        if token == "tok_decline" {
            return Err(PaymentError::Declined);
        }
        Ok(format!("test_{attempt_id}"))
    }

    async fn refund(&self, _attempt_id: &str, _amount: u64) -> Result<(), PaymentError> {
        self.refunds.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

/// A performance of `sections` (name, rows, seats per row, price).
pub fn spec(sections: &[(&str, u32, u32, u64)]) -> PerformanceSpec {
    PerformanceSpec {
        title: "Test night".into(),
        starts_at: time::OffsetDateTime::from_unix_timestamp(1_900_100_000).unwrap(),
        hold_seconds: 420,
        max_seats_per_hold: 4,
        max_seats_per_account: None,
        sections: sections
            .iter()
            .map(|&(name, rows, seats_per_row, price)| SectionSpec {
                name: name.into(),
                rows,
                seats_per_row,
                price,
            })
            .collect(),
    }
}

/// Seat ids as owned strings.
pub fn seats(ids: &[&str]) -> Vec<String> {
    ids.iter().map(|s| (*s).to_owned()).collect()
}

/// The p-th percentile (0..=100) of `samples`, sorted in place.
pub fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    if samples.is_empty() {
        return Duration::ZERO;
    }
    samples.sort();
    let idx = ((samples.len() as f64 - 1.0) * p / 100.0).round() as usize;
    samples[idx.min(samples.len() - 1)]
}

impl TestDb {
    /// The URL a plain connection to this database takes.
    pub fn any_url(&self) -> String {
        self.url
            .clone()
            .unwrap_or_else(|| format!("sqlite://{}?mode=rwc", self.sqlite_path.display()))
    }

    /// A plain connection to this database, for what a test reads or
    /// writes behind the store's back.
    pub async fn raw(&self) -> AnyConnection {
        sqlx::any::install_default_drivers();
        AnyConnection::connect(&self.any_url())
            .await
            .expect("connect to the test database")
    }

    /// How many rows `table` has.
    pub async fn rows(&self, table: &str) -> i64 {
        let mut conn = self.raw().await;
        let (n,): (i64,) =
            sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT COUNT(*) FROM {table}")))
                .fetch_one(&mut conn)
                .await
                .expect("count rows");
        conn.close().await.ok();
        n
    }

    /// Applies this database's migrations older than `version` only: the
    /// schema as a database made before that migration has it.
    pub async fn migrate_before(&self, version: i64) {
        let kind = if self.kind == Kind::MySql {
            "mysql"
        } else {
            "sqlite"
        };
        let from = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../booking/migrations")
            .join(kind);
        let dir = tempfile_dir::TempDir::new("migrations");
        for entry in std::fs::read_dir(&from).expect("migrations dir") {
            let path = entry.expect("migration").path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let v: i64 = name.split('_').next().unwrap().parse().unwrap();
            if v < version {
                std::fs::copy(&path, dir.path().join(&name)).expect("copy migration");
            }
        }
        let migrator = sqlx::migrate::Migrator::new(dir.path())
            .await
            .expect("read migrations");
        let mut conn = self.raw().await;
        migrator.run(&mut conn).await.expect("older migrations");
        conn.close().await.ok();
    }
}
