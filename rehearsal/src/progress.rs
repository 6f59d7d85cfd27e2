//! The progress display while a run plays (indicatif): arrivals against
//! the planned visitors, and a line of live counts (waiting, inside,
//! booked, seats sold, errors, requests per second), redrawn twice a second.

use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::visitor::Ctx;

/// The display; hidden when not wanted (CI logs).
pub struct Progress {
    bar: ProgressBar,
    task: tokio::task::JoinHandle<()>,
}

impl Progress {
    /// Starts redrawing from the counters in `ctx`.
    pub fn start(ctx: Arc<Ctx>, visitors: u64, visible: bool) -> Progress {
        let bar = ProgressBar::with_draw_target(
            Some(visitors),
            if visible {
                ProgressDrawTarget::stderr()
            } else {
                ProgressDrawTarget::hidden()
            },
        );
        bar.set_style(
            ProgressStyle::with_template("{elapsed_precise} arrived {pos}/{len} {bar:30} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        let task = {
            let bar = bar.clone();
            tokio::spawn(async move {
                let c = &ctx.counters;
                let mut last = 0;
                let mut tick = tokio::time::interval(Duration::from_millis(500));
                loop {
                    tick.tick().await;
                    let requests = c.requests.load(Relaxed);
                    bar.set_position(c.arrived.load(Relaxed));
                    bar.set_message(format!(
                        "waiting {} inside {} booked {} seats {} errors {} req/s {}",
                        c.waiting.load(Relaxed),
                        c.inside.load(Relaxed),
                        c.booked.load(Relaxed),
                        c.seats_sold.load(Relaxed),
                        c.errors.load(Relaxed),
                        (requests - last) * 2,
                    ));
                    last = requests;
                }
            })
        };
        Progress { bar, task }
    }

    /// Stops and clears the display.
    pub fn finish(self) {
        self.task.abort();
        self.bar.finish_and_clear();
    }
}
