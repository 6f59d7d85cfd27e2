//! The waiting room's edge: a Cloudflare Worker (Rust to wasm) in front of
//! the site. A protected request with a valid entry token goes to the
//! origin; anyone else gets the waiting page (or, for API calls, a JSON 429
//! with the queue's URLs). `/queue/*` and unprotected paths pass through.
//!
//! # Layout
//! - [`config`]: the worker's `[vars]` and secrets, parsed and checked once.
//! - [`gate`]: every decision, as the plain function [`gate::decide`].
//! - [`path`], [`http`]: path normalization, same-site targets, header parsing.
//! - [`health`]: what this isolate knows about the queue API (fail modes).
//! - [`revoked`]: the sessions this isolate ended for the site.
//! - [`page`]: the waiting page (from the shared `pages` crate) as the
//!   edge serves it.
//! - [`reply`]: the answers the edge gives itself, as plain data.
//! - `runtime` (wasm only): the glue to the Workers runtime.
//!
//! This file is the thin adapter: it turns a request into a [`gate::Input`],
//! asks [`gate::decide`], and forwards (then carries out the site's
//! command in the answer, [`gate::command`]) or answers. It holds no rule
//! itself.
//! See `docs/edge.md` for running, deploying and the settings.

pub mod config;
pub mod gate;
pub mod health;
pub mod http;
pub mod page;
pub mod path;
pub mod reply;
pub mod revoked;
#[cfg(target_arch = "wasm32")]
mod runtime;

pub use config::{ConfigError, EdgeConfig, FailMode};
pub use gate::{Decision, Input, Pass, decide};

#[cfg(target_arch = "wasm32")]
#[worker::event(fetch)]
async fn fetch(
    req: worker::Request,
    env: worker::Env,
    _ctx: worker::Context,
) -> worker::Result<worker::Response> {
    let Some(state) = runtime::state(&env) else {
        return runtime::respond(reply::Reply::misconfigured());
    };
    let seen = runtime::Seen::of(&req)?;
    let now_ms = runtime::now_ms();
    // The gate reads the sessions this isolate revoked for the site.
    let (cfg, now) = (&state.cfg, now_ms / 1000);
    let decide_with =
        |queue| runtime::with_revoked(|revoked| decide(cfg, &seen.input(now, queue, revoked)));
    let mut decision = decide_with(runtime::queue_health(now_ms));
    if decision == Decision::CheckQueue {
        // FAIL_MODE=open and nothing recent is known: ask, then decide again.
        decision = decide_with(runtime::probe(&state.cfg).await);
    }
    match decision {
        Decision::Forward(pass) => {
            let response = runtime::forward(req, &state.cfg, pass.clone()).await?;
            // The site's Waiting-Room-Command, if it sent one.
            runtime::obey(response, &state.cfg, &seen, &pass).await
        }
        other => {
            let fail_open = state.cfg.fail_mode == FailMode::Open;
            runtime::respond(
                reply::Reply::for_decision(&other, &state.page, fail_open)
                    .unwrap_or_else(reply::Reply::misconfigured),
            )
        }
    }
}
