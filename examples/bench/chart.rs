//! The latency distributions as an SVG chart next to the report: one row per path, a box from
//! the 25th to the 75th percentile, whiskers to the 5th and 95th, the median marked, every
//! sample a faint dot, on a logarithmic axis of milliseconds.

use std::fmt::Write as _;

/// One row: its label and its samples (ms).
pub struct Series {
    pub label: String,
    pub samples: Vec<f64>,
}

const ROW: f64 = 26.0;
const LEFT: f64 = 430.0;
const WIDTH: f64 = 1000.0;
const TOP: f64 = 40.0;

fn quantile(sorted: &[f64], q: f64) -> f64 {
    let at = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[at.min(sorted.len() - 1)]
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The chart of `series` (rows without samples are left out).
pub fn svg(title: &str, series: &[Series]) -> String {
    let rows: Vec<(&Series, Vec<f64>)> = series
        .iter()
        .filter(|s| !s.samples.is_empty())
        .map(|s| {
            let mut sorted = s.samples.clone();
            sorted.sort_by(f64::total_cmp);
            (s, sorted)
        })
        .collect();
    let low = rows
        .iter()
        .map(|(_, s)| s[0])
        .fold(f64::INFINITY, f64::min)
        .max(0.1);
    let high = rows.iter().map(|(_, s)| s[s.len() - 1]).fold(1.0, f64::max);
    let (from, to) = (
        low.log10().floor(),
        high.log10().ceil().max(low.log10().floor() + 1.0),
    );
    let span = WIDTH - LEFT - 20.0;
    let x = |ms: f64| LEFT + (ms.max(0.1).log10() - from) / (to - from) * span;
    let height = TOP + rows.len() as f64 * ROW + 40.0;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(out, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        out,
        r#"<text x="10" y="20" font-size="14" font-weight="bold">{}</text>"#,
        escape(title)
    );
    let bottom = TOP + rows.len() as f64 * ROW;
    let mut decade = from;
    while decade <= to {
        let ms = 10f64.powf(decade);
        let at = x(ms);
        let label = if ms >= 1000.0 {
            format!("{} s", ms / 1000.0)
        } else {
            format!("{ms} ms")
        };
        let _ = writeln!(
            out,
            r##"<line x1="{at:.1}" y1="{TOP}" x2="{at:.1}" y2="{bottom}" stroke="#ddd"/><text x="{at:.1}" y="{:.1}" text-anchor="middle" fill="#555">{label}</text>"##,
            bottom + 16.0
        );
        decade += 1.0;
    }
    for (i, (series, sorted)) in rows.iter().enumerate() {
        let mid = TOP + i as f64 * ROW + ROW / 2.0;
        let [p5, p25, p50, p75, p95] = [0.05, 0.25, 0.5, 0.75, 0.95].map(|q| quantile(sorted, q));
        let _ = writeln!(
            out,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            LEFT - 8.0,
            mid + 4.0,
            escape(&series.label)
        );
        for sample in sorted {
            let _ = writeln!(
                out,
                r##"<circle cx="{:.1}" cy="{mid:.1}" r="1.5" fill="#1f77b4" fill-opacity="0.25"/>"##,
                x(*sample)
            );
        }
        let _ = writeln!(
            out,
            r##"<line x1="{:.1}" y1="{mid:.1}" x2="{:.1}" y2="{mid:.1}" stroke="#333"/><rect x="{:.1}" y="{:.1}" width="{:.1}" height="12" fill="#9ecae1" fill-opacity="0.6" stroke="#333"/><line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#d62728" stroke-width="2"/><text x="{:.1}" y="{:.1}" fill="#555">{p50:.1} ms</text>"##,
            x(p5),
            x(p95),
            x(p25),
            mid - 6.0,
            (x(p75) - x(p25)).max(1.0),
            x(p50),
            mid - 8.0,
            x(p50),
            mid + 8.0,
            x(p95) + 6.0,
            mid + 4.0
        );
    }
    out.push_str("</svg>\n");
    out
}
