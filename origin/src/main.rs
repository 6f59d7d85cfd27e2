//! The `origin` binary: configuration, start-up and graceful shutdown. All
//! the work is in the library.

use clap::Parser;
use origin::config::Config;

/// glibc's malloc fragments under tens of thousands of connections answered
/// at once (Cargo.toml says where that was measured).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(origin::telemetry::log_filter())
        .init();
    let config = Config::parse();
    match start(config).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e}");
            eprintln!("origin: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn start(config: Config) -> Result<(), Box<dyn std::error::Error>> {
    let keys = origin::keyring(&config)?;
    let identities = origin::identities(&config)?;
    let store = origin::store(&config)?;
    let clock = origin::clock::Clock::System;
    let booking = origin::booking_store(&config, &clock).await?;
    origin::apply_rooms_file(&config, store.as_ref(), Some(&booking), &clock).await?;
    origin::demo_sale(&config, store.as_ref(), &booking, &clock).await?;
    let limits = config.conn_limits();
    match origin::http::conn::raise_open_file_limit() {
        Ok(Some(files)) if files < limits.max_connections as u64 + 256 => tracing::warn!(
            open_files = files,
            max_connections = limits.max_connections,
            "the open-file limit is below --max-connections plus headroom; \
             accept may fail with `Too many open files` before the cap binds"
        ),
        Ok(files) => tracing::info!(open_files = ?files, "open-file limit"),
        Err(e) => tracing::warn!(error = %e, "cannot raise the open-file limit"),
    }
    let listener = origin::http::conn::bind(config.listen)?;
    tracing::info!(listen = %config.listen, "origin listening");
    origin::run_with(
        origin::app_state(&config, store, keys)
            .with_booking(booking)
            .with_identities(identities),
        listener,
        config.tick(),
        limits,
        shutdown_signal(),
    )
    .await?;
    tracing::info!("origin stopped");
    Ok(())
}

/// Completes on Ctrl-C or SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
    tracing::info!("shutting down");
}
