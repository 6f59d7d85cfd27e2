//! A MariaDB database of one benchmark run's own: made at the start under a
//! random name, dropped at the end, so runs never meet each other's rows.

use sqlx::{AnyConnection, Connection, Executor};

/// A database made for this run on a MariaDB server.
pub struct ScratchDb {
    admin: AnyConnection,
    name: String,
    /// The database's URL, for the booking store.
    pub url: String,
}

impl ScratchDb {
    /// Makes `wr_bench_<random>` on `server` (`mysql://user@host:port`,
    /// reached through its `test` database).
    pub async fn create(server: &str) -> ScratchDb {
        let name = format!("wr_bench_{:x}", rand::random::<u32>());
        let mut admin = AnyConnection::connect(&format!("{server}/test"))
            .await
            .expect("MariaDB");
        admin
            .execute(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .await
            .expect("create database");
        ScratchDb {
            url: format!("{server}/{name}"),
            admin,
            name,
        }
    }

    /// Drops the database (close the stores on it first).
    pub async fn drop_database(mut self) {
        self.admin
            .execute(sqlx::AssertSqlSafe(format!("DROP DATABASE {}", self.name)))
            .await
            .expect("drop database");
    }
}
