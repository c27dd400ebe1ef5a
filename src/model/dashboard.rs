//! The dashboard: the active provider and its health, recent activity, latency over time,
//! and recent failures; plus the geometry of its latency plot (drawn as SVG by the page).

use serde::{Deserialize, Serialize};

use crate::model::{
    history::ExecutionSummary,
    provider::{HealthReport, PoolState},
};

/// How far back the latency plot reaches, and how wide each of its buckets is.
pub const WINDOW_MINUTES: u32 = 360;
pub const BUCKET_MINUTES: u32 = 15;
pub const BUCKETS: usize = (WINDOW_MINUTES / BUCKET_MINUTES) as usize;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Dashboard {
    /// Empty when no provider is active.
    pub active_kind: String,
    pub active_name: String,
    pub health: HealthReport,
    pub pool: Option<PoolState>,
    /// Runs in the last hour by status, most frequent first.
    pub last_hour: Vec<(String, i64)>,
    /// Where the last hour starts (UTC, to the minute), for links into the history.
    #[serde(default)]
    pub last_hour_from: String,
    /// One entry per bucket of the window, oldest first.
    pub latency: Vec<LatencyBucket>,
    /// The latest runs that did not succeed.
    pub recent_failures: Vec<ExecutionSummary>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyBucket {
    pub runs: u32,
    pub p50_ms: u64,
    pub p95_ms: u64,
}

/// Percentile `p` (0..=100) of sorted samples, nearest rank: the definition the dashboard's
/// SQL (`db::execution::recent_latency`) computes, kept as the tests' reference.
#[cfg(test)]
pub fn percentile(sorted: &[u64], p: u32) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (u64::from(p) * sorted.len() as u64).div_ceil(100).max(1) as usize;
    sorted[rank.min(sorted.len()) - 1]
}

/// Lines and scale of the latency plot in a `width` × `height` box (y grows downwards).
#[derive(Clone, Debug, PartialEq)]
pub struct PlotGeometry {
    /// SVG polyline points (`x,y x,y ...`) over the buckets that had runs.
    pub p50: String,
    pub p95: String,
    /// The value at the top of the plot, in ms (0 when there is nothing to draw).
    pub top_ms: u64,
    pub points: Vec<(f64, f64, f64)>,
}

/// A duration for an axis or a tooltip, in the unit that fits: `840 ms`, `2.0 s`.
pub fn duration_label(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms} ms")
    } else {
        format!("{:.1} s", ms as f64 / 1000.0)
    }
}

pub fn plot(buckets: &[LatencyBucket], width: f64, height: f64) -> PlotGeometry {
    let top_ms = buckets.iter().map(|b| b.p95_ms).max().unwrap_or(0);
    let scale = if top_ms == 0 {
        0.0
    } else {
        height / top_ms as f64
    };
    let step = if buckets.len() > 1 {
        width / (buckets.len() - 1) as f64
    } else {
        0.0
    };
    let mut p50 = Vec::new();
    let mut p95 = Vec::new();
    let mut points = Vec::new();
    for (i, b) in buckets.iter().enumerate().filter(|(_, b)| b.runs > 0) {
        let x = i as f64 * step;
        let y50 = height - b.p50_ms as f64 * scale;
        let y95 = height - b.p95_ms as f64 * scale;
        p50.push(format!("{x:.1},{y50:.1}"));
        p95.push(format!("{x:.1},{y95:.1}"));
        points.push((x, y50, y95));
    }
    PlotGeometry {
        p50: p50.join(" "),
        p95: p95.join(" "),
        top_ms,
        points,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_scale_their_unit() {
        assert_eq!(duration_label(8), "8 ms");
        assert_eq!(duration_label(999), "999 ms");
        assert_eq!(duration_label(2008), "2.0 s");
        assert_eq!(duration_label(30_000), "30.0 s");
    }

    #[test]
    fn percentiles_use_the_nearest_rank() {
        let samples: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&samples, 50), 50);
        assert_eq!(percentile(&samples, 95), 95);
        assert_eq!(percentile(&[7], 95), 7);
        assert_eq!(percentile(&[], 50), 0);
    }

    #[test]
    fn an_empty_window_draws_nothing_and_does_not_divide_by_zero() {
        let empty = plot(&[LatencyBucket::default(); BUCKETS], 600.0, 200.0);
        assert_eq!((empty.p50.as_str(), empty.top_ms), ("", 0));
        assert!(plot(&[], 600.0, 200.0).points.is_empty());
    }

    #[test]
    fn the_highest_p95_touches_the_top() {
        let mut buckets = vec![LatencyBucket::default(); 3];
        buckets[0] = LatencyBucket {
            runs: 2,
            p50_ms: 10,
            p95_ms: 20,
        };
        buckets[2] = LatencyBucket {
            runs: 5,
            p50_ms: 40,
            p95_ms: 80,
        };
        let geometry = plot(&buckets, 100.0, 50.0);
        assert_eq!(geometry.top_ms, 80);
        assert_eq!(geometry.p95, "0.0,37.5 100.0,0.0");
        assert_eq!(geometry.p50, "0.0,43.8 100.0,25.0");
    }
}
