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
    /// One entry per catalog size and store, smallest first (SQLite before PostgreSQL).
    pub(crate) sizes: Vec<SizeResult>,
}

/// Which store served a size's catalog.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Store {
    Sqlite,
    Postgres,
}

impl Store {
    /// The store as the report names it.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Self::Sqlite => "SQLite",
            Self::Postgres => "PostgreSQL",
        }
    }
}

/// The measurements of one catalog size on one store.
#[derive(Debug, Clone)]
pub(crate) struct SizeResult {
    /// The store that served it.
    pub(crate) store: Store,
    /// Active courses.
    pub(crate) active: u64,
    /// Archived courses, in addition.
    pub(crate) archived: u64,
    /// How long the bulk load (SQLite) or the copy (PostgreSQL) took, or `None` when a kept one
    /// was reused.
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
        writeln!(formatter, "| Store | Active courses | Archived | Bulk load |")?;
        writeln!(formatter, "|---|---:|---:|---:|")?;
        for size in &self.sizes {
            let load =
                size.load_time.map_or_else(|| "reused".to_owned(), |time| format!("{:.1} s", time.as_secs_f64()));
            writeln!(
                formatter,
                "| {} | {} | {} | {load} |",
                size.store.label(),
                grouped(size.active),
                grouped(size.archived)
            )?;
        }
        writeln!(formatter)?;
        writeln!(
            formatter,
            "| Operation | Store | Active courses | Median µs | p90 µs | p99 µs | Median vs smallest |"
        )?;
        writeln!(formatter, "|---|---|---:|---:|---:|---:|---:|")?;
        for operation in Operation::ALL {
            for store in [Store::Sqlite, Store::Postgres] {
                let of_store = || self.sizes.iter().filter(move |size| size.store == store);
                let baseline = of_store().next().and_then(|size| size.latency(operation));
                for size in of_store() {
                    let Some(latency) = size.latency(operation) else { continue };
                    let ratio = baseline.map_or(1.0, |baseline| latency.median / baseline.median);
                    writeln!(
                        formatter,
                        "| {} | {} | {} | {:.0} | {:.0} | {:.0} | {ratio:.2}× |",
                        operation.label(),
                        store.label(),
                        grouped(size.active),
                        latency.median,
                        latency.p90,
                        latency.p99
                    )?;
                }
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
            store: Store::Sqlite,
            active,
            archived: active / 20,
            load_time: None,
            latencies: vec![(Operation::CourseById, latency(median))],
        };
        let report = Report {
            started_at: "2026-01-01T00:00:00Z".to_owned(),
            iterations: 5,
            seed: 1,
            sizes: vec![
                size(1000, 100.0),
                SizeResult { store: Store::Postgres, ..size(1000, 400.0) },
                size(1_000_000, 250.0),
                SizeResult { store: Store::Postgres, ..size(1_000_000, 600.0) },
            ],
        };
        let text = report.to_string();
        assert!(
            text.contains("| resources/read cursos://{uuid} (random) | SQLite | 1,000 | 100 | 200 | 300 | 1.00× |"),
            "{text}"
        );
        assert!(
            text.contains("| resources/read cursos://{uuid} (random) | SQLite | 1,000,000 | 250 | 500 | 750 | 2.50× |"),
            "{text}"
        );
        // Each store's ratio is to its own smallest size.
        assert!(
            text.contains(
                "| resources/read cursos://{uuid} (random) | PostgreSQL | 1,000,000 | 600 | 1200 | 1800 | 1.50× |"
            ),
            "{text}"
        );
        assert!(text.contains("| SQLite | 1,000,000 | 50,000 | reused |"), "{text}");
    }
}
