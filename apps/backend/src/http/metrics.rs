//! [`Metrics`]: Prometheus counters and histograms for operators (`METRICS=true`, `GET /metrics`).
//!
//! Written by hand over atomics and one mutex-guarded map: the exposition format is a few lines of
//! text, and a metrics crate would bring a global registry and more compile time than the code it
//! saves. Every label value comes from a closed list ([`MCP_METHODS`], HTTP status codes), never
//! from what a client sends, so a hostile client cannot grow the label set.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use courses_domain::PoolStatus;
use mcp_server::HubCounts;
use mcp_server::telemetry::{HandlerReached, McpHistograms};

/// The JSON-RPC methods counted by name; anything else is counted as `other`.
pub const MCP_METHODS: [&str; 20] = [
    "initialize",
    "server/discover",
    "ping",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "resources/subscribe",
    "resources/unsubscribe",
    "subscriptions/listen",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
    "notifications/initialized",
    "notifications/cancelled",
    "notifications/subscriptions/cancelled",
    "GET",
    "DELETE",
];

/// Upper bounds (seconds) of the latency histogram's buckets.
const BUCKETS: [f64; 14] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

/// The label of a request's method: a known MCP method name, `batch`, `other`, or the HTTP method
/// for `GET`/`DELETE` (streams and session ends).
#[must_use]
pub fn method_label(http_method: &axum::http::Method, body: &[u8]) -> &'static str {
    RequestLabel::of(http_method, body).method
}

/// What one `/mcp` request asked for, read from its body once: the method label (a closed list,
/// [`method_label`]) and, for a call, a read or a subscription, the tool, prompt or resource it
/// names (`params.name` or `params.uri`, at most [`MAX_TARGET_CHARS`] characters; logged, never
/// a metric label).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestLabel {
    /// The method label.
    pub method: &'static str,
    /// The tool or prompt name, or the resource URI.
    pub target: Option<String>,
}

/// The longest tool name or resource URI a log event carries.
pub const MAX_TARGET_CHARS: usize = 200;

/// `text`'s first [`MAX_TARGET_CHARS`] characters.
fn truncated(text: &str) -> String {
    match text.char_indices().nth(MAX_TARGET_CHARS) {
        Some((end, _)) => text[..end].to_owned(),
        None => text.to_owned(),
    }
}

impl RequestLabel {
    /// The label of a `resources/read` of `uri`: what [`RequestLabel::of`] reads from such a body.
    #[must_use]
    pub fn resource_read(uri: &str) -> Self {
        Self { method: "resources/read", target: Some(truncated(uri)) }
    }

    /// Whether the body is one JSON-RPC request of the protocol's (not a notification, a response,
    /// a batch, something unreadable, or a stream's GET or a session's DELETE).
    #[must_use]
    pub fn is_request(&self) -> bool {
        MCP_METHODS.contains(&self.method)
            && !self.method.starts_with("notifications/")
            && !matches!(self.method, "GET" | "DELETE")
    }

    /// Reads the label of a request with this HTTP method and body.
    #[must_use]
    pub fn of(http_method: &axum::http::Method, body: &[u8]) -> Self {
        #[derive(serde::Deserialize)]
        struct Params {
            name: Option<serde_json::Value>,
            uri: Option<serde_json::Value>,
        }
        #[derive(serde::Deserialize)]
        struct Envelope<'a> {
            #[serde(borrow)]
            method: Option<std::borrow::Cow<'a, str>>,
            params: Option<Params>,
        }
        let only = |method| Self { method, target: None };
        if *http_method == axum::http::Method::GET {
            return only("GET");
        }
        if *http_method == axum::http::Method::DELETE {
            return only("DELETE");
        }
        if body.iter().find(|byte| !byte.is_ascii_whitespace()) == Some(&b'[') {
            return only("batch");
        }
        match serde_json::from_slice::<Envelope<'_>>(body) {
            Ok(Envelope { method: Some(method), params }) => {
                let method = MCP_METHODS.iter().find(|known| **known == method).copied().unwrap_or("other");
                let target = params
                    .and_then(|params| params.name.or(params.uri))
                    .and_then(|value| value.as_str().map(truncated));
                Self { method, target }
            }
            // A response or notification without a method (a client answering an elicitation).
            Ok(Envelope { method: None, .. }) => only("response"),
            Err(_) => only("invalid"),
        }
    }
}

#[derive(Debug, Default)]
struct Histogram {
    buckets: [u64; BUCKETS.len()],
    count: u64,
    sum: Duration,
}

/// The backend's metrics. Cheap to update from any task.
#[derive(Debug, Default)]
pub struct Metrics {
    /// `(method, status)` → requests answered.
    requests: Mutex<BTreeMap<(&'static str, u16), u64>>,
    /// method → latency, from the request to the end of its response body (SSE streams included).
    latencies: Mutex<BTreeMap<&'static str, Histogram>>,
    /// status → responses on every route, refusals before authentication included.
    responses: Mutex<BTreeMap<u16, u64>>,
    in_flight: AtomicU64,
    /// The OpenTelemetry MCP conventions' histograms (per tool, per prompt, per outcome), recorded
    /// by the handler ([`mcp_server::telemetry::Traced`]).
    mcp: std::sync::Arc<McpHistograms>,
}

impl Metrics {
    /// The histograms the handler records into, shown after the backend's own metrics.
    #[must_use]
    pub fn mcp_histograms(&self) -> std::sync::Arc<McpHistograms> {
        std::sync::Arc::clone(&self.mcp)
    }

    /// Counts one response of any route (401, 403, 429 included).
    pub fn response(&self, status: u16) {
        *lock(&self.responses).entry(status).or_default() += 1;
    }

    /// Starts timing an authenticated `/mcp` request; the returned guard records it when dropped
    /// (once the response body has been sent, or abandoned).
    pub fn start(self: &std::sync::Arc<Self>, method: &'static str) -> RequestTimer {
        RequestTimer::start(Some(std::sync::Arc::clone(self)), RequestLabel { method, target: None }, None)
    }

    fn finish(&self, method: &'static str, status: u16, elapsed: Duration) {
        self.in_flight.fetch_sub(1, Ordering::Relaxed);
        *lock(&self.requests).entry((method, status)).or_default() += 1;
        let mut latencies = lock(&self.latencies);
        let histogram = latencies.entry(method).or_default();
        let seconds = elapsed.as_secs_f64();
        for (bucket, bound) in histogram.buckets.iter_mut().zip(BUCKETS) {
            if seconds <= bound {
                *bucket += 1;
            }
        }
        histogram.count += 1;
        histogram.sum += elapsed;
    }

    /// The Prometheus text exposition (format 0.0.4) of every metric, with the process-wide gauges
    /// read now.
    #[must_use]
    pub fn render(&self, sessions: Option<usize>, listeners: HubCounts, pool: PoolStatus) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = self.render_into(&mut out, sessions, listeners, pool);
        out
    }

    fn render_into(
        &self,
        out: &mut String,
        sessions: Option<usize>,
        listeners: HubCounts,
        pool: PoolStatus,
    ) -> std::fmt::Result {
        writeln!(out, "# HELP mcp_cursos_requests_total MCP requests on /mcp by JSON-RPC method and HTTP status.")?;
        writeln!(out, "# TYPE mcp_cursos_requests_total counter")?;
        for ((method, status), count) in lock(&self.requests).iter() {
            writeln!(out, "mcp_cursos_requests_total{{method=\"{method}\",status=\"{status}\"}} {count}")?;
        }
        writeln!(
            out,
            "# HELP mcp_cursos_request_duration_seconds Time from an MCP request to the end of its response (streams included)."
        )?;
        writeln!(out, "# TYPE mcp_cursos_request_duration_seconds histogram")?;
        for (method, histogram) in lock(&self.latencies).iter() {
            for (bound, count) in BUCKETS.iter().zip(histogram.buckets) {
                writeln!(
                    out,
                    "mcp_cursos_request_duration_seconds_bucket{{method=\"{method}\",le=\"{bound}\"}} {count}"
                )?;
            }
            let count = histogram.count;
            writeln!(out, "mcp_cursos_request_duration_seconds_bucket{{method=\"{method}\",le=\"+Inf\"}} {count}")?;
            let sum = histogram.sum.as_secs_f64();
            writeln!(out, "mcp_cursos_request_duration_seconds_sum{{method=\"{method}\"}} {sum}")?;
            writeln!(out, "mcp_cursos_request_duration_seconds_count{{method=\"{method}\"}} {count}")?;
        }
        writeln!(
            out,
            "# HELP mcp_cursos_http_responses_total HTTP responses on every route by status (refusals included)."
        )?;
        writeln!(out, "# TYPE mcp_cursos_http_responses_total counter")?;
        for (status, count) in lock(&self.responses).iter() {
            writeln!(out, "mcp_cursos_http_responses_total{{status=\"{status}\"}} {count}")?;
        }
        let gauges = [
            (
                "mcp_cursos_requests_in_flight",
                "MCP requests being answered now.",
                self.in_flight.load(Ordering::Relaxed),
            ),
            (
                "mcp_cursos_sessions",
                "Open MCP sessions (stateful mode; 0 when stateless).",
                to_u64(sessions.unwrap_or(0)),
            ),
            ("mcp_cursos_subscribed_sessions", "2025-era sessions receiving live updates.", to_u64(listeners.sessions)),
            (
                "mcp_cursos_resource_subscriptions",
                "resources/subscribe held by those sessions.",
                to_u64(listeners.subscriptions),
            ),
            (
                "mcp_cursos_listen_streams",
                "Open 2026-07-28 subscriptions/listen streams.",
                to_u64(listeners.listen_streams),
            ),
            (
                "mcp_cursos_db_pool_max_connections",
                "The most connections the store's pool opens.",
                u64::from(pool.max_size),
            ),
            ("mcp_cursos_db_pool_connections", "Open connections of the store's pool.", u64::from(pool.connections)),
            ("mcp_cursos_db_pool_idle_connections", "Idle connections of the store's pool.", u64::from(pool.idle)),
        ];
        for (name, help, value) in gauges {
            writeln!(out, "# HELP {name} {help}")?;
            writeln!(out, "# TYPE {name} gauge")?;
            writeln!(out, "{name} {value}")?;
        }
        let name = "mcp_cursos_slow_listeners_dropped_total";
        writeln!(out, "# HELP {name} Live-update listeners dropped because their client stopped reading (ADR 0022).")?;
        writeln!(out, "# TYPE {name} counter")?;
        writeln!(out, "{name} {}", listeners.slow_listeners_dropped)?;
        self.mcp.render_into(out)
    }
}

fn to_u64(value: usize) -> u64 {
    u64::try_from(value).unwrap_or(u64::MAX)
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // Counters stay meaningful even if a thread panicked while holding the lock.
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Observes one `/mcp` request until dropped (once its response body has been sent, or
/// abandoned): then logs it, one `mcp request` event with the method, the tool or resource, the
/// caller's name (never a key), the HTTP status, the JSON-RPC error code if the response carried
/// one, and the duration; and records it in the metrics when they are on.
#[derive(Debug)]
pub struct RequestTimer {
    metrics: Option<std::sync::Arc<Metrics>>,
    label: RequestLabel,
    caller: Option<String>,
    status: u16,
    jsonrpc_error: Option<i64>,
    started: Instant,
    /// With telemetry on: whether a handler saw the request, else its span is made here.
    refusal_watch: Option<RefusalWatch>,
}

/// What the span of a request rmcp answers without a handler needs.
#[derive(Debug)]
struct RefusalWatch {
    reached: HandlerReached,
    began: std::time::SystemTime,
    traceparent: Option<String>,
}

impl RequestTimer {
    /// Starts observing a request labelled `label`, made by the key named `caller`.
    #[must_use]
    pub fn start(metrics: Option<std::sync::Arc<Metrics>>, label: RequestLabel, caller: Option<String>) -> Self {
        if let Some(metrics) = &metrics {
            metrics.in_flight.fetch_add(1, Ordering::Relaxed);
        }
        Self { metrics, label, caller, status: 0, jsonrpc_error: None, started: Instant::now(), refusal_watch: None }
    }

    /// With telemetry on, for a JSON-RPC request: the marker to hand to the handler, with the
    /// request's `traceparent` header. If no handler marks it and the answer is a JSON-RPC error,
    /// the request's server span is recorded when the timer is dropped
    /// ([`mcp_server::telemetry::record_refused`]).
    pub fn watch_for_refusal(&mut self, traceparent: Option<&str>) -> Option<HandlerReached> {
        if !mcp_server::telemetry::is_on() || !self.label.is_request() {
            return None;
        }
        let reached = HandlerReached::default();
        self.refusal_watch = Some(RefusalWatch {
            reached: reached.clone(),
            began: std::time::SystemTime::now(),
            traceparent: traceparent.map(str::to_owned),
        });
        Some(reached)
    }

    /// The HTTP status the request was answered with.
    pub fn set_status(&mut self, status: u16) {
        self.status = status;
    }

    /// Looks at a chunk of the response body for a JSON-RPC error (`"error":{"code":N`); the first
    /// one found is the request's outcome. A string inside a result cannot match: its quotes are
    /// escaped.
    pub fn saw_response_bytes(&mut self, chunk: &[u8]) {
        if self.jsonrpc_error.is_none() {
            self.jsonrpc_error = jsonrpc_error_code(chunk);
        }
    }
}

fn jsonrpc_error_code(chunk: &[u8]) -> Option<i64> {
    const MARKER: &[u8] = br#""error":{"code":"#;
    let start = memchr::memmem::find(chunk, MARKER)? + MARKER.len();
    let rest = &chunk[start..];
    let end = rest.iter().position(|byte| !(byte.is_ascii_digit() || *byte == b'-')).unwrap_or(rest.len());
    std::str::from_utf8(&rest[..end]).ok()?.parse().ok()
}

impl Drop for RequestTimer {
    fn drop(&mut self) {
        let elapsed = self.started.elapsed();
        tracing::info!(
            target: "backend::metrics",
            method = self.label.method,
            name = self.label.target.as_deref(),
            caller = self.caller.as_deref(),
            status = self.status,
            jsonrpc_error = self.jsonrpc_error,
            duration_ms = elapsed.as_secs_f64() * 1000.0,
            "mcp request"
        );
        if let Some(metrics) = &self.metrics {
            metrics.finish(self.label.method, self.status, elapsed);
        }
        if let (Some(watch), Some(code)) = (self.refusal_watch.take(), self.jsonrpc_error)
            && !watch.reached.was_reached()
        {
            mcp_server::telemetry::record_refused(
                self.label.method,
                code,
                watch.began,
                elapsed,
                watch.traceparent.as_deref(),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use axum::http::Method;

    use super::*;

    #[test]
    fn methods_are_labelled_from_a_closed_list() {
        let post = Method::POST;
        assert_eq!(method_label(&post, br#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#), "tools/call");
        assert_eq!(method_label(&post, br#"{"method":"tools/\u0063all"}"#), "tools/call");
        assert_eq!(method_label(&post, br#"{"method":"x-attacker-chosen-label"}"#), "other");
        assert_eq!(method_label(&post, br#" [{"method":"ping"}]"#), "batch");
        assert_eq!(method_label(&post, br#"{"jsonrpc":"2.0","id":1,"result":{}}"#), "response");
        assert_eq!(method_label(&post, b"{not json"), "invalid");
        assert_eq!(method_label(&Method::GET, b""), "GET");
        assert_eq!(method_label(&Method::DELETE, b""), "DELETE");
    }

    #[test]
    fn only_a_request_of_the_protocol_may_get_a_span_for_its_refusal() {
        let post = Method::POST;
        let label = |body: &[u8]| RequestLabel::of(&post, body);
        assert!(label(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#).is_request());
        assert!(label(br#"{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen"}"#).is_request());
        // A notification's handler may run after its 202 is sent: never taken for a refusal.
        assert!(!label(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).is_request());
        assert!(!label(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#).is_request());
        assert!(!label(br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#).is_request());
        assert!(!label(br#"{"jsonrpc":"2.0","id":1,"method":"x-outro"}"#).is_request());
        assert!(!label(b"{not json").is_request());
        assert!(!RequestLabel::of(&Method::GET, b"").is_request());
        assert!(!RequestLabel::of(&Method::DELETE, b"").is_request());
    }

    #[test]
    fn a_request_label_names_the_tool_prompt_or_resource() {
        let post = Method::POST;
        let call = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"criar_curso","arguments":{}}}"#;
        assert_eq!(
            RequestLabel::of(&post, call),
            RequestLabel { method: "tools/call", target: Some("criar_curso".to_owned()) }
        );
        let read = br#"{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"cursos://catalogo"}}"#;
        assert_eq!(RequestLabel::of(&post, read).target.as_deref(), Some("cursos://catalogo"));
        let odd = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":7}}"#;
        assert_eq!(RequestLabel::of(&post, odd), RequestLabel { method: "tools/call", target: None });
        let long = format!(r#"{{"method":"prompts/get","params":{{"name":"{}"}}}}"#, "x".repeat(1000));
        assert_eq!(RequestLabel::of(&post, long.as_bytes()).target.map(|name| name.len()), Some(MAX_TARGET_CHARS));
    }

    #[test]
    fn a_jsonrpc_error_code_is_read_from_a_response_but_not_from_a_string_inside_it() {
        assert_eq!(
            jsonrpc_error_code(br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"x"}}"#),
            Some(-32602)
        );
        assert_eq!(
            jsonrpc_error_code(br#"data: {"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"x"}}"#),
            Some(-32603)
        );
        let result = br#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"text":"{\"error\":{\"code\":1}}"}]}}"#;
        assert_eq!(jsonrpc_error_code(result), None);
    }

    #[test]
    fn the_exposition_counts_requests_latencies_and_gauges() {
        let metrics = Arc::new(Metrics::default());
        for _ in 0..3 {
            let mut timer = metrics.start("tools/call");
            timer.set_status(200);
        }
        metrics.start("resources/read").set_status(200);
        metrics.response(401);
        metrics.response(200);
        let pool = PoolStatus { max_size: 8, connections: 2, idle: 1 };
        let listeners = HubCounts { sessions: 1, subscriptions: 2, listen_streams: 3, slow_listeners_dropped: 5 };
        let text = metrics.render(Some(4), listeners, pool);
        for line in [
            "mcp_cursos_requests_total{method=\"tools/call\",status=\"200\"} 3",
            "mcp_cursos_requests_total{method=\"resources/read\",status=\"200\"} 1",
            "mcp_cursos_request_duration_seconds_count{method=\"tools/call\"} 3",
            "mcp_cursos_request_duration_seconds_bucket{method=\"tools/call\",le=\"+Inf\"} 3",
            "mcp_cursos_http_responses_total{status=\"401\"} 1",
            "mcp_cursos_requests_in_flight 0",
            "mcp_cursos_sessions 4",
            "mcp_cursos_resource_subscriptions 2",
            "mcp_cursos_listen_streams 3",
            "mcp_cursos_slow_listeners_dropped_total 5",
            "mcp_cursos_db_pool_max_connections 8",
            "mcp_cursos_db_pool_idle_connections 1",
        ] {
            assert!(text.lines().any(|candidate| candidate == line), "missing {line:?} in\n{text}");
        }
    }

    #[test]
    fn histogram_buckets_are_cumulative() {
        let metrics = Metrics::default();
        metrics.in_flight.fetch_add(2, Ordering::Relaxed);
        metrics.finish("ping", 200, Duration::from_micros(300));
        metrics.finish("ping", 200, Duration::from_millis(30));
        let text = metrics.render(None, HubCounts::default(), PoolStatus::default());
        assert!(
            text.contains("mcp_cursos_request_duration_seconds_bucket{method=\"ping\",le=\"0.0005\"} 1\n"),
            "{text}"
        );
        assert!(text.contains("mcp_cursos_request_duration_seconds_bucket{method=\"ping\",le=\"0.05\"} 2\n"), "{text}");
        assert!(text.contains("mcp_cursos_request_duration_seconds_bucket{method=\"ping\",le=\"+Inf\"} 2\n"), "{text}");
    }
}
