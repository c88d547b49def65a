//! Median and percentiles of per-reply samples.

use std::time::Duration;

/// Summary of the timed replies, in microseconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Summary {
    /// The median.
    pub median_us: f64,
    /// The 10th percentile (nearest rank).
    pub p10_us: f64,
    /// The 90th percentile (nearest rank).
    pub p90_us: f64,
    /// The mean.
    pub mean_us: f64,
}

/// Summarizes `samples` (at least one).
pub fn summarize(samples: &[Duration]) -> Summary {
    let mut us: Vec<f64> = samples.iter().map(|d| d.as_secs_f64() * 1e6).collect();
    us.sort_by(f64::total_cmp);
    let n = us.len();
    let median = if n % 2 == 1 {
        us[n / 2]
    } else {
        (us[n / 2 - 1] + us[n / 2]) / 2.0
    };
    Summary {
        median_us: median,
        p10_us: nearest_rank(&us, 0.10),
        p90_us: nearest_rank(&us, 0.90),
        mean_us: us.iter().sum::<f64>() / n as f64,
    }
}

/// The same nearest-rank rule as the Python benches: index `round(q * (n - 1))`.
fn nearest_rank(sorted: &[f64], q: f64) -> f64 {
    let idx = (q * (sorted.len() - 1) as f64).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_one_to_eleven() {
        let samples: Vec<Duration> = (1..=11).map(Duration::from_micros).collect();
        let s = summarize(&samples);
        assert_eq!((s.median_us, s.p10_us, s.p90_us, s.mean_us), (6.0, 2.0, 10.0, 6.0));
    }
}
