//! The report as one SVG chart, readable without the JSON: the must-show
//! figures as text, then the admission curve against the configured rate
//! (with adaptive admission: the configured rate × the origin's factor, and
//! the slow-payment window shaded, then booking's latency against the
//! target), the waiting line, inside against capacity, the wait
//! distribution and the ETA error by wait length. Plain SVG written by
//! hand (a few lines and bars need no plotting library).

use std::fmt::Write as _;

use crate::report::Report;

const W: f64 = 1000.0;
const PANEL_H: f64 = 210.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 30.0;

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
    color: &'static str,
    style: Style,
    points: Vec<(f64, f64)>,
}

/// A round step for about `n` ticks up to `max`.
fn step(max: f64, n: f64) -> f64 {
    let raw = (max / n).max(1e-9);
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag)
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The smallest step between a bar series' x values (its bars' width).
fn bar_gap(s: &Series, fallback: f64) -> f64 {
    s.points
        .windows(2)
        .map(|p| p[1].0 - p[0].0)
        .fold(fallback, f64::min)
}

/// Draws one panel at `top`; x and y start at zero; y is cut at `ycap`
/// (taller values are drawn at the top); `bands` are shaded behind the series.
fn panel(
    svg: &mut String,
    top: f64,
    title: &str,
    xlabel: &str,
    series: &[Series],
    ycap: Option<f64>,
    bands: &[Band],
) {
    let (x0, y0, w, h) = (LEFT, top + 30.0, W - LEFT - RIGHT, PANEL_H - 70.0);
    // Bars take their width to the right of their x.
    let xmax = series
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
    let ymax = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .filter(|v| v.is_finite())
        .fold(1.0, f64::max)
        * 1.08;
    let ymax = ycap.map_or(ymax, |c| ymax.min(c));
    let sx = |x: f64| x0 + x / xmax * w;
    let sy = |y: f64| y0 + h - (y / ymax).min(1.0) * h;
    let _ = writeln!(
        svg,
        r#"<text x="{x0}" y="{}" font-size="15" font-weight="bold">{}</text>"#,
        top + 18.0,
        esc(title)
    );
    let _ = writeln!(
        svg,
        r##"<rect x="{x0}" y="{y0}" width="{w}" height="{h}" fill="#fafafa" stroke="#999"/>"##
    );
    for b in bands {
        let (bx0, bx1) = (sx(b.from.clamp(0.0, xmax)), sx(b.to.clamp(0.0, xmax)));
        let _ = writeln!(
            svg,
            r##"<rect x="{bx0:.1}" y="{y0}" width="{:.1}" height="{h}" fill="#fff1d6"/><text x="{:.1}" y="{}" font-size="11" text-anchor="middle" fill="#9a6700">{}</text>"##,
            (bx1 - bx0).max(1.0),
            (bx0 + bx1) / 2.0,
            y0 + 28.0,
            esc(&b.label)
        );
    }
    let (xs, ys) = (step(xmax, 10.0), step(ymax, 4.0));
    let mut x = 0.0;
    while x <= xmax + 1e-9 {
        let _ = writeln!(
            svg,
            r##"<line x1="{0}" y1="{1}" x2="{0}" y2="{2}" stroke="#ddd"/><text x="{0}" y="{3}" font-size="11" text-anchor="middle">{4}</text>"##,
            sx(x),
            y0,
            y0 + h,
            y0 + h + 14.0,
            fmt(x)
        );
        x += xs;
    }
    let mut y = 0.0;
    while y <= ymax + 1e-9 {
        let _ = writeln!(
            svg,
            r##"<line x1="{0}" y1="{1}" x2="{2}" y2="{1}" stroke="#ddd"/><text x="{3}" y="{4}" font-size="11" text-anchor="end">{5}</text>"##,
            x0,
            sy(y),
            x0 + w,
            x0 - 5.0,
            sy(y) + 4.0,
            fmt(y)
        );
        y += ys;
    }
    let _ = writeln!(
        svg,
        r#"<text x="{}" y="{}" font-size="11" text-anchor="middle">{}</text>"#,
        x0 + w / 2.0,
        y0 + h + 30.0,
        esc(xlabel)
    );
    let bar_count = series
        .iter()
        .filter(|s| matches!(s.style, Style::Bars))
        .count()
        .max(1) as f64;
    let mut bar_i = 0.0;
    for (i, s) in series.iter().enumerate() {
        match s.style {
            Style::Bars => {
                // Bars share each x: side by side.
                let gap = s
                    .points
                    .windows(2)
                    .map(|p| p[1].0 - p[0].0)
                    .fold(xmax, f64::min)
                    .max(xmax / 400.0);
                let bw = (gap / xmax * w * 0.9 / bar_count).max(1.0);
                for &(x, y) in &s.points {
                    if !y.is_finite() {
                        continue;
                    }
                    let _ = writeln!(
                        svg,
                        r#"<rect x="{:.1}" y="{:.1}" width="{bw:.1}" height="{:.1}" fill="{}"/>"#,
                        sx(x) + bar_i * bw,
                        sy(y),
                        y0 + h - sy(y),
                        s.color
                    );
                }
                bar_i += 1.0;
            }
            Style::Line | Style::Dashed => {
                let pts: Vec<String> = s
                    .points
                    .iter()
                    .filter(|p| p.1.is_finite())
                    .map(|&(x, y)| format!("{:.1},{:.1}", sx(x), sy(y)))
                    .collect();
                let dash = if matches!(s.style, Style::Dashed) {
                    r#" stroke-dasharray="6 4""#
                } else {
                    ""
                };
                let _ = writeln!(
                    svg,
                    r#"<polyline points="{}" fill="none" stroke="{}" stroke-width="2"{dash}/>"#,
                    pts.join(" "),
                    s.color
                );
            }
        }
        let lx = x0 + 10.0 + 200.0 * i as f64;
        let _ = writeln!(
            svg,
            r#"<rect x="{lx}" y="{}" width="12" height="4" fill="{}"/><text x="{}" y="{}" font-size="11">{}</text>"#,
            y0 + 8.0,
            s.color,
            lx + 16.0,
            y0 + 12.0,
            esc(&s.name)
        );
    }
}

fn fmt(v: f64) -> String {
    if v >= 10_000.0 {
        format!("{:.0}k", v / 1000.0)
    } else if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

/// The chart of `r`.
pub fn svg(r: &Report, title: &str) -> String {
    let panels = if r.adaptive.is_some() { 6.0 } else { 5.0 };
    let head = 40.0 + 18.0 * r.checks.len() as f64 + 58.0;
    let height = head + panels * PANEL_H;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{height}" viewBox="0 0 {W} {height}" font-family="sans-serif">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="20" y="28" font-size="18" font-weight="bold">{}</text>"#,
        esc(title)
    );
    let mut y = 52.0;
    for c in &r.checks {
        let (mark, color) = if c.ok {
            ("✔", "#1a7f37")
        } else {
            ("✘", "#cf222e")
        };
        let _ = writeln!(
            s,
            r#"<text x="20" y="{y}" font-size="13"><tspan fill="{color}">{mark}</tspan> {}: {} (target {})</text>"#,
            esc(&c.name),
            esc(&c.value),
            esc(&c.target)
        );
        y += 18.0;
    }
    let w = &r.wait_s;
    let _ = writeln!(
        s,
        r#"<text x="20" y="{y}" font-size="13">visitors {}, admitted {}, waits p50 {:.1} s, p95 {:.1} s, p99 {:.1} s, max {:.1} s; {:.3} requests/s per waiter; peak inside {} of {}</text>"#,
        r.visitors.planned,
        r.visitors.admitted,
        w.p50,
        w.p95,
        w.p99,
        w.max,
        r.polling.requests_per_second_per_waiter,
        r.capacity.peak_active,
        r.capacity.capacity
    );
    let h = &r.holds;
    let _ = writeln!(
        s,
        r#"<text x="20" y="{}" font-size="13">holds {} ({} s each): {} booked, {} let run out on purpose, {} ran out while buying, {} unfinished; hold to booking p99 {:.1} s, max {:.1} s</text>"#,
        y + 18.0,
        h.taken,
        h.hold_seconds,
        h.booked,
        h.let_run_out,
        h.ran_out_while_buying,
        h.unfinished,
        h.hold_to_booking_s.p99,
        h.hold_to_booking_s.max
    );
    let mut top = head;

    let secs = r.admissions.per_second.len() as f64;
    let configured = r.admissions.configured_per_second;
    let slow: Vec<Band> = r
        .adaptive
        .as_ref()
        .and_then(|a| Some((a.slow_from_s?, a.slow_to_s?)))
        .map(|(from, to)| Band {
            from,
            to,
            label: match r.scenario["slow_payment"]["latency_ms"].as_u64() {
                Some(ms) => format!("payment slowed to {ms} ms"),
                None => "payment slowed".into(),
            },
        })
        .into_iter()
        .collect();
    let mut admissions = vec![
        Series {
            name: "admitted per second".into(),
            color: "#0969da",
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
            color: "#cf222e",
            style: Style::Dashed,
            points: vec![(0.0, configured), (secs, configured)],
        },
    ];
    if r.adaptive.is_some() {
        admissions.push(Series {
            name: "configured × adaptive factor".into(),
            color: "#bf8700",
            style: Style::Line,
            points: r
                .timeline
                .iter()
                .map(|p| (p.t, configured * p.live.rate_factor))
                .collect(),
        });
    }
    panel(
        &mut s,
        top,
        "Admissions per second (origin's count) against the configured rate",
        "seconds into the run",
        &admissions,
        None,
        &slow,
    );
    top += PANEL_H;
    if let Some(a) = &r.adaptive {
        let mut series = vec![Series {
            name: "p99, each second".into(),
            color: "#8250df",
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
                color: "#cf222e",
                style: Style::Dashed,
                points: vec![(0.0, target as f64), (secs, target as f64)],
            });
        }
        panel(
            &mut s,
            top,
            "Booking API latency as the visitors saw it (ms), what adaptive admission answers to",
            "seconds into the run",
            &series,
            None,
            &slow,
        );
        top += PANEL_H;
    }
    panel(
        &mut s,
        top,
        "The waiting line and seats sold",
        "seconds into the run",
        &[
            Series {
                name: "waiting".into(),
                color: "#8250df",
                style: Style::Line,
                points: r
                    .timeline
                    .iter()
                    .map(|p| (p.t, p.live.waiting as f64))
                    .collect(),
            },
            Series {
                name: "seats booked".into(),
                color: "#1a7f37",
                style: Style::Line,
                points: r
                    .timeline
                    .iter()
                    .map(|p| (p.t, p.seats.booked as f64))
                    .collect(),
            },
            Series {
                name: "seats held".into(),
                color: "#bf8700",
                style: Style::Line,
                points: r
                    .timeline
                    .iter()
                    .map(|p| (p.t, p.seats.held as f64))
                    .collect(),
            },
        ],
        None,
        &[],
    );
    top += PANEL_H;
    panel(
        &mut s,
        top,
        "Inside against capacity",
        "seconds into the run",
        &[
            Series {
                name: "inside".into(),
                color: "#0969da",
                style: Style::Line,
                points: r
                    .timeline
                    .iter()
                    .map(|p| (p.t, p.live.active as f64))
                    .collect(),
            },
            Series {
                name: format!("capacity: {}", r.capacity.capacity),
                color: "#cf222e",
                style: Style::Dashed,
                points: vec![
                    (0.0, r.capacity.capacity as f64),
                    (r.duration_s, r.capacity.capacity as f64),
                ],
            },
        ],
        None,
        &[],
    );
    top += PANEL_H;
    panel(
        &mut s,
        top,
        "Wait distribution (join to admission)",
        "wait, seconds",
        &[Series {
            name: "visitors".into(),
            color: "#0969da",
            style: Style::Bars,
            points: r
                .wait_histogram
                .iter()
                .enumerate()
                .map(|(i, n)| (i as f64 * r.wait_bucket_s, *n as f64))
                .collect(),
        }],
        None,
        &[],
    );
    top += PANEL_H;
    let label = |b: &crate::report::EtaBucket| b.wait_from_s as f64;
    panel(
        &mut s,
        top,
        "ETA error, % of the real wait, by whole wait (cut at 200 %)",
        "wait, seconds (ranges 0-10, 10-30, 30-60, 60-120, 120+; bars at the range's start)",
        &[
            Series {
                name: "first ETA, p50".into(),
                color: "#0969da",
                style: Style::Bars,
                points: r
                    .eta
                    .by_wait
                    .iter()
                    .map(|b| (label(b), b.first.p50 * 100.0))
                    .collect(),
            },
            Series {
                name: "first ETA, p95".into(),
                color: "#54aeff",
                style: Style::Bars,
                points: r
                    .eta
                    .by_wait
                    .iter()
                    .map(|b| (label(b), b.first.p95 * 100.0))
                    .collect(),
            },
            Series {
                name: "every ETA, p50".into(),
                color: "#bf8700",
                style: Style::Bars,
                points: r
                    .eta
                    .by_wait
                    .iter()
                    .map(|b| (label(b), b.all.p50 * 100.0))
                    .collect(),
            },
            Series {
                name: "20 % line".into(),
                color: "#cf222e",
                style: Style::Dashed,
                points: vec![(0.0, 20.0), (130.0, 20.0)],
            },
        ],
        Some(200.0),
        &[],
    );
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_round() {
        assert_eq!(step(100.0, 10.0), 10.0);
        assert_eq!(step(73.0, 4.0), 20.0);
        assert_eq!(step(0.9, 4.0), 0.5);
        assert_eq!(fmt(25_000.0), "25k");
        assert_eq!(esc("a<b&c"), "a&lt;b&amp;c");
    }
}
