//! Latency statistics.

use std::time::Duration;

/// Recorded latencies of one kind of operation.
#[derive(Debug, Clone, Default)]
pub struct Latencies {
    micros: Vec<u32>,
}

impl Latencies {
    /// No samples yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records one sample.
    pub fn record(&mut self, elapsed: Duration) {
        self.micros
            .push(u32::try_from(elapsed.as_micros()).unwrap_or(u32::MAX));
    }

    /// Adds every sample of `other`.
    pub fn merge(&mut self, other: &Self) {
        self.micros.extend_from_slice(&other.micros);
    }

    /// How many samples.
    pub fn len(&self) -> usize {
        self.micros.len()
    }

    /// Whether there are no samples.
    pub fn is_empty(&self) -> bool {
        self.micros.is_empty()
    }

    /// The `p`-th percentile (0–100, nearest rank), `None` without samples.
    pub fn percentile(&self, p: f64) -> Option<Duration> {
        if self.micros.is_empty() {
            return None;
        }
        let mut sorted = self.micros.clone();
        sorted.sort_unstable();
        let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
        let index = rank.clamp(1, sorted.len()) - 1;
        Some(Duration::from_micros(u64::from(sorted[index])))
    }

    /// The largest sample.
    pub fn max(&self) -> Option<Duration> {
        self.micros
            .iter()
            .max()
            .map(|&m| Duration::from_micros(u64::from(m)))
    }
}

/// Milliseconds with two decimals, for reports.
pub fn ms(duration: Option<Duration>) -> String {
    duration.map_or_else(
        || "-".to_owned(),
        |d| format!("{:.2}", d.as_secs_f64() * 1000.0),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let mut l = Latencies::new();
        for n in 1..=100u64 {
            l.record(Duration::from_micros(n));
        }
        assert_eq!(l.percentile(50.0), Some(Duration::from_micros(50)));
        assert_eq!(l.percentile(99.0), Some(Duration::from_micros(99)));
        assert_eq!(l.percentile(100.0), Some(Duration::from_micros(100)));
        assert_eq!(l.percentile(0.0), Some(Duration::from_micros(1)));
        assert_eq!(Latencies::new().percentile(50.0), None);
    }
}
