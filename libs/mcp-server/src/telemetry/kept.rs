//! [`McpHistograms`]: the conventions' two histograms kept in memory for a Prometheus endpoint
//! (`mcp.server.operation.duration`, `mcp.server.session.duration`), with the same attributes as
//! over OTLP, so that a team scraping `/metrics` sees the tool name too.
//!
//! Written by hand, as the backend's own metrics are: a few lines of exposition text, no global
//! registry. Every label value is bounded by [`super::Traced`]: a method of the protocol's (a
//! static name), a registered tool or prompt or `_OTHER`, a JSON-RPC code, a protocol revision
//! rmcp negotiated, a transport; never a client's free text.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::{Mutex, PoisonError};

use super::conventions::DURATION_BOUNDARIES;

/// An attribute set: the conventions' names, in a fixed order, with their values.
pub(crate) type Attributes = Vec<(&'static str, String)>;

#[derive(Debug, Default)]
struct Histogram {
    buckets: [u64; DURATION_BOUNDARIES.len()],
    count: u64,
    sum: f64,
}

impl Histogram {
    fn record(&mut self, seconds: f64) {
        for (bucket, bound) in self.buckets.iter_mut().zip(DURATION_BOUNDARIES) {
            if seconds <= bound {
                *bucket += 1;
            }
        }
        self.count += 1;
        self.sum += seconds;
    }
}

/// The MCP histograms of one server, for its Prometheus exposition. Give it to
/// [`super::Traced::with_histograms`] and render it with [`McpHistograms::render_into`].
#[derive(Debug, Default)]
pub struct McpHistograms {
    operations: Mutex<BTreeMap<Attributes, Histogram>>,
    sessions: Mutex<BTreeMap<Attributes, Histogram>>,
}

/// The Prometheus name of an OpenTelemetry histogram in seconds (`.` → `_`, the unit appended).
const OPERATION_DURATION: &str = "mcp_server_operation_duration_seconds";
const SESSION_DURATION: &str = "mcp_server_session_duration_seconds";

impl McpHistograms {
    pub(crate) fn record_operation(&self, attributes: Attributes, seconds: f64) {
        record(&self.operations, attributes, seconds);
    }

    pub(crate) fn record_session(&self, attributes: Attributes, seconds: f64) {
        record(&self.sessions, attributes, seconds);
    }

    /// Appends both histograms in the Prometheus text format (0.0.4), labels named as the
    /// OpenTelemetry attributes with `_` for `.`.
    ///
    /// # Errors
    /// Only `out`'s (a `String` never fails).
    pub fn render_into(&self, out: &mut impl std::fmt::Write) -> std::fmt::Result {
        writeln!(
            out,
            "# HELP {OPERATION_DURATION} Duration of an MCP request or notification, from its receipt until its result or error is ready (OpenTelemetry mcp.server.operation.duration)."
        )?;
        writeln!(out, "# TYPE {OPERATION_DURATION} histogram")?;
        render_histograms(out, OPERATION_DURATION, &self.operations)?;
        writeln!(
            out,
            "# HELP {SESSION_DURATION} Duration of an MCP session (2025-era HTTP session or stdio connection) that ended (OpenTelemetry mcp.server.session.duration)."
        )?;
        writeln!(out, "# TYPE {SESSION_DURATION} histogram")?;
        render_histograms(out, SESSION_DURATION, &self.sessions)
    }
}

fn record(histograms: &Mutex<BTreeMap<Attributes, Histogram>>, attributes: Attributes, seconds: f64) {
    // A histogram stays meaningful even if a thread panicked while holding the lock.
    histograms.lock().unwrap_or_else(PoisonError::into_inner).entry(attributes).or_default().record(seconds);
}

fn render_histograms(
    out: &mut impl std::fmt::Write,
    name: &str,
    histograms: &Mutex<BTreeMap<Attributes, Histogram>>,
) -> std::fmt::Result {
    for (attributes, histogram) in histograms.lock().unwrap_or_else(PoisonError::into_inner).iter() {
        let mut labels = String::new();
        for (key, value) in attributes {
            let _ = write!(labels, "{}=\"{}\",", key.replace('.', "_"), escaped(value));
        }
        for (bound, count) in DURATION_BOUNDARIES.iter().zip(histogram.buckets) {
            writeln!(out, "{name}_bucket{{{labels}le=\"{bound}\"}} {count}")?;
        }
        writeln!(out, "{name}_bucket{{{labels}le=\"+Inf\"}} {}", histogram.count)?;
        let labels = labels.trim_end_matches(',');
        writeln!(out, "{name}_sum{{{labels}}} {}", histogram.sum)?;
        writeln!(out, "{name}_count{{{labels}}} {}", histogram.count)?;
    }
    Ok(())
}

/// A label value as the text format wants it: `\`, `"` and line feeds escaped.
fn escaped(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_attribute_set_is_its_own_cumulative_histogram_with_prometheus_names() {
        let kept = McpHistograms::default();
        let call =
            |tool: &str| vec![("mcp.method.name", "tools/call".to_owned()), ("gen_ai.tool.name", tool.to_owned())];
        kept.record_operation(call("criar_curso"), 0.004);
        kept.record_operation(call("criar_curso"), 0.3);
        kept.record_operation(call("_OTHER"), 0.004);
        kept.record_session(vec![("network.transport", "pipe".to_owned())], 42.0);
        let mut text = String::new();
        kept.render_into(&mut text).expect("rendered");
        for line in [
            "# TYPE mcp_server_operation_duration_seconds histogram",
            r#"mcp_server_operation_duration_seconds_bucket{mcp_method_name="tools/call",gen_ai_tool_name="criar_curso",le="0.01"} 1"#,
            r#"mcp_server_operation_duration_seconds_bucket{mcp_method_name="tools/call",gen_ai_tool_name="criar_curso",le="0.5"} 2"#,
            r#"mcp_server_operation_duration_seconds_bucket{mcp_method_name="tools/call",gen_ai_tool_name="criar_curso",le="+Inf"} 2"#,
            r#"mcp_server_operation_duration_seconds_count{mcp_method_name="tools/call",gen_ai_tool_name="criar_curso"} 2"#,
            r#"mcp_server_operation_duration_seconds_count{mcp_method_name="tools/call",gen_ai_tool_name="_OTHER"} 1"#,
            r#"mcp_server_session_duration_seconds_bucket{network_transport="pipe",le="30"} 0"#,
            r#"mcp_server_session_duration_seconds_bucket{network_transport="pipe",le="60"} 1"#,
            r#"mcp_server_session_duration_seconds_sum{network_transport="pipe"} 42"#,
        ] {
            assert!(text.lines().any(|candidate| candidate == line), "missing {line:?} in\n{text}");
        }
    }

    #[test]
    fn a_label_value_cannot_break_out_of_its_quotes() {
        assert_eq!(escaped("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}
