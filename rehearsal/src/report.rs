//! The report: every figure the run shows, computed from the visitors'
//! logs and the operator's samples (pure; `chart.rs` draws it, `main.rs`
//! writes it), and the checks that say whether the on-sale held. A run
//! whose visitors share accounts has its own figures (`accounts`), as
//! has one in a room with a join challenge, or with bots (`challenge`).
//! Whether the status's `outlook` told the truth is judged in `outlook`.

pub mod accounts;
pub mod challenge;
pub mod notice;
pub mod outlook;

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::Serialize;

use crate::admin::{Live, Seats};
use crate::draw;
use crate::stats::{self, Admission, Spread};
use crate::visitor::{Outcome, Outlook, VisitorLog};

/// Errors the scenario causes on purpose (declined cards, seats taken by
/// someone faster, an account's seat limit); every other failed answer is
/// unexpected.
pub const EXPECTED_ERRORS: [&str; 3] = [
    "402 payment_declined",
    "409 seat_unavailable",
    "409 account_limit",
];
/// Waiters must read `sold_out` this soon after the last seat is sold.
pub const SOLD_OUT_NOTICE_MS: u64 = 2_000;
/// ETA accuracy is judged on visitors who waited longer than this.
pub const LONG_WAIT_MS: u64 = 30_000;

/// One sample of the operator's view.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Sample {
    /// Seconds after the run's zero.
    pub t: f64,
    /// The room's live figures.
    #[serde(flatten)]
    pub live: Live,
    /// The performance's seats.
    pub seats: Seats,
}

/// What the report is computed from, besides the logs.
pub struct Inputs<'a> {
    /// The visitors' logs.
    pub logs: &'a [VisitorLog],
    /// The operator's samples, in time order.
    pub samples: &'a [Sample],
    /// When the room opened (ms after zero; 0 without a pre-queue).
    pub opens_ms: u64,
    /// The room's configured admit rate.
    pub admit_per_second: f64,
    /// The room's capacity.
    pub capacity: u64,
    /// Seats on sale.
    pub seats_total: u64,
    /// How long the run took, in ms.
    pub duration_ms: u64,
    /// Visitors planned.
    pub planned: usize,
    /// Whether the room had a pre-queue (order is then the draw's).
    pub prequeue: bool,
    /// The room's draw as the route told it before the first arrival and
    /// after the run, when the room had a pre-queue.
    pub draw: Option<(draw::Published, draw::Published)>,
    /// How long a hold lasts, seconds.
    pub hold_seconds: u64,
    /// The room's adaptive admission target, if on.
    pub target_booking_p99_ms: Option<u64>,
    /// When the payment was slowed (seconds after zero: from, to), if it was.
    pub slow_payment_s: Option<(f64, f64)>,
    /// The accounts the visitors are browsers of, if they are.
    pub accounts: Option<accounts::Plan>,
    /// The room's challenge and the bots, when either is in play.
    pub challenge: Option<challenge::Plan>,
    /// The bots' logs (none without `--bots`).
    pub bot_logs: &'a [crate::bots::BotLog],
    /// When the operator's resume of a paused room was sent and answered
    /// (ms after zero), in a run that paused it.
    pub resumed_ms: Option<(u64, u64)>,
}

/// The whole report (written as JSON).
#[derive(Debug, Serialize)]
pub struct Report {
    /// What was played: target, room, scenario (filled by main).
    pub scenario: serde_json::Value,
    /// Run length, seconds.
    pub duration_s: f64,
    /// Who did what.
    pub visitors: Visitors,
    /// Admissions per second over time against the configured rate.
    pub admissions: Admissions,
    /// Waits from join to admission, seconds.
    pub wait_s: Spread,
    /// How many waited 0-1 s, 1-2 s, ... (one bucket per `wait_bucket_s`).
    pub wait_histogram: Vec<u64>,
    /// Width of a wait-histogram bucket, seconds.
    pub wait_bucket_s: f64,
    /// ETA against the real wait.
    pub eta: Eta,
    /// What polling cost.
    pub polling: Polling,
    /// Join order against admission order.
    pub fairness: Fairness,
    /// The pre-queue draw, checked: commitment, seed, the order recomputed.
    pub draw: Option<draw::DrawReport>,
    /// The accounts' figures, when the visitors are browsers of accounts.
    pub accounts: Option<accounts::Accounts>,
    /// The join challenge's figures: people's solving, bots' places.
    pub challenge: Option<challenge::Challenge>,
    /// Inside against capacity.
    pub capacity: Capacity,
    /// Seats.
    pub seats: SeatsReport,
    /// Holds and how each ended.
    pub holds: Holds,
    /// Adaptive admission at work (rooms with a target, or a run that
    /// slowed the payment).
    pub adaptive: Option<Adaptive>,
    /// How soon waiters learnt it was sold out.
    pub sold_out_notice: Notice,
    /// How soon waiters learnt they were let in.
    pub admission_notice: notice::AdmissionNotice,
    /// How soon waiters learnt the room was resumed (a run that paused it).
    pub resume_notice: Option<notice::ResumeNotice>,
    /// Failed answers by kind, all of them.
    pub errors: BTreeMap<String, u64>,
    /// Failed answers the scenario did not cause.
    pub unexpected_errors: BTreeMap<String, u64>,
    /// The operator's samples: line, inside, seats over time.
    pub timeline: Vec<Sample>,
    /// The origin's `/metrics` at the end (the waiting room's own lines).
    pub metrics: Vec<String>,
    /// The must-show figures, each with its target.
    pub checks: Vec<Check>,
    /// Whether the status's `outlook` told the truth (when the origin
    /// sends one).
    pub outlook: Option<outlook::Outlooks>,
}

/// Who did what.
#[derive(Debug, Serialize)]
pub struct Visitors {
    /// Planned.
    pub planned: usize,
    /// Got a place (or an answer) from a join.
    pub joined: usize,
    /// Admitted.
    pub admitted: usize,
    /// How visits ended.
    pub outcomes: BTreeMap<String, usize>,
}

/// Admissions over time.
#[derive(Debug, Serialize)]
pub struct Admissions {
    /// The room's setting.
    pub configured_per_second: f64,
    /// Per second of the run (from the origin's `admitted_total`): index = second.
    pub per_second: Vec<f64>,
    /// Per second, as the visitors saw it (first admitted answer).
    pub seen_per_second: Vec<u64>,
    /// The highest second.
    pub peak_per_second: f64,
}

/// ETA accuracy.
#[derive(Debug, Serialize)]
pub struct Eta {
    /// By the visitor's whole wait.
    pub by_wait: Vec<EtaBucket>,
    /// p50 of the first promise's error, visitors who waited over 30 s.
    pub first_p50_over_30s: f64,
    /// p50 of every promise's error, visitors who waited over 30 s.
    pub all_p50_over_30s: f64,
}

/// ETA errors (|eta − wait| / wait) of the visitors whose whole wait was in a range.
#[derive(Debug, Serialize)]
pub struct EtaBucket {
    /// The range, seconds.
    pub wait_from_s: u64,
    /// Its end (exclusive), seconds; `None`: no end.
    pub wait_to_s: Option<u64>,
    /// Visitors admitted after a wait in the range, told a time or not (a
    /// waiter whose seats were in doubt is told none).
    pub admitted: u64,
    /// Of them, those told no time although told at some point that seats
    /// were `likely` left: none is expected where nothing else hides it
    /// (see [`eta_check`]).
    pub untold_likely: u64,
    /// The first ETA each was shown.
    pub first: Spread,
    /// Every ETA shown, each against the wait that followed it.
    pub all: Spread,
}

/// What polling cost the origin.
#[derive(Debug, Serialize)]
pub struct Polling {
    /// Joins and statuses sent by visitors not yet admitted.
    pub queue_requests: u64,
    /// Seconds spent waiting, summed over visitors.
    pub waiting_visitor_seconds: f64,
    /// The first over the second: requests per second per waiting visitor.
    pub requests_per_second_per_waiter: f64,
}

/// Join order against admission order.
#[derive(Debug, Serialize)]
pub struct Fairness {
    /// Which order: `ticket_seq` (join order, read off the signed ticket),
    /// `draw` (pre-queue: the draw recomputed from the seed the room told
    /// at the opening and the tickets' seqs, then later joins by seq), or `join_answer` (no keys: the order
    /// the joins were answered, an approximation); over accounts,
    /// `account_place_seq` (each account's place, its seq).
    pub order: &'static str,
    /// Admitted visitors (or accounts' places) compared.
    pub admitted: usize,
    /// Pairs among them.
    pub pairs: u64,
    /// Pairs proven admitted out of order by what visitors read.
    pub out_of_order_pairs: u64,
    /// Visitors in at least one such pair, the later one.
    pub out_of_order_visitors: u64,
    /// Kendall's tau, join order against admission order (1.0 = exact FIFO).
    pub kendall_tau: f64,
    /// Kendall's tau against the order visitors *saw* their admission (their
    /// first admitted answer): poll lag reorders near-simultaneous
    /// admissions, so this is a lower bound, shown for comparison.
    pub kendall_tau_seen: f64,
}

/// Inside against capacity.
#[derive(Debug, Serialize)]
pub struct Capacity {
    /// The room's setting.
    pub capacity: u64,
    /// Most inside in one sample.
    pub peak_active: u64,
    /// Samples taken.
    pub samples: usize,
    /// Samples with more inside than the capacity.
    pub samples_over_capacity: usize,
}

/// Seats.
#[derive(Debug, Serialize)]
pub struct SeatsReport {
    /// On sale.
    pub total: u64,
    /// Booked at the end (the origin's count).
    pub booked: u64,
    /// Held at the end.
    pub held: u64,
    /// Available at the end.
    pub available: u64,
    /// Seats in the visitors' confirmed bookings.
    pub sold_to_visitors: u64,
    /// Seats in two confirmed bookings, plus any booked past the total.
    pub oversold: u64,
    /// When the last seat was sold, seconds after the opening.
    pub time_to_sell_out_s: Option<f64>,
}

/// Holds and how each ended: a hold the visitor let run out on purpose
/// (a walk-away) is told apart from one that ran out while it was buying.
#[derive(Debug, Default, PartialEq, Serialize)]
pub struct Holds {
    /// How long a hold lasts, seconds.
    pub hold_seconds: u64,
    /// Holds granted.
    pub taken: usize,
    /// Ended in a booking.
    pub booked: usize,
    /// Let run out on purpose (the visitor walked away).
    pub let_run_out: usize,
    /// Ran out while the visitor was buying: the confirm answered
    /// `hold_expired`, or the session ended with the hold unpaid. Booking
    /// too slow for the hold's time shows here.
    pub ran_out_while_buying: usize,
    /// Ended with the session another browser of the visitor's account
    /// ended by booking (or leaving) the place they share.
    pub ended_by_account: usize,
    /// Still unpaid when the visitor gave up after failed answers or the
    /// run's time ran out.
    pub unfinished: usize,
    /// From the hold granted to the booking confirmed, seconds.
    pub hold_to_booking_s: Spread,
}

/// Adaptive admission at work: the factor the origin applied to the
/// configured rate (from the operator's samples) against what booking's
/// latency did.
#[derive(Debug, Serialize)]
pub struct Adaptive {
    /// The room's target for booking's p99, ms.
    pub target_booking_p99_ms: Option<u64>,
    /// When the payment was slowed, seconds after zero.
    pub slow_from_s: Option<f64>,
    /// When it was fast again.
    pub slow_to_s: Option<f64>,
    /// p99 of the booking calls answered in each second, ms, as the
    /// visitors saw them (index = second; null: none answered).
    pub booking_p99_ms_per_second: Vec<Option<f64>>,
    /// The lowest factor sampled (in the slow window and just after, if any).
    pub lowest_factor: f64,
    /// The first sample below 1 (from the slow window's start, if any).
    pub fell_at_s: Option<f64>,
    /// The first sample at the lowest factor.
    pub lowest_at_s: Option<f64>,
    /// The first sample back at 1 after the lowest.
    pub recovered_at_s: Option<f64>,
    /// Other falls from 1, before the fall or after the recovery: booking
    /// slow for other reasons (the machine's own load).
    pub other_dips: usize,
    /// Admissions per second (origin's count), mean over each phase.
    pub admitted_per_second: Phases,
}

/// Mean admissions per second before, during and after a slowdown.
#[derive(Debug, Default, PartialEq, Serialize)]
pub struct Phases {
    /// Before the factor fell.
    pub before: f64,
    /// From the fall to the recovery.
    pub slowed: f64,
    /// The highest second after the recovery.
    pub peak_after_recovery: f64,
}

/// How soon waiters learnt it was sold out.
#[derive(Debug, Serialize)]
pub struct Notice {
    /// Waiting when the last seat was sold.
    pub waiting_at_sell_out: usize,
    /// Of those, told `sold_out` within 2 s.
    pub told_within_2s: usize,
    /// Of those, told at all.
    pub told: usize,
    /// How long after the last seat they were told, seconds.
    pub delay_s: Spread,
    /// The same for those told by a poll sent before the last seat sold
    /// (held, or on its way), ...
    pub asked_before_s: Spread,
    /// ... and for those who asked after it: they were between two polls,
    /// so the delay is mostly their poll interval.
    pub asked_after_s: Spread,
    /// Those never told, by how their visit ended.
    pub untold: BTreeMap<Outcome, usize>,
    /// Of the untold, admitted (as their poll said) after the last seat.
    pub untold_admitted_after: usize,
}

/// One must-show figure.
#[derive(Debug, Serialize)]
pub struct Check {
    /// What.
    pub name: String,
    /// The target.
    pub target: String,
    /// What the run showed.
    pub value: String,
    /// Met.
    pub ok: bool,
    /// An invariant that must hold whatever the machine's speed (order,
    /// capacity, seats, errors), as opposed to a timing target (sold out,
    /// notice, ETA); `--check` judges invariants only.
    pub invariant: bool,
}

/// Computes the report.
pub fn build(inp: &Inputs, scenario: serde_json::Value, metrics: Vec<String>) -> Report {
    let logs = inp.logs;
    let admitted: Vec<&VisitorLog> = logs.iter().filter(|l| l.admitted_ms.is_some()).collect();
    let mut outcomes = BTreeMap::new();
    for l in logs {
        *outcomes.entry(format!("{:?}", l.outcome)).or_insert(0) += 1;
    }

    // Admissions per second: the origin's counter, differenced per second.
    let secs = (inp.duration_ms / 1000 + 1) as usize;
    let mut per_second = vec![0.0; secs];
    let at = |t: f64| admitted_at(inp.samples, t);
    for (s, v) in per_second.iter_mut().enumerate() {
        *v = at(s as f64 + 1.0) - at(s as f64);
    }
    let mut seen_per_second = vec![0u64; secs];
    for l in &admitted {
        if let Some(a) = l.admitted_ms
            && let Some(seen) = seen_per_second.get_mut((a / 1000) as usize)
        {
            *seen += 1;
        }
    }
    let peak_per_second = per_second.iter().copied().fold(0.0, f64::max);

    // Waits.
    let waits: Vec<f64> = admitted
        .iter()
        .filter_map(|l| Some((l.admitted_ms? - l.joined_ms?.min(l.admitted_ms?)) as f64 / 1000.0))
        .collect();
    let max_wait = waits.iter().copied().fold(0.0, f64::max);
    let wait_bucket_s = if max_wait <= 60.0 {
        1.0
    } else {
        (max_wait / 60.0).ceil()
    };
    let mut wait_histogram = vec![0u64; (max_wait / wait_bucket_s) as usize + 1];
    for w in &waits {
        // No wait exceeds max_wait, so every bucket exists.
        if let Some(bucket) = wait_histogram.get_mut((w / wait_bucket_s) as usize) {
            *bucket += 1;
        }
    }

    // ETA.
    let bounds: [(u64, Option<u64>); 5] = [
        (0, Some(10)),
        (10, Some(30)),
        (30, Some(60)),
        (60, Some(120)),
        (120, None),
    ];
    let mut by_wait = Vec::new();
    let (mut first_long, mut all_long) = (Vec::new(), Vec::new());
    for (from, to) in bounds {
        let (mut first, mut all, mut count, mut untold_likely) = (Vec::new(), Vec::new(), 0, 0);
        for l in &admitted {
            let (Some(a), Some(j)) = (l.admitted_ms, l.joined_ms) else {
                continue;
            };
            let wait = a.saturating_sub(j);
            if wait < from * 1000 || to.is_some_and(|t| wait >= t * 1000) {
                continue;
            }
            count += 1;
            if l.promises.is_empty() && l.outlooks.iter().any(|&(_, o)| o == Some(Outlook::Likely))
            {
                untold_likely += 1;
            }
            if let Some(&(shown, eta)) = l.promises.first()
                && let Some(e) = stats::eta_error(eta, a.saturating_sub(shown))
            {
                first.push(e);
                if wait > LONG_WAIT_MS {
                    first_long.push(e);
                }
            }
            for &(shown, eta) in &l.promises {
                if let Some(e) = stats::eta_error(eta, a.saturating_sub(shown)) {
                    all.push(e);
                    if wait > LONG_WAIT_MS {
                        all_long.push(e);
                    }
                }
            }
        }
        by_wait.push(EtaBucket {
            wait_from_s: from,
            wait_to_s: to,
            admitted: count,
            untold_likely,
            first: stats::spread(first),
            all: stats::spread(all),
        });
    }
    let eta = Eta {
        by_wait,
        first_p50_over_30s: stats::spread(first_long).p50,
        all_p50_over_30s: stats::spread(all_long).p50,
    };

    // Polling.
    let queue_requests: u64 = logs.iter().map(|l| l.queue_requests).sum();
    let waiting_visitor_seconds: f64 = logs
        .iter()
        .filter_map(|l| Some(l.left_line_ms?.saturating_sub(l.joined_ms?) as f64 / 1000.0))
        .sum();
    let polling = Polling {
        queue_requests,
        waiting_visitor_seconds,
        requests_per_second_per_waiter: if waiting_visitor_seconds > 0.0 {
            queue_requests as f64 / waiting_visitor_seconds
        } else {
            0.0
        },
    };

    let fairness = fairness(inp, &admitted);
    let (accounts, unexplained_ends) = match &inp.accounts {
        Some(plan) => {
            let (a, e) = accounts::build(plan, logs, inp.prequeue);
            (Some(a), e)
        }
        None => (None, BTreeMap::new()),
    };

    let capacity = Capacity {
        capacity: inp.capacity,
        peak_active: inp.samples.iter().map(|s| s.live.active).max().unwrap_or(0),
        samples: inp.samples.len(),
        samples_over_capacity: inp
            .samples
            .iter()
            .filter(|s| s.live.active > inp.capacity)
            .count(),
    };

    // Seats.
    let mut seen = HashSet::new();
    let mut duplicates = 0u64;
    let mut sold_to_visitors = 0u64;
    let mut last_sold: Option<u64> = None;
    for l in logs {
        if let Some((t, seats)) = &l.booked {
            for s in seats {
                sold_to_visitors += 1;
                if !seen.insert(s.clone()) {
                    duplicates += 1;
                }
            }
            last_sold = last_sold.max(Some(*t));
        }
    }
    let end = inp.samples.last().map(|s| s.seats).unwrap_or_default();
    let sold_out = end.booked >= inp.seats_total || sold_to_visitors >= inp.seats_total;
    let last_seat_ms = if sold_out { last_sold } else { None };
    let seats = SeatsReport {
        total: inp.seats_total,
        booked: end.booked,
        held: end.held,
        available: end.available,
        sold_to_visitors,
        oversold: duplicates + end.booked.saturating_sub(inp.seats_total),
        time_to_sell_out_s: last_seat_ms.map(|t| t.saturating_sub(inp.opens_ms) as f64 / 1000.0),
    };

    // Sold-out notice: everyone still in line when the last seat went.
    let notice = match last_seat_ms {
        Some(t) => {
            let at_sell_out: Vec<&VisitorLog> = logs
                .iter()
                // Who closed the tab could not be told anything.
                .filter(|l| {
                    l.joined_ms.is_some_and(|j| j <= t)
                        && l.left_line_ms.is_none_or(|e| e > t)
                        && l.outcome != Outcome::Abandoned
                })
                .collect();
            let delay =
                |l: &&VisitorLog| l.sold_out_ms.map(|s| s.saturating_sub(t) as f64 / 1000.0);
            let delays: Vec<f64> = at_sell_out.iter().filter_map(delay).collect();
            let (before, after): (Vec<&VisitorLog>, Vec<&VisitorLog>) = at_sell_out
                .iter()
                .copied()
                .partition(|l| l.sold_out_asked_ms.is_some_and(|a| a <= t));
            Notice {
                waiting_at_sell_out: at_sell_out.len(),
                told_within_2s: delays
                    .iter()
                    .filter(|d| **d * 1000.0 <= SOLD_OUT_NOTICE_MS as f64)
                    .count(),
                told: delays.len(),
                delay_s: stats::spread(delays),
                asked_before_s: stats::spread(before.iter().filter_map(delay).collect()),
                asked_after_s: stats::spread(after.iter().filter_map(delay).collect()),
                untold: at_sell_out.iter().filter(|l| l.sold_out_ms.is_none()).fold(
                    BTreeMap::new(),
                    |mut by, l| {
                        *by.entry(l.outcome).or_insert(0) += 1;
                        by
                    },
                ),
                untold_admitted_after: at_sell_out
                    .iter()
                    .filter(|l| l.sold_out_ms.is_none() && l.admitted_ms.is_some_and(|a| a > t))
                    .count(),
            }
        }
        None => Notice {
            waiting_at_sell_out: 0,
            told_within_2s: 0,
            told: 0,
            delay_s: Spread::default(),
            asked_before_s: Spread::default(),
            asked_after_s: Spread::default(),
            untold: BTreeMap::new(),
            untold_admitted_after: 0,
        },
    };

    let holds = holds(logs, inp.hold_seconds);
    let adaptive = (inp.target_booking_p99_ms.is_some() || inp.slow_payment_s.is_some())
        .then(|| adaptive(inp, &per_second));

    // Answers that said a place had ended that no booking of its account
    // explains are failed answers like any other.
    let mut errors = unexplained_ends;
    for l in logs {
        for (k, n) in &l.errors {
            *errors.entry(k.clone()).or_insert(0) += n;
        }
    }
    let unexpected_errors: BTreeMap<String, u64> = errors
        .iter()
        .filter(|(k, _)| !EXPECTED_ERRORS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), *v))
        .collect();

    let mut report = Report {
        scenario,
        duration_s: inp.duration_ms as f64 / 1000.0,
        visitors: Visitors {
            planned: inp.planned,
            joined: logs.iter().filter(|l| l.joined_ms.is_some()).count(),
            admitted: admitted.len(),
            outcomes,
        },
        admissions: Admissions {
            configured_per_second: inp.admit_per_second,
            per_second,
            seen_per_second,
            peak_per_second,
        },
        wait_s: stats::spread(waits),
        wait_histogram,
        wait_bucket_s,
        eta,
        polling,
        fairness,
        draw: inp.draw.as_ref().map(|(before, after)| draw::DrawReport {
            commitment_before: before.commitment.clone(),
            after: after.clone(),
            commitment_kept: before.commitment == after.commitment
                && after
                    .seed
                    .as_deref()
                    .is_some_and(|seed| draw::opens(&before.commitment, seed)),
            prequeue: logs
                .iter()
                .filter(|l| l.joined_unplaced && l.seq.is_some())
                .count(),
        }),
        accounts,
        challenge: inp
            .challenge
            .as_ref()
            .map(|plan| challenge::build(plan, logs, inp.bot_logs)),
        capacity,
        seats,
        holds,
        adaptive,
        sold_out_notice: notice,
        admission_notice: notice::build(logs),
        resume_notice: inp
            .resumed_ms
            .map(|(sent, back)| notice::resume(logs, sent, back)),
        errors,
        unexpected_errors,
        timeline: inp.samples.to_vec(),
        metrics,
        checks: Vec::new(),
        outlook: outlook::build(logs, inp.opens_ms, secs),
    };
    report.checks = checks(&report, last_seat_ms.is_some());
    if let Some(o) = &report.outlook {
        report.checks.extend(outlook::checks(o));
    }
    report
}

/// The origin's `admitted_total` at `t` seconds, interpolated between the
/// samples around it (a gap in the samples, when the admin API answered
/// slowly, spreads its admissions over the gap instead of piling them
/// into one second).
pub fn admitted_at(samples: &[Sample], t: f64) -> f64 {
    let i = samples.partition_point(|s| s.t <= t);
    let v = |s: &Sample| s.live.admitted_total as f64;
    let prev = i.checked_sub(1).and_then(|k| samples.get(k));
    match (prev, samples.get(i)) {
        (None, _) => 0.0,
        (Some(prev), None) => v(prev),
        (Some(prev), Some(next)) => {
            let (t0, t1) = (prev.t, next.t);
            if t1 <= t0 {
                v(prev)
            } else {
                v(prev) + (v(next) - v(prev)) * (t - t0) / (t1 - t0)
            }
        }
    }
}

/// Every hold the visitors took, by how it ended.
pub fn holds(logs: &[VisitorLog], hold_seconds: u64) -> Holds {
    let mut h = Holds {
        hold_seconds,
        ..Holds::default()
    };
    let mut to_booking = Vec::new();
    let ends = accounts::place_ends(logs);
    for l in logs {
        let Some(held) = l.held_ms else { continue };
        h.taken += 1;
        match l.outcome {
            Outcome::Booked => {
                h.booked += 1;
                if let Some((at, _)) = &l.booked {
                    to_booking.push(at.saturating_sub(held) as f64 / 1000.0);
                }
            }
            Outcome::LetHoldExpire => h.let_run_out += 1,
            Outcome::HoldExpired | Outcome::SessionEnded
                if accounts::ended_by_account(
                    &ends,
                    l.account,
                    l.seq,
                    l.ended_ms.unwrap_or(u64::MAX),
                ) =>
            {
                h.ended_by_account += 1
            }
            Outcome::HoldExpired | Outcome::SessionEnded => h.ran_out_while_buying += 1,
            // Nobody holds seats while waiting, abandoning or reading
            // sold_out; those outcomes cannot follow a hold.
            Outcome::TimedOut
            | Outcome::Failed
            | Outcome::Abandoned
            | Outcome::SoldOut
            | Outcome::Closed
            | Outcome::NoSeat
            | Outcome::AccountLimit => h.unfinished += 1,
        }
    }
    h.hold_to_booking_s = stats::spread(to_booking);
    h
}

/// The p99 of the booking calls answered in each second of a run `secs` long.
pub fn booking_p99_per_second(logs: &[VisitorLog], secs: usize) -> Vec<Option<f64>> {
    let mut by_second: Vec<Vec<f64>> = vec![Vec::new(); secs];
    for l in logs {
        for &(at, took) in &l.booking_calls {
            if let Some(b) = by_second.get_mut((at / 1000) as usize) {
                b.push(f64::from(took));
            }
        }
    }
    by_second
        .into_iter()
        .map(|mut b| {
            b.sort_by(f64::total_cmp);
            (!b.is_empty()).then(|| stats::percentile(&b, 99.0))
        })
        .collect()
}

/// How long after the payment is fast again its slow answers may still
/// hold the factor down: the origin measures booking's p99 over the last
/// 5 s (`origin/src/sale.rs`), and a slow call in flight at the end of
/// the window still answers up to its latency later.
const MEASURE_LAG_S: f64 = 7.0;

/// The factor's course over the samples, and the admissions of each phase.
/// With a slow window, the fall and the lowest point are looked for from
/// its start (to its end plus [`MEASURE_LAG_S`]), so a dip the machine's
/// own load caused earlier is not taken for the answer to the slowdown;
/// such dips are counted apart.
fn adaptive(inp: &Inputs, per_second: &[f64]) -> Adaptive {
    let samples = inp.samples;
    const ONE: f64 = 1.0 - 1e-9;
    let (from, until) = match inp.slow_payment_s {
        Some((from, to)) => (from, to + MEASURE_LAG_S),
        None => (0.0, f64::MAX),
    };
    let in_window = |s: &&Sample| s.t >= from && s.t <= until;
    let lowest_factor = samples
        .iter()
        .filter(in_window)
        .map(|s| s.live.rate_factor)
        .fold(1.0, f64::min);
    let fell_at_s = samples
        .iter()
        .filter(in_window)
        .find(|s| s.live.rate_factor < ONE)
        .map(|s| s.t);
    let lowest_at = samples.iter().position(|s| {
        in_window(&s) && s.live.rate_factor <= lowest_factor && s.live.rate_factor < ONE
    });
    let recovered_at_s = lowest_at.and_then(|i| {
        samples
            .get(i..)?
            .iter()
            .find(|s| s.live.rate_factor >= ONE)
            .map(|s| s.t)
    });
    // Falls from 1 outside [fall, recovery]: the machine's own slowness.
    let (span_from, span_to) = (
        fell_at_s.unwrap_or(f64::MAX),
        recovered_at_s.unwrap_or(f64::MAX),
    );
    let other_dips = samples
        .iter()
        .zip(samples.iter().skip(1))
        .filter(|(a, b)| a.live.rate_factor >= ONE && b.live.rate_factor < ONE)
        .filter(|(_, b)| b.t < span_from || b.t > span_to)
        .count();
    let mean = |from: f64, to: f64| {
        let secs: Vec<f64> = per_second
            .iter()
            .enumerate()
            .filter(|(i, _)| (*i as f64) >= from && (*i as f64) + 1.0 <= to)
            .map(|(_, v)| *v)
            .collect();
        if secs.is_empty() {
            0.0
        } else {
            secs.iter().sum::<f64>() / secs.len() as f64
        }
    };
    // The first second is the arrivals' own burst: left out of "before".
    let admitted_per_second = match fell_at_s {
        Some(fell) => Phases {
            before: mean(1.0, fell.floor()),
            slowed: mean(fell.ceil(), recovered_at_s.map_or(f64::MAX, f64::floor)),
            peak_after_recovery: recovered_at_s.map_or(0.0, |r| {
                per_second
                    .iter()
                    .skip(r.ceil() as usize)
                    .copied()
                    .fold(0.0, f64::max)
            }),
        },
        None => Phases {
            before: mean(1.0, f64::MAX),
            ..Phases::default()
        },
    };
    Adaptive {
        target_booking_p99_ms: inp.target_booking_p99_ms,
        slow_from_s: inp.slow_payment_s.map(|w| w.0),
        slow_to_s: inp.slow_payment_s.map(|w| w.1),
        booking_p99_ms_per_second: booking_p99_per_second(inp.logs, per_second.len()),
        lowest_factor,
        fell_at_s,
        lowest_at_s: lowest_at.and_then(|i| samples.get(i)).map(|s| s.t),
        recovered_at_s,
        other_dips,
        admitted_per_second,
    }
}

/// A visitor's place in the order admissions are judged against.
type OrderKey<'a> = Box<dyn Fn(&VisitorLog) -> Option<u64> + 'a>;

fn fairness(inp: &Inputs, admitted: &[&VisitorLog]) -> Fairness {
    let with_seq = admitted.iter().all(|l| l.seq.is_some());
    let (order, key): (&'static str, OrderKey) = if inp.prequeue {
        // The pre-queue by its rank in the draw recomputed from the seed the
        // room told, then everyone who joined after the opening by seq.
        let seed = inp
            .draw
            .as_ref()
            .and_then(|(_, after)| after.seed.as_deref())
            .and_then(draw::unhex);
        let prequeue: Vec<u64> = admitted
            .iter()
            .filter(|l| l.joined_unplaced)
            .filter_map(|l| l.seq)
            .collect();
        let rank: HashMap<u64, u64> = seed
            .and_then(|seed| draw::order(&seed, &prequeue).ok())
            .unwrap_or_default()
            .into_iter()
            .zip(0..)
            .collect();
        (
            "draw",
            Box::new(move |l: &VisitorLog| {
                let seq = l.seq?;
                if l.joined_unplaced {
                    rank.get(&seq).copied()
                } else {
                    Some((1 << 60) + seq)
                }
            }),
        )
    } else if with_seq {
        ("ticket_seq", Box::new(|l: &VisitorLog| l.seq))
    } else {
        (
            "join_answer",
            Box::new(|l: &VisitorLog| l.joined_ms.map(|j| j * 100_000 + l.index as u64)),
        )
    };
    let items: Vec<Admission> = admitted
        .iter()
        .filter_map(|l| {
            Some(Admission {
                order: key(l)?,
                lo: l.last_waiting_sent_ms?,
                hi: l.admitted_ms?,
            })
        })
        .collect();
    fairness_of(order, items)
}

/// Join order against admission order over `items` (in `order`).
fn fairness_of(order: &'static str, items: Vec<Admission>) -> Fairness {
    let out_of_order_pairs = stats::proven_inversions(&items);
    // Later visitors in an inversion: admitted (hi) before some earlier one's lo.
    let mut by_order = items.clone();
    by_order.sort_by_key(|a| a.order);
    let mut max_lo_before = 0u64;
    let mut out_of_order_visitors = 0;
    for a in &by_order {
        if a.hi < max_lo_before {
            out_of_order_visitors += 1;
        }
        max_lo_before = max_lo_before.max(a.lo);
    }
    Fairness {
        order,
        admitted: items.len(),
        pairs: stats::pairs(items.len()),
        out_of_order_pairs,
        out_of_order_visitors,
        kendall_tau: stats::tau_from_discordant(out_of_order_pairs, items.len()),
        kendall_tau_seen: stats::kendall_tau(
            &items
                .iter()
                .map(|a| (a.order as f64, a.hi as f64))
                .collect::<Vec<_>>(),
        ),
    }
}

/// The check on the ETA: the first promise, in every band of whole waits
/// from [`ETA_JUDGED_FROM_S`] on.
const ETA_CHECK: &str = "ETA first promise error, every wait band from 10 s";
/// Bands of shorter waits are not judged: a second or two either way is
/// most of such a wait, and no promise broken.
const ETA_JUDGED_FROM_S: u64 = 10;

/// The ETA check's value (each judged band's p50 / p90, visitors told a
/// time and visitors admitted) and whether every band with a promise in it
/// meets the targets. A band whose visitors were told no time at all is
/// named, and passes only where none of them was ever told seats were
/// `likely` left (their seats in doubt until their turn: no promise there
/// was broken); told `likely` and still no time, the ETA went missing.
fn eta_check(eta: &Eta) -> (String, bool) {
    let judged: Vec<&EtaBucket> = eta
        .by_wait
        .iter()
        .filter(|b| b.wait_from_s >= ETA_JUDGED_FROM_S && b.admitted > 0)
        .collect();
    if judged.is_empty() {
        return (format!("n/a (nobody waited {ETA_JUDGED_FROM_S} s)"), true);
    }
    let ok = judged.iter().all(|b| {
        if b.first.count == 0 {
            b.untold_likely == 0
        } else {
            b.first.p50 <= 0.2 && b.first.p90 <= 0.35
        }
    });
    let value = judged
        .iter()
        .map(|b| {
            let to = b.wait_to_s.map_or("+".to_owned(), |t| format!("-{t}"));
            let from = b.wait_from_s;
            if b.first.count == 0 {
                return format!(
                    "{from}{to} s: no time told ({} admitted, {} of them told `likely`)",
                    b.admitted, b.untold_likely
                );
            }
            format!(
                "{from}{to} s: {:.1} % / {:.1} % ({} of {})",
                b.first.p50 * 100.0,
                b.first.p90 * 100.0,
                b.first.count,
                b.admitted
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    (value, ok)
}

fn checks(r: &Report, sold_out: bool) -> Vec<Check> {
    let mut c = Vec::new();
    let mut add = |name: &str, target: &str, value: String, ok: bool| {
        let invariant = !matches!(
            name,
            "sold out"
                | "waiters told sold out within 2 s"
                | "waiters told they were let in"
                | "waiters told of the resume"
                | ETA_CHECK
                | "holds that ran out while buying"
                | "adaptive admission: rate fell and recovered"
        );
        c.push(Check {
            name: name.into(),
            target: target.into(),
            value,
            ok,
            invariant,
        });
    };
    add(
        "kendall tau",
        "1.0",
        format!("{:.6}", r.fairness.kendall_tau),
        r.fairness.out_of_order_pairs == 0,
    );
    add(
        "out-of-order admissions",
        "0",
        r.fairness.out_of_order_pairs.to_string(),
        r.fairness.out_of_order_pairs == 0,
    );
    if r.fairness.order == "draw" {
        let (value, ok) = match &r.draw {
            Some(d) => (
                format!(
                    "seed {} the commitment read before the first join; {} pre-queue visitors; kendall tau {:.6} against the recomputed draw ({} pairs out of order)",
                    if d.commitment_kept {
                        "opens"
                    } else {
                        "does NOT open"
                    },
                    d.prequeue,
                    r.fairness.kendall_tau,
                    r.fairness.out_of_order_pairs
                ),
                d.commitment_kept && d.prequeue > 0 && r.fairness.out_of_order_pairs == 0,
            ),
            None => ("the draw route could not be read".into(), false),
        };
        add(
            "pre-queue draw recomputed",
            "1.0, seed opens commitment",
            value,
            ok,
        );
    }
    add(
        "samples over capacity",
        "0",
        r.capacity.samples_over_capacity.to_string(),
        r.capacity.samples_over_capacity == 0,
    );
    add(
        "oversold seats",
        "0",
        r.seats.oversold.to_string(),
        r.seats.oversold == 0,
    );
    if let Some(a) = &r.accounts {
        add(
            "places one account held at once",
            "1",
            format!(
                "at most {} ({} accounts held two or more)",
                a.max_places_at_once, a.accounts_with_places_at_once
            ),
            a.max_places_at_once <= 1,
        );
        let most = a.max_seats_booked;
        let (value, ok) = match a.seats_limit {
            Some(k) => (
                format!(
                    "{} (limit {k}; most booked by one account: {most})",
                    a.over_limit
                ),
                a.over_limit == 0,
            ),
            None => (
                format!("no limit set (most booked by one account: {most})"),
                true,
            ),
        };
        add("accounts over their seat limit", "0", value, ok);
        if let Some(f) = &a.fairness {
            add(
                "kendall tau over accounts",
                "1.0",
                format!(
                    "{:.6} ({} places compared, {} pairs out of order)",
                    f.kendall_tau, f.admitted, f.out_of_order_pairs
                ),
                f.out_of_order_pairs == 0,
            );
        }
    }
    if let Some(b) = r.challenge.as_ref().and_then(|c| c.bots.as_ref())
        && let Some((name, target, ok)) = challenge::bots_check(b)
    {
        add(
            name,
            target,
            format!(
                "{} ({} bots, {} joins answered 428, {} answered 403)",
                b.places, b.bots, b.answered_428, b.answered_403
            ),
            ok,
        );
    }
    add(
        "sold out",
        "every seat booked",
        format!("{} of {}", r.seats.booked, r.seats.total),
        sold_out,
    );
    let n = &r.sold_out_notice;
    add(
        "waiters told sold out within 2 s",
        "all",
        format!(
            "{} of {} (max {:.2} s; by a poll sent before it: {}, max {:.2} s; after: {}, max {:.2} s; never told: {:?}, {} of them admitted after the last seat)",
            n.told_within_2s,
            n.waiting_at_sell_out,
            n.delay_s.max,
            n.asked_before_s.count,
            n.asked_before_s.max,
            n.asked_after_s.count,
            n.asked_after_s.max,
            n.untold,
            n.untold_admitted_after,
        ),
        sold_out && n.told_within_2s == n.waiting_at_sell_out,
    );
    let (name, target, value, ok) = notice::check(&r.admission_notice);
    add(name, target, value, ok);
    if let Some(n) = &r.resume_notice {
        let (name, target, value, ok) = notice::resume_check(n);
        add(name, target, value, ok);
    }
    let (value, ok) = eta_check(&r.eta);
    add(ETA_CHECK, "p50 ≤ 20 %, p90 ≤ 35 % in each", value, ok);
    let h = &r.holds;
    add(
        "holds that ran out while buying",
        "0",
        format!(
            "{} of {} ({} let run out on purpose; {} ended by the account's other browser; {} unfinished: gave up after failed answers or out of time)",
            h.ran_out_while_buying, h.taken, h.let_run_out, h.ended_by_account, h.unfinished
        ),
        h.ran_out_while_buying == 0,
    );
    if let Some(a) = r.adaptive.as_ref().filter(|a| a.slow_from_s.is_some()) {
        let configured = r.admissions.configured_per_second;
        let value = match (a.fell_at_s, a.recovered_at_s) {
            (Some(f), Some(rec)) => format!(
                "fell at {f:.1} s to ×{:.2}, back to ×1 at {rec:.1} s, then up to {:.0}/s ({} other dips)",
                a.lowest_factor, a.admitted_per_second.peak_after_recovery, a.other_dips
            ),
            (Some(f), None) => format!(
                "fell at {f:.1} s to ×{:.2}, not back by the end",
                a.lowest_factor
            ),
            _ => "never fell".to_owned(),
        };
        add(
            "adaptive admission: rate fell and recovered",
            "falls while payment is slow, then back",
            value,
            a.fell_at_s.is_some()
                && a.lowest_factor < 0.5
                && a.recovered_at_s.is_some()
                && a.admitted_per_second.peak_after_recovery >= 0.8 * configured,
        );
    }
    let unexpected: u64 = r.unexpected_errors.values().sum();
    add(
        "unexpected errors",
        "0",
        unexpected.to_string(),
        unexpected == 0,
    );
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(t: f64, admitted_total: u64) -> Sample {
        Sample {
            t,
            live: Live {
                admitted_total,
                ..Live::default()
            },
            seats: Seats::default(),
        }
    }

    fn log(outcome: Outcome, held_ms: Option<u64>, booked_ms: Option<u64>) -> VisitorLog {
        VisitorLog {
            joined_ms: Some(0),
            last_waiting_sent_ms: Some(0),
            admitted_ms: held_ms.map(|_| 0),
            queue_requests: 1,
            left_line_ms: Some(0),
            held_ms,
            booked: booked_ms.map(|t| (t, vec!["A-1-1".to_owned()])),
            outcome,
            ..VisitorLog::default()
        }
    }

    fn factor_sample(t: f64, admitted_total: u64, rate_factor: f64) -> Sample {
        Sample {
            t,
            live: Live {
                admitted_total,
                rate_factor,
                ..Live::default()
            },
            seats: Seats::default(),
        }
    }

    fn inputs<'a>(logs: &'a [VisitorLog], samples: &'a [Sample]) -> Inputs<'a> {
        Inputs {
            logs,
            samples,
            opens_ms: 0,
            admit_per_second: 20.0,
            capacity: 100,
            seats_total: 100,
            duration_ms: samples.last().map_or(0, |s| (s.t * 1000.0) as u64),
            planned: logs.len(),
            prequeue: false,
            draw: None,
            hold_seconds: 20,
            target_booking_p99_ms: Some(400),
            slow_payment_s: Some((3.0, 6.0)),
            accounts: None,
            challenge: None,
            bot_logs: &[],
            resumed_ms: None,
        }
    }

    #[test]
    fn a_walk_away_is_told_apart_from_a_hold_that_ran_out_while_buying() {
        let logs = [
            log(Outcome::Booked, Some(1_000), Some(2_500)),
            log(Outcome::Booked, Some(1_000), Some(4_000)),
            log(Outcome::LetHoldExpire, Some(1_000), None),
            log(Outcome::HoldExpired, Some(1_000), None),
            log(Outcome::SessionEnded, Some(1_000), None),
            // The session ended before any hold: no hold to count.
            log(Outcome::SessionEnded, None, None),
            log(Outcome::TimedOut, Some(1_000), None),
            log(Outcome::SoldOut, None, None),
        ];
        let h = holds(&logs, 20);
        assert_eq!(
            (
                h.taken,
                h.booked,
                h.let_run_out,
                h.ran_out_while_buying,
                h.unfinished
            ),
            (6, 2, 1, 2, 1)
        );
        assert_eq!(h.hold_to_booking_s.count, 2);
        assert_eq!(h.hold_to_booking_s.max, 3.0);
        assert_eq!(h.hold_seconds, 20);
    }

    #[test]
    fn a_hold_ended_by_the_accounts_own_booking_is_not_one_that_ran_out() {
        let of = |account, seq, mut l: VisitorLog| {
            l.account = Some(account);
            l.seq = Some(seq);
            l.ended_ms = Some(1_600);
            l
        };
        let ended = |seq, kind: &str| crate::visitor::PlaceEnd {
            at_ms: 1_600,
            seq: Some(seq),
            kind: kind.into(),
        };
        let mut buyer = of(0, 1, log(Outcome::Booked, Some(1_000), Some(1_550)));
        buyer.ended_places.push((1_500, 1));
        buyer.booked = Some((1_550, vec!["A-1-1".into(), "A-1-2".into()]));
        // Its sibling's hold ended with the shared session at 1,600, and
        // its confirm read so; another account's simply ran out, and a
        // browser of the first account on a later place was not ended by
        // that booking.
        let mut sibling = of(0, 1, log(Outcome::SessionEnded, Some(1_100), None));
        sibling.place_ended.push(ended(1, "401 invalid_entry"));
        sibling.errors.insert("409 account_limit".into(), 1);
        let mut other = of(1, 2, log(Outcome::HoldExpired, Some(1_000), None));
        other.place_ended.push(ended(2, "409 hold_expired"));
        let mut later = of(0, 3, log(Outcome::SoldOut, None, None));
        later.place_ended.push(ended(3, "200 expired"));
        let logs = [buyer, sibling, other, later];
        let h = holds(&logs, 20);
        assert_eq!(
            (
                h.taken,
                h.booked,
                h.ended_by_account,
                h.ran_out_while_buying
            ),
            (3, 1, 1, 1)
        );
        let samples = [sample(0.0, 0), sample(2.0, 3)];
        let mut inp = inputs(&logs, &samples);
        inp.accounts = Some(accounts::Plan {
            accounts: 2,
            max_seats_per_account: Some(2),
        });
        let r = build(&inp, serde_json::Value::Null, Vec::new());
        let a = r.accounts.as_ref().unwrap();
        assert_eq!(
            (
                a.account_limit_answers,
                a.ended_by_account,
                a.browsers_ended_by_account
            ),
            (1, 1, 1)
        );
        // The limit at work is expected; a place ended with no booking of
        // its account is not.
        assert_eq!(r.errors.get("409 account_limit"), Some(&1));
        assert_eq!(
            r.unexpected_errors,
            BTreeMap::from([
                ("200 expired".to_owned(), 1),
                ("409 hold_expired".to_owned(), 1)
            ])
        );
        for name in [
            "places one account held at once",
            "accounts over their seat limit",
            "kendall tau over accounts",
        ] {
            let c = r.checks.iter().find(|c| c.name == name).unwrap();
            assert!(c.ok && c.invariant, "{c:?}");
        }
        // Without accounts, none of their checks.
        inp.accounts = None;
        let r = build(&inp, serde_json::Value::Null, Vec::new());
        assert!(r.accounts.is_none());
        assert!(!r.checks.iter().any(|c| c.name.contains("account")));
    }

    #[test]
    fn booking_latency_is_a_p99_per_second_of_answers() {
        let mut a = log(Outcome::Booked, Some(0), Some(0));
        a.booking_calls = (1..=100).map(|ms| (1_500, ms)).collect();
        let mut b = log(Outcome::Booked, Some(0), Some(0));
        b.booking_calls = vec![(3_100, 1_500), (9_999, 7)];
        let p = booking_p99_per_second(&[a, b], 4);
        assert_eq!(p, vec![None, Some(99.0), None, Some(1_500.0)]);
    }

    #[test]
    fn the_factor_falls_and_recovers_and_each_phase_has_its_rate() {
        // 20/s until 3 s, the factor at 0.05 from 4 s to 7 s (1/s), back at
        // 1 from 8 s, then 20/s again.
        let mut samples = Vec::new();
        let mut total = 0u64;
        for i in 0..=48 {
            let t = i as f64 * 0.25;
            let f = match t {
                t if t < 3.5 => 1.0,
                t if t < 4.0 => 0.5,
                t if t < 7.0 => 0.05,
                t if t < 8.0 => 0.5,
                _ => 1.0,
            };
            samples.push(factor_sample(t, total, f));
            total += (20.0 * f * 0.25).round() as u64;
        }
        let logs = [log(Outcome::Booked, Some(0), Some(100))];
        let r = build(
            &inputs(&logs, &samples),
            serde_json::Value::Null,
            Vec::new(),
        );
        let a = r.adaptive.as_ref().unwrap();
        assert_eq!(a.fell_at_s, Some(3.5));
        assert_eq!(a.lowest_factor, 0.05);
        assert_eq!(a.lowest_at_s, Some(4.0));
        assert_eq!(a.recovered_at_s, Some(8.0));
        assert_eq!(a.admitted_per_second.before, 20.0);
        assert!(
            a.admitted_per_second.slowed < 5.0,
            "{:?}",
            a.admitted_per_second
        );
        assert_eq!(a.admitted_per_second.peak_after_recovery, 20.0);
        assert_eq!(a.other_dips, 0);
        let check = r
            .checks
            .iter()
            .find(|c| c.name == "adaptive admission: rate fell and recovered")
            .unwrap();
        assert!(check.ok && !check.invariant, "{check:?}");

        // Never back to 1: no recovery, the check misses.
        let stuck: Vec<Sample> = samples
            .iter()
            .map(|s| factor_sample(s.t, s.live.admitted_total, s.live.rate_factor.min(0.5)))
            .collect();
        let r = build(&inputs(&logs, &stuck), serde_json::Value::Null, Vec::new());
        let a = r.adaptive.as_ref().unwrap();
        assert_eq!((a.fell_at_s, a.recovered_at_s), (Some(3.0), None));
        assert!(
            r.checks
                .iter()
                .any(|c| c.name.starts_with("adaptive") && !c.ok)
        );
    }

    #[test]
    fn a_dip_before_the_slow_window_is_not_taken_for_its_answer() {
        // The machine's own load: ×0.7 from 1 s to 1.5 s, then the slowdown's
        // fall at 4 s and recovery at 9 s, then another dip at 11 s.
        let factor = |t: f64| match t {
            t if (1.0..1.5).contains(&t) => 0.7,
            t if (4.0..9.0).contains(&t) => 0.1,
            t if (11.0..11.5).contains(&t) => 0.7,
            _ => 1.0,
        };
        let samples: Vec<Sample> = (0..=56)
            .map(|i| {
                let t = i as f64 * 0.25;
                factor_sample(t, i * 5, factor(t))
            })
            .collect();
        let logs = [log(Outcome::Booked, Some(0), Some(100))];
        let r = build(
            &inputs(&logs, &samples),
            serde_json::Value::Null,
            Vec::new(),
        );
        let a = r.adaptive.as_ref().unwrap();
        assert_eq!(
            (a.fell_at_s, a.lowest_at_s, a.recovered_at_s),
            (Some(4.0), Some(4.0), Some(9.0))
        );
        assert_eq!(a.lowest_factor, 0.1);
        assert_eq!(a.other_dips, 2);
    }

    #[test]
    fn no_adaptive_section_without_a_target_or_a_slowdown() {
        let samples = [factor_sample(0.0, 0, 1.0), factor_sample(1.0, 20, 1.0)];
        let logs = [log(Outcome::LetHoldExpire, Some(0), None)];
        let mut inp = inputs(&logs, &samples);
        inp.target_booking_p99_ms = None;
        inp.slow_payment_s = None;
        let r = build(&inp, serde_json::Value::Null, Vec::new());
        assert!(r.adaptive.is_none());
        assert!(!r.checks.iter().any(|c| c.name.starts_with("adaptive")));
        // A walk-away's hold is not a hold that ran out while buying.
        let c = r
            .checks
            .iter()
            .find(|c| c.name == "holds that ran out while buying")
            .unwrap();
        assert!(c.ok, "{c:?}");
    }

    #[test]
    fn admissions_are_spread_over_a_gap_in_the_samples() {
        let s = [sample(1.0, 0), sample(1.5, 10), sample(4.5, 70)];
        assert_eq!(admitted_at(&s, 0.5), 0.0);
        assert_eq!(admitted_at(&s, 1.25), 5.0);
        // 60 admissions over the 3 s gap: 20 a second, not 60 in one.
        assert_eq!(admitted_at(&s, 2.5) - admitted_at(&s, 1.5), 20.0);
        assert_eq!(admitted_at(&s, 9.0), 70.0);
        assert_eq!(admitted_at(&[], 3.0), 0.0);
    }

    #[test]
    fn the_eta_check_judges_every_band_from_ten_seconds() {
        let band = |from: u64, to: Option<u64>, errors: Vec<f64>| EtaBucket {
            wait_from_s: from,
            wait_to_s: to,
            admitted: errors.len() as u64 + 2,
            untold_likely: 0,
            first: stats::spread(errors.clone()),
            all: stats::spread(errors),
        };
        let good: Vec<f64> = (0..10).map(|i| f64::from(i) * 0.03).collect();
        let mut eta = Eta {
            by_wait: vec![
                band(0, Some(10), vec![9.0; 10]),
                band(10, Some(30), good.clone()),
                band(30, None, Vec::new()),
            ],
            first_p50_over_30s: f64::NAN,
            all_p50_over_30s: f64::NAN,
        };
        // Short waits are not judged; a band told no time is named.
        let (value, ok) = eta_check(&eta);
        assert!(ok, "{value}");
        assert_eq!(
            value,
            "10-30 s: 12.0 % / 24.0 % (10 of 12); 30+ s: no time told (2 admitted, 0 of them told `likely`)"
        );
        // ... unless one of them had been told seats were likely left.
        eta.by_wait[2].untold_likely = 1;
        let (value, ok) = eta_check(&eta);
        assert!(!ok);
        assert!(
            value.ends_with("(2 admitted, 1 of them told `likely`)"),
            "{value}"
        );
        eta.by_wait[2].untold_likely = 0;
        // One bad band fails it, by its p90 alone too.
        let mut tail = good;
        tail[8] = 0.5;
        tail[9] = 0.5;
        eta.by_wait[2] = band(30, None, tail);
        let (value, ok) = eta_check(&eta);
        assert!(!ok);
        assert!(
            value.ends_with("30+ s: 12.0 % / 50.0 % (10 of 12)"),
            "{value}"
        );
        eta.by_wait.truncate(1);
        assert_eq!(eta_check(&eta), ("n/a (nobody waited 10 s)".into(), true));
    }
}
