//! [`install`]: the OTLP pipeline, from the standard `OTEL_*` environment variables.

use std::sync::OnceLock;
use std::time::Duration;

use opentelemetry::metrics::{Histogram, MeterProvider as _};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{MetricExporter, Protocol, SpanExporter, WithExportConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::{BatchConfigBuilder, BatchSpanProcessor, SdkTracer, SdkTracerProvider};
use tracing_subscriber::Layer as _;
use tracing_subscriber::filter::Targets;

use super::conventions::{DURATION_BOUNDARIES, OPERATION_DURATION, SESSION_DURATION, SPAN_TARGET};

/// The `tracing` layer that turns the spans of [`SPAN_TARGET`] into OpenTelemetry spans; put it
/// first on the registry (`registry().with(layer)`), the log layer after it.
pub type TelemetryLayer = Box<dyn tracing_subscriber::Layer<tracing_subscriber::Registry> + Send + Sync>;

/// The most spans waiting for export; more are dropped and counted (the SDK says so in the log,
/// once when dropping starts and with the total at shutdown). `OTEL_BSP_MAX_QUEUE_SIZE` overrides it.
const DEFAULT_MAX_QUEUE: usize = 2048;

/// How long the apps let the last export take at the end: an unreachable collector is not waited
/// for longer.
pub const SHUTDOWN: Duration = Duration::from_secs(3);

/// The histogram [`super::Traced`] records into; set once, by [`install`], only when telemetry is on.
static DURATION: OnceLock<Histogram<f64>> = OnceLock::new();

/// The duration histogram when telemetry is on.
pub(crate) fn duration_histogram() -> Option<&'static Histogram<f64>> {
    DURATION.get()
}

/// The tracer of the spans made without `tracing` ([`super::record_refused`]), set with [`DURATION`].
static TRACER: OnceLock<SdkTracer> = OnceLock::new();

/// The tracer when telemetry is on.
pub(crate) fn tracer() -> Option<&'static SdkTracer> {
    TRACER.get()
}

/// `mcp.server.session.duration`, set with [`DURATION`].
static SESSION: OnceLock<Histogram<f64>> = OnceLock::new();

/// The session histogram when telemetry is on.
pub(crate) fn session_histogram() -> Option<&'static Histogram<f64>> {
    SESSION.get()
}

/// The installed pipeline: keep it until the end and call [`Telemetry::shutdown`], which exports
/// what is queued.
#[derive(Debug)]
pub struct Telemetry {
    tracer_provider: SdkTracerProvider,
    meter_provider: SdkMeterProvider,
    endpoint: String,
}

/// Whether an OTLP endpoint is configured: `OTEL_EXPORTER_OTLP_ENDPOINT`, or the traces' or
/// metrics' own endpoint, set and not empty, and `OTEL_SDK_DISABLED` not `true`.
fn configured_endpoint() -> Option<String> {
    let set = |name: &str| std::env::var(name).ok().filter(|value| !value.trim().is_empty());
    if set("OTEL_SDK_DISABLED").is_some_and(|value| value.trim().eq_ignore_ascii_case("true")) {
        return None;
    }
    set("OTEL_EXPORTER_OTLP_ENDPOINT")
        .or_else(|| set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
        .or_else(|| set("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"))
}

/// Installs the OTLP pipeline when an endpoint is configured (see [`configured_endpoint`]), else
/// returns `Ok(None)` and nothing is recorded. `service_name` is used unless `OTEL_SERVICE_NAME`
/// (or `service.name` in `OTEL_RESOURCE_ATTRIBUTES`) names the service. The exporters send
/// protobuf over HTTP from their own threads (`OTEL_EXPORTER_OTLP_TIMEOUT`, `OTEL_BSP_*`,
/// `OTEL_METRIC_EXPORT_INTERVAL`, `OTEL_TRACES_SAMPLER` honoured); nothing is ever written on stdout.
///
/// Returns the layer to give the subscriber, and the pipeline to keep (or why it could not be
/// built: the exporters refused the configuration, an endpoint that is not a URL for instance), to
/// report once logging is on ([`started`]).
pub fn install(service_name: &'static str) -> (Option<TelemetryLayer>, Result<Option<Telemetry>, String>) {
    match build(service_name) {
        Ok(Some((telemetry, layer))) => (Some(layer), Ok(Some(telemetry))),
        Ok(None) => (None, Ok(None)),
        Err(error) => (None, Err(error)),
    }
}

/// What [`install`] built, said in the log (the endpoint; never a header, which may hold a
/// collector's token).
///
/// # Errors
/// Why the pipeline could not be built.
pub fn started(installed: Result<Option<Telemetry>, String>) -> Result<Option<Telemetry>, String> {
    let telemetry = installed.map_err(|error| format!("telemetry: {error}"))?;
    if let Some(telemetry) = &telemetry {
        tracing::info!(endpoint = %without_userinfo(&telemetry.endpoint), "telemetry on: traces and metrics over OTLP/HTTP");
    }
    Ok(telemetry)
}

/// `endpoint` without a `user:password@` part, for the log.
fn without_userinfo(endpoint: &str) -> String {
    match endpoint.split_once("://") {
        Some((scheme, rest)) => match rest.split_once('/').map_or(rest, |(authority, _)| authority).rsplit_once('@') {
            Some((_, host)) => format!("{scheme}://{host}/..."),
            None => endpoint.to_owned(),
        },
        None => endpoint.to_owned(),
    }
}

fn build(service_name: &'static str) -> Result<Option<(Telemetry, TelemetryLayer)>, String> {
    let Some(endpoint) = configured_endpoint() else {
        return Ok(None);
    };
    let resource = {
        let named = std::env::var_os("OTEL_SERVICE_NAME").is_some()
            || std::env::var("OTEL_RESOURCE_ATTRIBUTES").is_ok_and(|value| value.contains("service.name="));
        let builder = Resource::builder();
        if named { builder.build() } else { builder.with_service_name(service_name).build() }
    };
    // reqwest is built with rustls and no crypto provider: install `ring` once per process (a
    // second call finds it installed, which is what it wants), before the exporters' clients.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let spans = SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .build()
        .map_err(|error| format!("cannot build the OTLP span exporter: {error}"))?;
    let mut batch = BatchConfigBuilder::default();
    if std::env::var_os("OTEL_BSP_MAX_QUEUE_SIZE").is_none() {
        batch = batch.with_max_queue_size(DEFAULT_MAX_QUEUE);
    }
    let processor = BatchSpanProcessor::builder(spans).with_batch_config(batch.build()).build();
    let tracer_provider =
        SdkTracerProvider::builder().with_span_processor(processor).with_resource(resource.clone()).build();
    let metrics = MetricExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .build()
        .map_err(|error| format!("cannot build the OTLP metric exporter: {error}"))?;
    let meter_provider = SdkMeterProvider::builder()
        .with_reader(PeriodicReader::builder(metrics).build())
        .with_resource(resource)
        .build();
    let meter = meter_provider.meter("mcp-cursos");
    let histogram = |name, description| {
        meter
            .f64_histogram(name)
            .with_unit("s")
            .with_description(description)
            .with_boundaries(DURATION_BOUNDARIES.to_vec())
            .build()
    };
    // A second install (tests in one process) keeps the first histograms: same names, same provider kind.
    let _ = SESSION.set(histogram(
        SESSION_DURATION,
        "Duration of an MCP session (a 2025-era HTTP session or a stdio connection), recorded when it ends.",
    ));
    let _ = DURATION.set(histogram(
        OPERATION_DURATION,
        "Duration of an MCP request or notification, from its receipt until its result or error is ready.",
    ));
    let tracer = tracer_provider.tracer("mcp-cursos");
    let _ = TRACER.set(tracer.clone());
    let layer = tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_location(false)
        .with_threads(false)
        .with_target(false)
        .with_tracked_inactivity(false)
        .with_filter(Targets::new().with_target(SPAN_TARGET, tracing::Level::TRACE));
    Ok(Some((Telemetry { tracer_provider, meter_provider, endpoint }, Box::new(layer))))
}

impl Telemetry {
    /// Exports what is queued and stops the exporters, waiting at most `deadline` (an unreachable
    /// collector makes the SDK retry; the process does not wait for it beyond the deadline).
    pub fn shutdown(self, deadline: Duration) {
        let (done, finished) = std::sync::mpsc::channel();
        let spawned = std::thread::Builder::new().name("otel-shutdown".into()).spawn(move || {
            let traces = self.tracer_provider.shutdown();
            let metrics = self.meter_provider.shutdown();
            let _ = done.send((traces, metrics));
        });
        if spawned.is_err() {
            tracing::warn!("telemetry: cannot start the shutdown thread; queued spans and metrics are not exported");
            return;
        }
        match finished.recv_timeout(deadline) {
            Ok((Ok(()), Ok(()))) => tracing::debug!("telemetry: exported and stopped"),
            Ok((traces, metrics)) => {
                tracing::warn!(traces = ?traces.err(), metrics = ?metrics.err(), "telemetry: the last export failed");
            }
            Err(_) => tracing::warn!(
                deadline_ms = deadline.as_millis(),
                "telemetry: the collector did not take the last export in time; it is abandoned"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::without_userinfo;

    #[test]
    fn the_logged_endpoint_has_no_credentials() {
        assert_eq!(without_userinfo("https://user:secret@collector:4318"), "https://collector:4318/...");
        assert_eq!(without_userinfo("http://collector:4318/otlp"), "http://collector:4318/otlp");
        assert_eq!(without_userinfo("http://collector:4318/a@b"), "http://collector:4318/a@b");
    }
}
