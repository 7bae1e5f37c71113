//! The benchmark's result and its markdown form.

use std::fmt::{self, Display, Formatter};
use std::time::Duration;

use crate::measure::{Latency, Operation};

/// Everything measured in one run.
#[derive(Debug, Clone)]
pub(crate) struct Report {
    /// When the run started (UTC, RFC 3339).
    pub(crate) started_at: String,
    /// Timed calls per operation and size.
    pub(crate) iterations: usize,
    /// The data set and request seed.
    pub(crate) seed: u64,
    /// One entry per catalog size, smallest first.
    pub(crate) sizes: Vec<SizeResult>,
}

/// The measurements of one catalog size.
#[derive(Debug, Clone)]
pub(crate) struct SizeResult {
    /// Active courses.
    pub(crate) active: u64,
    /// Archived courses, in addition.
    pub(crate) archived: u64,
    /// How long the bulk load took, or `None` when a kept file was reused.
    pub(crate) load_time: Option<Duration>,
    /// Latency per operation.
    pub(crate) latencies: Vec<(Operation, Latency)>,
}

impl SizeResult {
    fn latency(&self, operation: Operation) -> Option<Latency> {
        self.latencies.iter().find(|(measured, _)| *measured == operation).map(|(_, latency)| *latency)
    }
}

impl Display for Report {
    fn fmt(&self, formatter: &mut Formatter<'_>) -> fmt::Result {
        writeln!(formatter, "### mcp-cursos scale benchmark, {}", self.started_at)?;
        writeln!(formatter)?;
        writeln!(
            formatter,
            "{} timed calls per operation and size after a warm-up, seed {}. Latency is the round trip through \
             an rmcp client to the real server in process, in microseconds.",
            self.iterations, self.seed
        )?;
        writeln!(formatter)?;
        writeln!(formatter, "| Active courses | Archived | Bulk load |")?;
        writeln!(formatter, "|---:|---:|---:|")?;
        for size in &self.sizes {
            let load =
                size.load_time.map_or_else(|| "reused".to_owned(), |time| format!("{:.1} s", time.as_secs_f64()));
            writeln!(formatter, "| {} | {} | {load} |", grouped(size.active), grouped(size.archived))?;
        }
        writeln!(formatter)?;
        writeln!(formatter, "| Operation | Active courses | Median µs | p90 µs | p99 µs | Median vs smallest |")?;
        writeln!(formatter, "|---|---:|---:|---:|---:|---:|")?;
        for operation in Operation::ALL {
            let baseline = self.sizes.first().and_then(|size| size.latency(operation));
            for size in &self.sizes {
                let Some(latency) = size.latency(operation) else { continue };
                let ratio = baseline.map_or(1.0, |baseline| latency.median / baseline.median);
                writeln!(
                    formatter,
                    "| {} | {} | {:.0} | {:.0} | {:.0} | {ratio:.2}× |",
                    operation.label(),
                    grouped(size.active),
                    latency.median,
                    latency.p90,
                    latency.p99
                )?;
            }
        }
        Ok(())
    }
}

/// `1234567` as `1,234,567`.
fn grouped(number: u64) -> String {
    let digits = number.to_string();
    let mut text = String::with_capacity(digits.len() + digits.len() / 3);
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            text.push(',');
        }
        text.push(digit);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_grouped_by_thousands() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1000), "1,000");
        assert_eq!(grouped(1_000_000), "1,000,000");
    }

    #[test]
    fn the_table_has_one_row_per_operation_and_size_with_the_ratio_to_the_smallest() {
        let latency = |median| Latency { median, p90: median * 2.0, p99: median * 3.0 };
        let size = |active, median| SizeResult {
            active,
            archived: active / 20,
            load_time: None,
            latencies: vec![(Operation::CourseById, latency(median))],
        };
        let report = Report {
            started_at: "2026-01-01T00:00:00Z".to_owned(),
            iterations: 5,
            seed: 1,
            sizes: vec![size(1000, 100.0), size(1_000_000, 250.0)],
        };
        let text = report.to_string();
        assert!(
            text.contains("| resources/read cursos://{uuid} (random) | 1,000 | 100 | 200 | 300 | 1.00× |"),
            "{text}"
        );
        assert!(
            text.contains("| resources/read cursos://{uuid} (random) | 1,000,000 | 250 | 500 | 750 | 2.50× |"),
            "{text}"
        );
        assert!(text.contains("| 1,000,000 | 50,000 | reused |"), "{text}");
    }
}
