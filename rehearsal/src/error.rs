//! The one error type of the rehearsal: what can stop a run before or
//! after the visitors play (setup, the admin API, writing the report).
//! A visitor's own failed requests are not errors of the run: they are
//! counted by kind in the report.

/// Why a rehearsal could not run or finish.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A setting makes no sense (checked before anything is sent).
    #[error("{0}")]
    Config(String),
    /// The target is not a loopback address and `--allow-remote` was not given.
    #[error("{0} is not a loopback address: pass --allow-remote to rehearse against it")]
    Remote(String),
    /// An HTTP call of the setup or the admin API failed.
    #[error("{what}: {detail}")]
    Http {
        /// Which call.
        what: String,
        /// What went wrong (status and body, or the transport error).
        detail: String,
    },
    /// Writing the report failed.
    #[error("writing {path}: {source}")]
    Write {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// Drawing the chart failed.
    #[error("drawing the chart: {0}")]
    Chart(String),
}
