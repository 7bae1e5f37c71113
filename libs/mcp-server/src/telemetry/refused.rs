//! The server span of an HTTP request that never reached a handler method: rmcp answered it
//! itself (a 2026-07-28 request without its required `_meta` keys, a `subscriptions/listen` on a
//! 2025-era session), so [`super::Traced`] never saw it. The backend's gate puts a
//! [`HandlerReached`] in each request; [`super::Traced`] marks it; once the answer is sent, the
//! gate calls [`record_refused`] for a request nobody marked.
//!
//! Made with the OpenTelemetry API rather than `tracing`, because the span is made after the
//! fact, with the request's own start time.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use opentelemetry::KeyValue;
use opentelemetry::propagation::{Extractor, TextMapPropagator as _};
use opentelemetry::trace::{Span as _, SpanKind, Status, TraceContextExt as _, Tracer as _};
use opentelemetry_sdk::propagation::TraceContextPropagator;

use super::conventions::{
    CALLER_MISTAKES, ERROR_TYPE, METHOD_NAME, NETWORK_PROTOCOL_NAME, NETWORK_TRANSPORT, RESPONSE_STATUS_CODE,
};
use super::pipeline::{duration_histogram, tracer};

/// Whether a handler method started on this HTTP request. Cheap to clone; put one in the request's
/// extensions before rmcp's service (rmcp hands the request's parts to the handler).
#[derive(Debug, Clone, Default)]
pub struct HandlerReached(Arc<AtomicBool>);

impl HandlerReached {
    /// True once a handler method started on the request.
    #[must_use]
    pub fn was_reached(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    pub(crate) fn mark(&self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Whether telemetry is on, i.e. whether [`record_refused`] records anything: the gate only then
/// watches its requests.
#[must_use]
pub fn is_on() -> bool {
    tracer().is_some()
}

/// A `traceparent` header's value as a W3C trace-context carrier.
struct OneHeader<'a>(&'a str);

impl Extractor for OneHeader<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        (key == "traceparent").then_some(self.0)
    }

    fn keys(&self) -> Vec<&str> {
        vec!["traceparent"]
    }
}

/// Records the server span and the duration of a request for `method` (a name of the protocol's)
/// that began at `began`, took `took` and was answered with the JSON-RPC error `code` without
/// reaching a handler; its parent is the HTTP `traceparent` when there is one (its `_meta` was
/// not read: rmcp refused it). Nothing when telemetry is off.
pub fn record_refused(method: &'static str, code: i64, began: SystemTime, took: Duration, traceparent: Option<&str>) {
    let Some(tracer) = tracer() else { return };
    let parent = traceparent
        .map(|value| TraceContextPropagator::new().extract(&OneHeader(value)))
        .filter(|cx| cx.span().span_context().is_valid())
        .unwrap_or_default();
    let attributes = vec![
        KeyValue::new(METHOD_NAME, method),
        KeyValue::new(NETWORK_TRANSPORT, "tcp"),
        KeyValue::new(NETWORK_PROTOCOL_NAME, "http"),
        KeyValue::new(ERROR_TYPE, code.to_string()),
        KeyValue::new(RESPONSE_STATUS_CODE, code.to_string()),
    ];
    if let Some(histogram) = duration_histogram() {
        histogram.record(took.as_secs_f64(), &attributes);
    }
    let mut span = tracer
        .span_builder(method)
        .with_kind(SpanKind::Server)
        .with_start_time(began)
        .with_attributes(attributes)
        .start_with_context(tracer, &parent);
    let caller_mistake = i32::try_from(code).is_ok_and(|code| CALLER_MISTAKES.contains(&code));
    if !caller_mistake {
        span.set_status(Status::error(code.to_string()));
    }
    span.end_with_timestamp(began + took);
}
