//! The report as one SVG chart, readable without the JSON: the must-show
//! figures as text, then the admission curve against the configured rate
//! (with adaptive admission: the configured rate × the origin's factor, and
//! the slow-payment window shaded, then booking's latency against the
//! target), the waiting line, inside against capacity, the wait
//! distribution and the ETA error by wait length. A run of accounts adds
//! three lines of their figures under the others. Drawn with plotters' SVG
//! backend, which writes text as `<text>` for the viewer to set (no font
//! library); each panel has its axes with units and a legend on its right.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::error::Error;
use crate::report::Report;

const W: u32 = 1000;
const PANEL_H: u32 = 230;
/// Room on a panel's right for its legend.
const LEGEND_W: u32 = 210;

const BLUE_: RGBColor = RGBColor(0x09, 0x69, 0xda);
const LIGHT_BLUE: RGBColor = RGBColor(0x54, 0xae, 0xff);
const RED_: RGBColor = RGBColor(0xcf, 0x22, 0x2e);
const GREEN_: RGBColor = RGBColor(0x1a, 0x7f, 0x37);
const AMBER: RGBColor = RGBColor(0xbf, 0x87, 0x00);
const PURPLE: RGBColor = RGBColor(0x82, 0x50, 0xdf);
const BAND: RGBColor = RGBColor(0xff, 0xf1, 0xd6);
const BAND_TEXT: RGBColor = RGBColor(0x9a, 0x67, 0x00);
const PLOT_BG: RGBColor = RGBColor(0xfa, 0xfa, 0xfa);

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;
type DrawResult = Result<(), Box<dyn std::error::Error>>;

/// How a series is drawn.
enum Style {
    Line,
    Dashed,
    Bars,
}

/// A shaded stretch of the x axis, labelled (e.g. when payment was slow).
struct Band {
    from: f64,
    to: f64,
    label: String,
}

struct Series {
    name: String,
    color: RGBColor,
    style: Style,
    points: Vec<(f64, f64)>,
}

/// One panel: x and y start at zero; y is cut at `ycap` (taller values are
/// drawn at the top); `bands` are shaded behind the series.
struct Panel<'a> {
    title: &'a str,
    x_desc: &'a str,
    y_desc: &'a str,
    series: Vec<Series>,
    ycap: Option<f64>,
    bands: &'a [Band],
}

/// Sans-serif at `px` pixels (the SVG backend writes a font's size / 1.24).
fn font(px: u32) -> FontDesc<'static> {
    ("sans-serif", f64::from(px) * 1.24).into_font()
}

/// An axis label: thousands as `k` past 10,000, else at most two decimals.
fn fmt(v: f64) -> String {
    if v >= 10_000.0 {
        format!("{:.0}k", v / 1000.0)
    } else {
        let s = format!("{v:.2}");
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    }
}

/// The smallest step between a bar series' x values (its bars' width).
fn bar_gap(s: &Series, fallback: f64) -> f64 {
    s.points
        .iter()
        .zip(s.points.iter().skip(1))
        .map(|(a, b)| b.0 - a.0)
        .fold(fallback, f64::min)
}

fn draw_panel(area: &Area, p: &Panel) -> DrawResult {
    // Bars take their width to the right of their x.
    let xmax = p
        .series
        .iter()
        .flat_map(|s| {
            let extra = if matches!(s.style, Style::Bars) {
                bar_gap(s, 1.0)
            } else {
                0.0
            };
            s.points.iter().map(move |p| p.0 + extra)
        })
        .fold(1.0, f64::max);
    let ymax = p
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .filter(|v| v.is_finite())
        .fold(1.0, f64::max)
        * 1.08;
    let ymax = p.ycap.map_or(ymax, |c| ymax.min(c));
    let (plot, legend) = area.split_horizontally(W - LEGEND_W);
    let mut chart = ChartBuilder::on(&plot)
        .caption(p.title, font(15).style(FontStyle::Bold))
        .margin(6)
        .x_label_area_size(38)
        .y_label_area_size(64)
        .build_cartesian_2d(0f64..xmax, 0f64..ymax)?;
    chart.plotting_area().fill(&PLOT_BG)?;
    chart
        .configure_mesh()
        .x_labels(12)
        .y_labels(5)
        .x_label_formatter(&|v| fmt(*v))
        .y_label_formatter(&|v| fmt(*v))
        .x_desc(p.x_desc)
        .y_desc(p.y_desc)
        .label_style(font(11))
        .axis_desc_style(font(12))
        .bold_line_style(BLACK.mix(0.1))
        .light_line_style(TRANSPARENT)
        .draw()?;
    let band_text = font(11)
        .color(&BAND_TEXT)
        .pos(Pos::new(HPos::Center, VPos::Top));
    for b in p.bands {
        let (from, to) = (b.from.clamp(0.0, xmax), b.to.clamp(0.0, xmax));
        chart.draw_series([Rectangle::new([(from, 0.0), (to, ymax)], BAND.filled())])?;
    }
    let bar_count = p
        .series
        .iter()
        .filter(|s| matches!(s.style, Style::Bars))
        .count()
        .max(1) as f64;
    let mut bar_i = 0.0;
    for s in &p.series {
        // Values past the top are drawn at the top.
        let points = s
            .points
            .iter()
            .filter(|p| p.1.is_finite())
            .map(|&(x, y)| (x, y.min(ymax)));
        let color = s.color;
        match s.style {
            Style::Bars => {
                // Bars share each x: side by side.
                let bw = bar_gap(s, xmax).max(xmax / 400.0) * 0.9 / bar_count;
                let offset = bar_i * bw;
                bar_i += 1.0;
                chart.draw_series(points.map(|(x, y)| {
                    Rectangle::new([(x + offset, 0.0), (x + offset + bw, y)], color.filled())
                }))?;
            }
            Style::Line => {
                chart.draw_series(LineSeries::new(points, color.stroke_width(2)))?;
            }
            Style::Dashed => {
                chart.draw_series(DashedLineSeries::new(points, 6, 4, color.stroke_width(2)))?;
            }
        }
    }
    // The bands' names over the series.
    chart.draw_series(p.bands.iter().map(|b| {
        let mid = (b.from.clamp(0.0, xmax) + b.to.clamp(0.0, xmax)) / 2.0;
        Text::new(b.label.clone(), (mid, ymax * 0.85), band_text.clone())
    }))?;
    // The legend beside the plot (plotters clips its own legend box to the
    // plotting area, where it would hide the data).
    let label = font(11)
        .color(&BLACK)
        .pos(Pos::new(HPos::Left, VPos::Center));
    for (i, s) in (0..).zip(&p.series) {
        let y = 40 + 17 * i;
        legend.draw(&Rectangle::new([(6, y - 2), (18, y + 2)], s.color.filled()))?;
        legend.draw(&Text::new(s.name.as_str(), (24, y), label.clone()))?;
    }
    Ok(())
}

/// The text above the panels: the title, each check, then the waits and holds.
fn draw_head(area: &Area, r: &Report, title: &str) -> DrawResult {
    area.draw(&Text::new(
        title.to_owned(),
        (20, 12),
        font(18).style(FontStyle::Bold),
    ))?;
    let mut y = 40;
    for c in &r.checks {
        let (mark, color) = if c.ok { ("✔", GREEN_) } else { ("✘", RED_) };
        area.draw(&Text::new(mark, (20, y), font(13).color(&color)))?;
        area.draw(&Text::new(
            format!("{}: {} (target {})", c.name, c.value, c.target),
            (36, y),
            font(13),
        ))?;
        y += 18;
    }
    let w = &r.wait_s;
    area.draw(&Text::new(
        format!(
            "visitors {}, admitted {}, waits p50 {:.1} s, p95 {:.1} s, p99 {:.1} s, max {:.1} s; {:.3} requests/s per waiter; peak inside {} of {}",
            r.visitors.planned,
            r.visitors.admitted,
            w.p50,
            w.p95,
            w.p99,
            w.max,
            r.polling.requests_per_second_per_waiter,
            r.capacity.peak_active,
            r.capacity.capacity
        ),
        (20, y),
        font(13),
    ))?;
    let h = &r.holds;
    area.draw(&Text::new(
        format!(
            "holds {} ({} s each): {} booked, {} let run out on purpose, {} ran out while buying, {} unfinished; hold to booking p99 {:.1} s, max {:.1} s",
            h.taken,
            h.hold_seconds,
            h.booked,
            h.let_run_out,
            h.ran_out_while_buying,
            h.unfinished,
            h.hold_to_booking_s.p99,
            h.hold_to_booking_s.max
        ),
        (20, y + 18),
        font(13),
    ))?;
    for (line, dy) in head_lines(r).into_iter().zip((36..).step_by(18)) {
        area.draw(&Text::new(line, (20, y + dy), font(13)))?;
    }
    Ok(())
}

/// The lines under the holds': the accounts', the challenge's.
fn head_lines(r: &Report) -> Vec<String> {
    let mut lines = accounts_lines(r);
    lines.extend(challenge_lines(r));
    lines
}

/// The join challenge's figures: people's solving, then the bots'.
fn challenge_lines(r: &Report) -> Vec<String> {
    let Some(c) = r.challenge.as_ref() else {
        return Vec::new();
    };
    let bits = c.bits.map_or(String::new(), |b| format!(" at {b} bits"));
    let mut lines = vec![format!(
        "challenge {}{bits}: people solved {} (p50 {:.2} s, max {:.2} s, {:.1} CPU s in all); joins answered 428: {}, 403: {}",
        c.kind,
        c.people_solves,
        c.people_solve_s.p50,
        c.people_solve_s.max,
        c.people_cpu_s,
        c.people_answered_428,
        c.people_answered_403
    )];
    if let Some(b) = &c.bots {
        lines.push(format!(
            "bots ({:?}) {}: {} joins, answered 428: {}, 403: {}, 200: {}; places {} (at most {} at once), admitted bots {}",
            b.kind,
            b.bots,
            b.joins,
            b.answered_428,
            b.answered_403,
            b.answered_200,
            b.places,
            b.max_places_at_once,
            b.admitted_bots
        ));
        if b.solves > 0 {
            lines.push(format!(
                "bots solved {} on {} threads each: {:.1} CPU s, {:.2} places per CPU s, solve p50 {:.2} s",
                b.solves,
                b.threads,
                b.cpu_s,
                b.places_per_cpu_s.unwrap_or(0.0),
                b.solve_wall_s.p50
            ));
        }
    }
    lines
}

/// The accounts' figures in three lines, for a run of accounts.
fn accounts_lines(r: &Report) -> Vec<String> {
    let Some(a) = r.accounts.as_ref() else {
        return Vec::new();
    };
    let counts = |h: &[u64]| {
        h.iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .map(|(i, n)| format!("{i}: {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let shared = a
        .shared_place_answers
        .iter()
        .map(|(k, n)| format!("{k} {n}"))
        .collect::<Vec<_>>()
        .join(", ");
    vec![
        format!(
            "accounts {} ({} admitted); browsers per account {}",
            a.accounts,
            a.admitted,
            counts(&a.browsers_per_account),
        ),
        format!(
            "places per account over the run {}; seats booked per account {}",
            counts(&a.places_per_account),
            counts(&a.seats_booked_per_account),
        ),
        format!(
            "409 account_limit: {}; a shared place: {}; sessions ended by another browser of the account: {}",
            a.account_limit_answers,
            if shared.is_empty() {
                "none".into()
            } else {
                shared
            },
            a.browsers_ended_by_account,
        ),
    ]
}

/// The panels of `r`, top to bottom.
fn panels<'a>(r: &Report, slow: &'a [Band]) -> Vec<Panel<'a>> {
    let secs = r.admissions.per_second.len() as f64;
    let configured = r.admissions.configured_per_second;
    let timeline = |f: fn(&crate::report::Sample) -> f64| -> Vec<(f64, f64)> {
        r.timeline.iter().map(|p| (p.t, f(p))).collect()
    };
    let mut admissions = vec![
        Series {
            name: "admitted per second".into(),
            color: BLUE_,
            style: Style::Bars,
            points: r
                .admissions
                .per_second
                .iter()
                .enumerate()
                .map(|(i, v)| (i as f64, *v))
                .collect(),
        },
        Series {
            name: format!("configured: {configured}/s"),
            color: RED_,
            style: Style::Dashed,
            points: vec![(0.0, configured), (secs, configured)],
        },
    ];
    if r.adaptive.is_some() {
        admissions.push(Series {
            name: "configured × adaptive factor".into(),
            color: AMBER,
            style: Style::Line,
            points: r
                .timeline
                .iter()
                .map(|p| (p.t, configured * p.live.rate_factor))
                .collect(),
        });
    }
    let mut out = vec![Panel {
        title: "Admissions per second (origin's count) against the configured rate",
        x_desc: "seconds into the run",
        y_desc: "admitted / s",
        series: admissions,
        ycap: None,
        bands: slow,
    }];
    if let Some(a) = &r.adaptive {
        let mut series = vec![Series {
            name: "p99, each second".into(),
            color: PURPLE,
            style: Style::Line,
            points: a
                .booking_p99_ms_per_second
                .iter()
                .enumerate()
                .filter_map(|(i, v)| Some((i as f64 + 0.5, (*v)?)))
                .collect(),
        }];
        if let Some(target) = a.target_booking_p99_ms {
            series.push(Series {
                name: format!("target p99: {target} ms"),
                color: RED_,
                style: Style::Dashed,
                points: vec![(0.0, target as f64), (secs, target as f64)],
            });
        }
        out.push(Panel {
            title: "Booking API latency as the visitors saw it (ms), what adaptive admission answers to",
            x_desc: "seconds into the run",
            y_desc: "p99 latency, ms",
            series,
            ycap: None,
            bands: slow,
        });
    }
    out.push(Panel {
        title: "The waiting line and seats sold",
        x_desc: "seconds into the run",
        y_desc: "visitors or seats",
        series: vec![
            Series {
                name: "waiting".into(),
                color: PURPLE,
                style: Style::Line,
                points: timeline(|p| p.live.waiting as f64),
            },
            Series {
                name: "seats booked".into(),
                color: GREEN_,
                style: Style::Line,
                points: timeline(|p| p.seats.booked as f64),
            },
            Series {
                name: "seats held".into(),
                color: AMBER,
                style: Style::Line,
                points: timeline(|p| p.seats.held as f64),
            },
        ],
        ycap: None,
        bands: &[],
    });
    let capacity = r.capacity.capacity as f64;
    out.push(Panel {
        title: "Inside against capacity",
        x_desc: "seconds into the run",
        y_desc: "visitors inside",
        series: vec![
            Series {
                name: "inside".into(),
                color: BLUE_,
                style: Style::Line,
                points: timeline(|p| p.live.active as f64),
            },
            Series {
                name: format!("capacity: {}", r.capacity.capacity),
                color: RED_,
                style: Style::Dashed,
                points: vec![(0.0, capacity), (r.duration_s, capacity)],
            },
        ],
        ycap: None,
        bands: &[],
    });
    out.push(Panel {
        title: "Wait distribution (join to admission)",
        x_desc: "wait, seconds",
        y_desc: "visitors",
        series: vec![Series {
            name: "visitors".into(),
            color: BLUE_,
            style: Style::Bars,
            points: r
                .wait_histogram
                .iter()
                .enumerate()
                .map(|(i, n)| (i as f64 * r.wait_bucket_s, *n as f64))
                .collect(),
        }],
        ycap: None,
        bands: &[],
    });
    let eta = |name: &str, color, pick: fn(&crate::report::EtaBucket) -> f64| Series {
        name: name.into(),
        color,
        style: Style::Bars,
        points: r
            .eta
            .by_wait
            .iter()
            .map(|b| (b.wait_from_s as f64, pick(b) * 100.0))
            .collect(),
    };
    out.push(Panel {
        title: "ETA error, % of the real wait, by whole wait (cut at 200 %)",
        x_desc: "wait, seconds (ranges 0-10, 10-30, 30-60, 60-120, 120+; bars at the range's start)",
        y_desc: "ETA error, %",
        series: vec![
            eta("first ETA, p50", BLUE_, |b| b.first.p50),
            eta("first ETA, p95", LIGHT_BLUE, |b| b.first.p95),
            eta("every ETA, p50", AMBER, |b| b.all.p50),
            Series {
                name: "20 % line".into(),
                color: RED_,
                style: Style::Dashed,
                points: vec![(0.0, 20.0), (130.0, 20.0)],
            },
        ],
        ycap: Some(200.0),
        bands: &[],
    });
    if let Some(o) = &r.outlook {
        out.push(Panel {
            title: "Waiters told their turn will probably find no seat (outlook `unlikely`), % of the line",
            x_desc: "seconds into the run",
            y_desc: "told unlikely, % of waiters",
            series: vec![Series {
                name: "told unlikely".into(),
                color: RED_,
                style: Style::Line,
                points: o
                    .unlikely_share_per_second
                    .iter()
                    .enumerate()
                    .filter_map(|(i, v)| Some((i as f64, (*v)? * 100.0)))
                    .collect(),
            }],
            ycap: None,
            bands: slow,
        });
    }
    out
}

/// The chart of `r`.
pub fn svg(r: &Report, title: &str) -> Result<String, Error> {
    let slow: Vec<Band> = r
        .adaptive
        .as_ref()
        .and_then(|a| Some((a.slow_from_s?, a.slow_to_s?)))
        .map(|(from, to)| Band {
            from,
            to,
            label: match r
                .scenario
                .pointer("/slow_payment/latency_ms")
                .and_then(serde_json::Value::as_u64)
            {
                Some(ms) => format!("payment slowed to {ms} ms"),
                None => "payment slowed".into(),
            },
        })
        .into_iter()
        .collect();
    let panels = panels(r, &slow);
    let too_tall = |_| Error::Chart("too many checks to draw".into());
    let lines = r.checks.len() + head_lines(r).len();
    let head = u32::try_from(98 + 18 * lines).map_err(too_tall)?;
    let height =
        u32::try_from(head as usize + PANEL_H as usize * panels.len()).map_err(too_tall)?;
    let mut out = String::new();
    let drawn = (|| -> DrawResult {
        let root = SVGBackend::with_string(&mut out, (W, height)).into_drawing_area();
        root.fill(&WHITE)?;
        let (top, rest) = root.split_vertically(head);
        draw_head(&top, r, title)?;
        for (area, p) in rest.split_evenly((panels.len(), 1)).iter().zip(&panels) {
            draw_panel(area, p)?;
        }
        root.present()?;
        Ok(())
    })();
    drawn.map_err(|e| Error::Chart(e.to_string()))?;
    Ok(out)
}

#[cfg(test)]
mod tests {

    use super::*;
    use crate::admin::{Live, Seats};
    use crate::report::{Inputs, Sample, build};
    use crate::visitor::{Outcome, VisitorLog};

    /// A visitor who joined at `joined_ms`, was told an ETA of `eta_s` then,
    /// was admitted at `admitted_ms` and booked 2 s later.
    fn log(index: usize, joined_ms: u64, admitted_ms: u64, eta_s: u64) -> VisitorLog {
        VisitorLog {
            index,
            joined_ms: Some(joined_ms),
            last_waiting_sent_ms: Some(admitted_ms),
            admitted_ms: Some(admitted_ms),
            promises: vec![(joined_ms, eta_s)],
            queue_requests: 3,
            left_line_ms: Some(admitted_ms),
            held_ms: Some(admitted_ms + 1_000),
            booked: Some((admitted_ms + 2_000, vec!["A-1-1".to_owned()])),
            booking_calls: vec![(admitted_ms + 1_000, 80), (admitted_ms + 2_000, 900)],
            outcome: Outcome::Booked,
            ..VisitorLog::default()
        }
    }

    /// A 40 s sale of 60 visitors; with `adaptive`, a target and a slowdown
    /// from 10 s to 20 s during which the factor falls.
    fn report(adaptive: bool) -> Report {
        let logs: Vec<VisitorLog> = (0..60)
            .map(|i| {
                let joined = i as u64 * 100;
                let admitted = joined + 500 * i as u64;
                log(i, joined, admitted, (i as u64 / 2).max(1) * 3)
            })
            .collect();
        let samples: Vec<Sample> = (0..=160)
            .map(|i| {
                let t = i as f64 * 0.25;
                let admitted = logs
                    .iter()
                    .filter(|l| l.admitted_ms.is_some_and(|a| a as f64 <= t * 1000.0))
                    .count() as u64;
                Sample {
                    t,
                    live: Live {
                        waiting: 60 - admitted,
                        active: admitted.min(20),
                        admitted_total: admitted,
                        rate_factor: if adaptive && (10.0..20.0).contains(&t) {
                            0.1
                        } else {
                            1.0
                        },
                        ..Live::default()
                    },
                    seats: Seats {
                        available: 60 - admitted,
                        held: admitted.min(5),
                        booked: admitted.saturating_sub(5),
                    },
                }
            })
            .collect();
        let inputs = Inputs {
            logs: &logs,
            samples: &samples,
            opens_ms: 0,
            admit_per_second: 2.0,
            capacity: 20,
            seats_total: 60,
            duration_ms: 40_000,
            planned: logs.len(),
            prequeue: false,
            draw: None,
            hold_seconds: 10,
            target_booking_p99_ms: adaptive.then_some(400),
            slow_payment_s: adaptive.then_some((10.0, 20.0)),
            accounts: None,
            challenge: None,
            bot_logs: &[],
            resumed_ms: None,
        };
        let scenario = serde_json::json!({ "slow_payment": { "latency_ms": 1500 } });
        build(&inputs, scenario, Vec::new())
    }

    /// `s` as the SVG backend escapes text.
    fn xml(s: &str) -> String {
        s.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('"', "&quot;")
            .replace('\'', "&apos;")
    }

    /// The text of every `<text>` element.
    fn texts(svg: &str) -> Vec<&str> {
        svg.split("<text")
            .skip(1)
            .filter_map(|t| Some(t.split_once('>')?.1.split_once("</text>")?.0.trim()))
            .collect()
    }

    /// The polylines stroked in `color`, as their points.
    fn polylines(svg: &str, color: RGBColor) -> Vec<&str> {
        let stroke = format!(
            r##"stroke="#{:02X}{:02X}{:02X}""##,
            color.0, color.1, color.2
        );
        svg.split("<polyline")
            .skip(1)
            .filter_map(|p| p.split_once("/>").map(|p| p.0))
            .filter(|p| p.contains(&stroke))
            .filter_map(|p| p.split_once(r#"points=""#)?.1.split_once('"').map(|p| p.0))
            .collect()
    }

    /// Rectangles filled with `color`.
    fn rects(svg: &str, color: RGBColor) -> usize {
        let fill = format!(r##"fill="#{:02X}{:02X}{:02X}""##, color.0, color.1, color.2);
        svg.split("<rect")
            .skip(1)
            .filter(|r| r.split_once("/>").is_some_and(|r| r.0.contains(&fill)))
            .count()
    }

    #[test]
    fn every_panel_has_its_title_axes_with_units_and_legend() {
        for adaptive in [false, true] {
            let r = report(adaptive);
            let svg = svg(&r, "rehearsal").unwrap();
            let texts = texts(&svg);
            let panels = panels(&r, &[]);
            assert_eq!(panels.len(), if adaptive { 6 } else { 5 });
            for p in &panels {
                for want in [p.title, p.x_desc, p.y_desc] {
                    let want = xml(want);
                    assert!(texts.contains(&want.as_str()), "{want:?} missing");
                }
                for s in &p.series {
                    let name = xml(&s.name);
                    assert!(texts.contains(&name.as_str()), "legend {name:?} missing");
                }
            }
            for c in &r.checks {
                let line = xml(&format!("{}: {} (target {})", c.name, c.value, c.target));
                assert!(texts.contains(&line.as_str()), "check {line:?} missing");
            }
            assert_eq!(
                texts.contains(&"payment slowed to 1500 ms"),
                adaptive,
                "the slow window is shaded and named when there was one"
            );
        }
    }

    #[test]
    fn every_series_is_drawn() {
        let r = report(true);
        let svg = svg(&r, "rehearsal").unwrap();
        // Each solid line is one polyline through all its points.
        let waiting = polylines(&svg, PURPLE);
        assert!(
            waiting
                .iter()
                .any(|p| p.split_whitespace().count() == r.timeline.len()),
            "the waiting line has a point per sample"
        );
        for color in [GREEN_, AMBER] {
            assert!(!polylines(&svg, color).is_empty());
        }
        // Dashed lines are drawn dash by dash: several polylines.
        assert!(polylines(&svg, RED_).len() > 4);
        // A bar per admitted second and per wait bucket (and their legends).
        let bars = r.admissions.per_second.iter().filter(|v| **v > 0.0).count()
            + r.wait_histogram.iter().filter(|v| **v > 0).count();
        assert!(rects(&svg, BLUE_) > bars, "{} bars", rects(&svg, BLUE_));
        let eta_bars = r.eta.by_wait.iter().filter(|b| b.first.p95.is_finite());
        assert_eq!(rects(&svg, LIGHT_BLUE), eta_bars.count() + 1);
        assert_eq!(rects(&svg, BAND), 2, "the slow window, in both panels");
    }

    #[test]
    fn ticks_are_round() {
        let svg = svg(&report(true), "rehearsal").unwrap();
        let ticks: Vec<f64> = texts(&svg)
            .iter()
            .filter_map(|t| t.trim_end_matches('k').parse().ok())
            .collect();
        assert!(ticks.len() > 30, "{ticks:?}");
        for t in ticks {
            // One or two significant digits: 0, 5, 20, 250, 0.5, 1.5.
            let digits = format!("{t}").replace(['.', '-'], "");
            let significant = digits.trim_start_matches('0').trim_end_matches('0');
            assert!(significant.len() <= 2, "tick {t}");
        }
        assert_eq!(fmt(25_000.0), "25k");
        assert_eq!(fmt(40.0), "40");
        assert_eq!(fmt(0.5), "0.5");
    }

    #[test]
    fn a_run_of_accounts_shows_their_checks_and_figures() {
        let mut r = report(false);
        let plan = crate::report::accounts::Plan {
            accounts: 3,
            max_seats_per_account: Some(2),
        };
        r.accounts = Some(crate::report::accounts::build(&plan, &[], false).0);
        let svg = svg(&r, "rehearsal").unwrap();
        let texts = texts(&svg);
        let lines = accounts_lines(&r);
        assert_eq!(lines.len(), 3);
        for line in &lines {
            assert!(texts.contains(&xml(line).as_str()), "{line}");
        }
        assert_eq!(
            lines[0],
            "accounts 3 (0 admitted); browsers per account 0: 3"
        );
        assert!(lines[2].contains("a shared place: none;"));
        assert!(accounts_lines(&report(false)).is_empty());
    }

    #[test]
    fn text_is_escaped() {
        let svg = svg(&report(false), "a<b&c").unwrap();
        assert!(svg.contains("a&lt;b&amp;c"));
        assert!(!svg.contains("a<b"));
    }

    /// The `y` attribute of an element's opening.
    fn y_of(element: &str) -> Option<f64> {
        element
            .split_once(r#" y=""#)?
            .1
            .split_once('"')?
            .0
            .parse()
            .ok()
    }

    #[test]
    fn values_past_the_cap_are_drawn_at_the_top() {
        let mut r = report(false);
        for b in &mut r.eta.by_wait {
            b.first.p95 = 50.0;
        }
        let svg = svg(&r, "rehearsal").unwrap();
        let title = "ETA error, % of the real wait, by whole wait (cut at 200 %)";
        let top = svg
            .split("<text")
            .find(|t| t.contains(title))
            .and_then(y_of)
            .unwrap();
        let fill = format!(
            r##"fill="#{:02X}{:02X}{:02X}""##,
            LIGHT_BLUE.0, LIGHT_BLUE.1, LIGHT_BLUE.2
        );
        let bars: Vec<f64> = svg
            .split("<rect")
            .filter(|r| r.split_once("/>").is_some_and(|r| r.0.contains(&fill)))
            .filter_map(y_of)
            .collect();
        assert!(!bars.is_empty());
        // 5,000 % bars end at the panel's top, below its title.
        for y in bars {
            assert!(y > top, "a bar at {y}, the title at {top}");
        }
    }
}
