//! [`Traced`]: a handler whose every request gets its server span and its duration recorded.
#![allow(
    deprecated,
    reason = "forwards the legacy methods (logging/setLevel, resources/subscribe) the handler still serves to 2025-era peers"
)]

use std::borrow::Cow;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use opentelemetry::KeyValue;
use opentelemetry::metrics::Histogram;
use opentelemetry::propagation::{Extractor, TextMapPropagator as _};
use opentelemetry::trace::TraceContextExt as _;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, CancelledNotificationParam, CompleteRequestParams,
    CompleteResult, CustomNotification, CustomRequest, CustomResult, DiscoverResult, GetPromptRequestParams,
    GetPromptResponse, GetSkillRequestParams, GetSkillResult, GetTaskParams, GetTaskResult, InitializeRequestParams,
    InitializeResult, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListSkillsResult,
    ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ProtocolVersion,
    ReadResourceDirectoryRequestParams, ReadResourceDirectoryResult, ReadResourceRequestParams, ReadResourceResponse,
    ServerConfig, SetLevelRequestParams, SubscribeRequestParams, SubscriptionFilter, Tool, UnsubscribeRequestParams,
    UpdateTaskParams,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer, SubscriptionContext};
use rmcp::{ErrorData as McpError, ServerHandler};
use tracing::Instrument as _;
use tracing::field::Empty;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

use super::conventions::{
    CALLER_MISTAKES, ERROR_TYPE, EXECUTE_TOOL, MAX_TARGET_CHARS, METHOD_NAME, NETWORK_PROTOCOL_NAME, NETWORK_TRANSPORT,
    OPERATION_NAME, OTHER, PROMPT_NAME, PROTOCOL_VERSION, RESPONSE_STATUS_CODE, SPAN_TARGET, TOOL_ERROR, TOOL_NAME,
};
use super::kept::{Attributes, McpHistograms};
use super::pipeline::{duration_histogram, session_histogram};
use super::refused::HandlerReached;

/// `handler` with a server span per request and notification and the
/// `mcp.server.operation.duration` histogram, when telemetry is installed ([`super::install`])
/// or histograms are kept for Prometheus ([`Traced::with_histograms`]); with neither, a plain
/// pass-through (one check of a `OnceLock` per request). Hand `Traced::new(handler)` to rmcp
/// wherever the handler went; [`Traced::for_session`] when it serves one session to its end.
///
/// A `ServerHandler` itself (rmcp's Streamable HTTP service takes only a `ServerHandler`), so the
/// spans cover what reaches a handler method; over HTTP, the backend's gate makes the span of a
/// request rmcp refused before (a 2026-07-28 request without its required `_meta` keys; see
/// [`super::record_refused`]). An unknown method or unreadable parameters do reach the handler
/// (`on_custom_request`): their span is named `custom`.
#[derive(Debug, Clone)]
pub struct Traced<H> {
    inner: H,
    kept: Option<Arc<McpHistograms>>,
    session: Option<Arc<SessionClock>>,
}

/// Over which transport a session runs, for `mcp.server.session.duration`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionTransport {
    /// A stdio connection: one session from the process's start to the end of its input.
    Pipe,
    /// A 2025-era Streamable HTTP session: from `initialize` until it is closed or expires.
    Http,
}

impl<H> Traced<H> {
    /// Wraps `inner`.
    pub const fn new(inner: H) -> Self {
        Self { inner, kept: None, session: None }
    }

    /// Also records the operations (and the session, see [`Traced::for_session`]) in `kept`, for
    /// a Prometheus endpoint.
    #[must_use]
    pub fn with_histograms(mut self, kept: Arc<McpHistograms>) -> Self {
        if let Some(session) = &mut self.session {
            *session = Arc::new(SessionClock::new(session.transport, Some(Arc::clone(&kept))));
        }
        self.kept = Some(kept);
        self
    }

    /// This handler serves one session over `transport`: when its last clone is dropped (rmcp
    /// drops it when the session ends), `mcp.server.session.duration` is recorded. An HTTP
    /// handler that never answered an `initialize` (a 2026-07-28 request, or rmcp's own lookups)
    /// served no session and records none.
    #[must_use]
    pub fn for_session(mut self, transport: SessionTransport) -> Self {
        if duration_histogram().is_some() || self.kept.is_some() {
            self.session = Some(Arc::new(SessionClock::new(transport, self.kept.clone())));
        }
        self
    }
}

/// When a session began, and what it is, until it ends (the clock is dropped).
#[derive(Debug)]
struct SessionClock {
    transport: SessionTransport,
    began: Instant,
    /// Set by `initialize` (HTTP: only such a handler served a session) or by any request (stdio).
    protocol_version: Mutex<Option<ProtocolVersion>>,
    kept: Option<Arc<McpHistograms>>,
}

impl SessionClock {
    fn new(transport: SessionTransport, kept: Option<Arc<McpHistograms>>) -> Self {
        Self { transport, began: Instant::now(), protocol_version: Mutex::new(None), kept }
    }

    fn saw(&self, version: Option<&ProtocolVersion>, initialize: bool) {
        if (self.transport == SessionTransport::Pipe || initialize)
            && let Some(version) = version
        {
            *self.protocol_version.lock().unwrap_or_else(PoisonError::into_inner) = Some(version.clone());
        }
    }
}

impl Drop for SessionClock {
    fn drop(&mut self) {
        let version = self.protocol_version.get_mut().unwrap_or_else(PoisonError::into_inner).take();
        if self.transport == SessionTransport::Http && version.is_none() {
            return;
        }
        let http = self.transport == SessionTransport::Http;
        let mut attributes: Attributes = Vec::with_capacity(3);
        if let Some(version) = version {
            attributes.push((PROTOCOL_VERSION, version.as_str().to_owned()));
        }
        attributes.push((NETWORK_TRANSPORT, transport_name(http).to_owned()));
        if http {
            attributes.push((NETWORK_PROTOCOL_NAME, "http".to_owned()));
        }
        let seconds = self.began.elapsed().as_secs_f64();
        if let Some(histogram) = session_histogram() {
            histogram.record(seconds, &key_values(&attributes));
        }
        if let Some(kept) = &self.kept {
            kept.record_session(attributes, seconds);
        }
    }
}

const fn transport_name(http: bool) -> &'static str {
    if http { "tcp" } else { "pipe" }
}

fn key_values(attributes: &Attributes) -> Vec<KeyValue> {
    attributes.iter().map(|(key, value)| KeyValue::new(*key, value.clone())).collect()
}

/// What a request names besides its method.
#[derive(Clone, Copy)]
enum Target<'a> {
    Tool(&'a str),
    Prompt(&'a str),
    Resource(&'a str),
    None,
}

/// What one request is, for its span and its metric: all from the method, the names the
/// client gave and the transport; never arguments, titles, keys or tokens.
struct Operation {
    method: &'static str,
    tool: Option<String>,
    prompt: Option<String>,
    uri: Option<String>,
    protocol_version: Option<ProtocolVersion>,
    http: bool,
}

fn cut(text: &str) -> String {
    match text.char_indices().nth(MAX_TARGET_CHARS) {
        Some((end, _)) => text[..end].to_owned(),
        None => text.to_owned(),
    }
}

impl Operation {
    fn of(
        method: &'static str,
        target: Target<'_>,
        protocol_version: Option<ProtocolVersion>,
        extensions: &rmcp::model::Extensions,
    ) -> Self {
        let (tool, prompt, uri) = match target {
            Target::Tool(name) => (Some(cut(name)), None, None),
            Target::Prompt(name) => (None, Some(cut(name)), None),
            Target::Resource(uri) => (None, None, Some(cut(uri))),
            Target::None => (None, None, None),
        };
        Self { method, tool, prompt, uri, protocol_version, http: extensions.get::<http::request::Parts>().is_some() }
    }

    /// `{mcp.method.name} {target}`, the target being the tool's or the prompt's name.
    fn span_name(&self) -> String {
        match self.tool.as_ref().or(self.prompt.as_ref()) {
            Some(target) => format!("{} {target}", self.method),
            None => self.method.to_owned(),
        }
    }

    /// The span; `id` is the request's (a notification has none).
    fn span(&self, id: Option<&rmcp::model::RequestId>) -> tracing::Span {
        let span = tracing::trace_span!(
            target: SPAN_TARGET,
            "mcp.server.request",
            otel.name = %self.span_name(),
            otel.kind = "server",
            otel.status_code = Empty,
            otel.status_description = Empty,
            mcp.method.name = %self.method,
            jsonrpc.request.id = Empty,
            gen_ai.tool.name = Empty,
            gen_ai.operation.name = Empty,
            gen_ai.prompt.name = Empty,
            mcp.resource.uri = Empty,
            mcp.protocol.version = Empty,
            network.transport = transport_name(self.http),
            network.protocol.name = Empty,
            error.type = Empty,
            rpc.response.status_code = Empty,
        );
        if let Some(id) = id {
            span.record("jsonrpc.request.id", id.to_string().as_str());
        }
        if let Some(tool) = &self.tool {
            span.record("gen_ai.tool.name", tool.as_str());
            span.record("gen_ai.operation.name", EXECUTE_TOOL);
        }
        if let Some(prompt) = &self.prompt {
            span.record("gen_ai.prompt.name", prompt.as_str());
        }
        if let Some(uri) = &self.uri {
            span.record("mcp.resource.uri", uri.as_str());
        }
        if let Some(version) = &self.protocol_version {
            span.record("mcp.protocol.version", version.as_str());
        }
        if self.http {
            span.record("network.protocol.name", "http");
        }
        span
    }
}

/// How a request ended, for the span and the metric.
struct Ending {
    error_type: Option<String>,
    code: Option<i32>,
}

impl Ending {
    fn of<T>(result: &Result<T, McpError>, is_tool_error: impl FnOnce(&T) -> bool, modern: bool) -> Self {
        match result {
            Ok(value) if is_tool_error(value) => Self { error_type: Some(TOOL_ERROR.to_owned()), code: None },
            Ok(_) => Self { error_type: None, code: None },
            Err(error) => {
                // What rmcp answers after the handler: a resource not found is -32602 on 2026-07-28.
                let code = if modern && error.code.0 == RESOURCE_NOT_FOUND { INVALID_PARAMS } else { error.code.0 };
                Self { error_type: Some(code.to_string()), code: Some(code) }
            }
        }
    }

    /// A caller's mistake is not a server error (the conventions' `common.yaml`).
    fn is_server_error(&self) -> bool {
        self.error_type.is_some() && !self.code.is_some_and(|code| CALLER_MISTAKES.contains(&code))
    }

    fn record(&self, span: &tracing::Span) {
        if let Some(error_type) = &self.error_type {
            span.record("error.type", error_type.as_str());
            if self.is_server_error() {
                span.record("otel.status_code", "error");
                // The error's message is never copied: it may quote a title the client sent.
                span.record("otel.status_description", error_type.as_str());
            }
        }
        if let Some(code) = self.code {
            span.record("rpc.response.status_code", code.to_string().as_str());
        }
    }
}

/// `_meta` as a W3C trace-context carrier (the 2026-07-28 reserved keys `traceparent`, `tracestate`).
struct MetaCarrier<'a>(&'a serde_json::Map<String, serde_json::Value>);

impl Extractor for MetaCarrier<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(serde_json::Value::as_str)
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(String::as_str).collect()
    }
}

/// The HTTP request's headers as a W3C trace-context carrier.
struct HeaderCarrier<'a>(&'a http::HeaderMap);

impl Extractor for HeaderCarrier<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|value| value.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(http::HeaderName::as_str).collect()
    }
}

/// Sets `span`'s parent: the context in `_meta`, else the HTTP `traceparent` header; when both
/// are there and differ, the header's is linked (MCP and HTTP contexts are independent).
fn adopt_parent(
    span: &tracing::Span,
    meta: &serde_json::Map<String, serde_json::Value>,
    extensions: &rmcp::model::Extensions,
) {
    let propagator = TraceContextPropagator::new();
    let valid = |cx: opentelemetry::Context| cx.span().span_context().is_valid().then_some(cx);
    let from_meta = valid(propagator.extract(&MetaCarrier(meta)));
    let from_header = extensions
        .get::<http::request::Parts>()
        .and_then(|parts| valid(propagator.extract(&HeaderCarrier(&parts.headers))));
    match (from_meta, from_header) {
        (Some(meta), header) => {
            let meta_span = meta.span().span_context().clone();
            let _ = span.set_parent(meta);
            if let Some(header) = header {
                let linked = header.span().span_context().clone();
                if linked != meta_span {
                    span.add_link(linked);
                }
            }
        }
        (None, Some(header)) => {
            let _ = span.set_parent(header);
        }
        (None, None) => {}
    }
}

/// -32002, the 2025-era code of a resource not found; rmcp sends -32602 instead on 2026-07-28.
const RESOURCE_NOT_FOUND: i32 = -32002;
const INVALID_PARAMS: i32 = -32602;

/// A request or notification under way: its span (when telemetry is on) and when it began.
struct Started {
    operation: Operation,
    span: Option<tracing::Span>,
    at: Instant,
    histogram: Option<&'static Histogram<f64>>,
}

/// The `_meta` key of a 2026-07-28 message's protocol revision.
const PROTOCOL_VERSION_META: &str = "io.modelcontextprotocol/protocolVersion";

impl<H: ServerHandler> Traced<H> {
    /// The span of a request (with its parent), or `None` when nothing is recorded.
    fn start(&self, method: &'static str, target: Target<'_>, context: &RequestContext<RoleServer>) -> Option<Started> {
        if duration_histogram().is_none() && self.kept.is_none() {
            return None;
        }
        let operation = Operation::of(method, target, context.protocol_version(), &context.extensions);
        Some(Self::started(operation, Some(&context.id), &context.meta.0.0, &context.extensions))
    }

    /// The span of a notification, or `None` when nothing is recorded.
    fn start_notification(&self, method: &'static str, context: &NotificationContext<RoleServer>) -> Option<Started> {
        if duration_histogram().is_none() && self.kept.is_none() {
            return None;
        }
        let protocol_version = context
            .meta
            .0
            .0
            .get(PROTOCOL_VERSION_META)
            .and_then(|version| serde_json::from_value(version.clone()).ok())
            .or_else(|| context.peer.peer_info().map(|info| info.protocol_version.clone()));
        let operation = Operation::of(method, Target::None, protocol_version, &context.extensions);
        Some(Self::started(operation, None, &context.meta.0.0, &context.extensions))
    }

    fn started(
        operation: Operation,
        id: Option<&rmcp::model::RequestId>,
        meta: &serde_json::Map<String, serde_json::Value>,
        extensions: &rmcp::model::Extensions,
    ) -> Started {
        let histogram = duration_histogram();
        // Spans only for OpenTelemetry: with only Prometheus on, the histogram is all there is.
        let span = histogram.map(|_| {
            // This request has its span: the gate need not make one ([`super::refused`]).
            if let Some(reached) =
                extensions.get::<http::request::Parts>().and_then(|parts| parts.extensions.get::<HandlerReached>())
            {
                reached.mark();
            }
            let span = operation.span(id);
            adopt_parent(&span, meta, extensions);
            span
        });
        Started { operation, span, at: Instant::now(), histogram }
    }

    /// Runs a notification's handling in its span, then records it as an operation.
    async fn notified(&self, started: Option<Started>, handled: impl Future<Output = ()>) {
        let handled = async {
            handled.await;
            Ok::<(), McpError>(())
        };
        let _ = self.run(started, handled, never).await;
    }

    /// Runs `handled` in the request's span, then records how it ended and how long it took.
    async fn run<T>(
        &self,
        started: Option<Started>,
        handled: impl Future<Output = Result<T, McpError>>,
        is_tool_error: impl FnOnce(&T) -> bool,
    ) -> Result<T, McpError> {
        let Some(started) = started else {
            return handled.await;
        };
        let result = match &started.span {
            Some(span) => handled.instrument(span.clone()).await,
            None => handled.await,
        };
        let modern = started
            .operation
            .protocol_version
            .as_ref()
            .is_some_and(|version| version.as_str() >= ProtocolVersion::V_2026_07_28.as_str());
        let ending = Ending::of(&result, is_tool_error, modern);
        if let Some(span) = &started.span {
            ending.record(span);
        }
        let operation = &started.operation;
        if let Some(session) = &self.session {
            session.saw(operation.protocol_version.as_ref(), false);
        }
        let mut attributes: Attributes = vec![(METHOD_NAME, operation.method.to_owned())];
        if let Some(tool) = &operation.tool {
            // Only a registered tool's name: a client may send any name, and a metric must stay small.
            let name = if self.inner.get_tool(tool).is_some() { tool.clone() } else { OTHER.to_owned() };
            attributes.push((TOOL_NAME, name));
            attributes.push((OPERATION_NAME, EXECUTE_TOOL.to_owned()));
        }
        if let Some(prompt) = &operation.prompt {
            let known = !ending.code.is_some_and(|code| CALLER_MISTAKES.contains(&code));
            attributes.push((PROMPT_NAME, if known { prompt.clone() } else { OTHER.to_owned() }));
        }
        if let Some(version) = &operation.protocol_version {
            attributes.push((PROTOCOL_VERSION, version.as_str().to_owned()));
        }
        attributes.push((NETWORK_TRANSPORT, transport_name(operation.http).to_owned()));
        if operation.http {
            attributes.push((NETWORK_PROTOCOL_NAME, "http".to_owned()));
        }
        if let Some(error_type) = ending.error_type {
            attributes.push((ERROR_TYPE, error_type));
        }
        if let Some(code) = ending.code {
            attributes.push((RESPONSE_STATUS_CODE, code.to_string()));
        }
        let seconds = started.at.elapsed().as_secs_f64();
        if let Some(histogram) = started.histogram {
            histogram.record(seconds, &key_values(&attributes));
        }
        if let Some(kept) = &self.kept {
            kept.record_operation(attributes, seconds);
        }
        result
    }
}

const fn never<T>(_: &T) -> bool {
    false
}

fn tool_failed(response: &CallToolResponse) -> bool {
    matches!(response, CallToolResponse::Complete(result) if result.is_error == Some(true))
}

/// Every request method goes through [`Traced::run`]; everything else is forwarded as is.
impl<H: ServerHandler> ServerHandler for Traced<H> {
    async fn ping(&self, context: RequestContext<RoleServer>) -> Result<(), McpError> {
        let started = self.start("ping", Target::None, &context);
        self.run(started, self.inner.ping(context), never).await
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        let started = self.start("initialize", Target::None, &context);
        let result = self.run(started, self.inner.initialize(request, context), never).await;
        if let (Some(session), Ok(initialized)) = (&self.session, &result) {
            session.saw(Some(&initialized.protocol_version), true);
        }
        result
    }

    fn negotiate_initialize(&self, request: &InitializeRequestParams) -> Result<InitializeResult, McpError> {
        self.inner.negotiate_initialize(request)
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        self.inner.supported_protocol_versions()
    }

    async fn discover(&self, context: RequestContext<RoleServer>) -> Result<DiscoverResult, McpError> {
        let started = self.start("server/discover", Target::None, &context);
        self.run(started, self.inner.discover(context), never).await
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        let started = self.start("completion/complete", Target::None, &context);
        self.run(started, self.inner.complete(request, context), never).await
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let started = self.start("logging/setLevel", Target::None, &context);
        self.run(started, self.inner.set_level(request, context), never).await
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let started = self.start("prompts/get", Target::Prompt(&request.name), &context);
        self.run(started, self.inner.get_prompt(request, context), never).await
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        let started = self.start("prompts/list", Target::None, &context);
        self.run(started, self.inner.list_prompts(request, context), never).await
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let started = self.start("resources/list", Target::None, &context);
        self.run(started, self.inner.list_resources(request, context), never).await
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        let started = self.start("resources/templates/list", Target::None, &context);
        self.run(started, self.inner.list_resource_templates(request, context), never).await
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let started = self.start("resources/read", Target::Resource(&request.uri), &context);
        self.run(started, self.inner.read_resource(request, context), never).await
    }

    fn accepted_subscription_filter(&self, requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        self.inner.accepted_subscription_filter(requested)
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        let started = self.start("subscriptions/listen", Target::None, context.request_context());
        self.run(started, self.inner.listen(context), never).await
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let started = self.start("resources/subscribe", Target::Resource(&request.uri), &context);
        self.run(started, self.inner.subscribe(request, context), never).await
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let started = self.start("resources/unsubscribe", Target::Resource(&request.uri), &context);
        self.run(started, self.inner.unsubscribe(request, context), never).await
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let started = self.start("tools/call", Target::Tool(&request.name), &context);
        self.run(started, self.inner.call_tool(request, context), tool_failed).await
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let started = self.start("tools/list", Target::None, &context);
        self.run(started, self.inner.list_tools(request, context), never).await
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.inner.get_tool(name)
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, McpError> {
        // The method is the client's own: not in the span's name (any text), only "custom".
        let started = self.start("custom", Target::None, &context);
        self.run(started, self.inner.on_custom_request(request, context), never).await
    }

    async fn on_cancelled(&self, notification: CancelledNotificationParam, context: NotificationContext<RoleServer>) {
        let started = self.start_notification("notifications/cancelled", &context);
        self.notified(started, self.inner.on_cancelled(notification, context)).await;
    }

    async fn on_progress(&self, notification: ProgressNotificationParam, context: NotificationContext<RoleServer>) {
        let started = self.start_notification("notifications/progress", &context);
        self.notified(started, self.inner.on_progress(notification, context)).await;
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let started = self.start_notification("notifications/initialized", &context);
        self.notified(started, self.inner.on_initialized(context)).await;
    }

    async fn on_roots_list_changed(&self, context: NotificationContext<RoleServer>) {
        let started = self.start_notification("notifications/roots/list_changed", &context);
        self.notified(started, self.inner.on_roots_list_changed(context)).await;
    }

    async fn on_custom_notification(&self, notification: CustomNotification, context: NotificationContext<RoleServer>) {
        // The method is the client's own: not in the span's name (any text), only "custom".
        let started = self.start_notification("custom", &context);
        self.notified(started, self.inner.on_custom_notification(notification, context)).await;
    }

    fn get_info(&self) -> ServerConfig {
        self.inner.get_info()
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        let started = self.start("tasks/get", Target::None, &context);
        self.run(started, self.inner.get_task(request, context), never).await
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let started = self.start("tasks/update", Target::None, &context);
        self.run(started, self.inner.update_task(request, context), never).await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let started = self.start("tasks/cancel", Target::None, &context);
        self.run(started, self.inner.cancel_task(request, context), never).await
    }

    async fn list_skills(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListSkillsResult, McpError> {
        let started = self.start("skills/list", Target::None, &context);
        self.run(started, self.inner.list_skills(request, context), never).await
    }

    async fn get_skill(
        &self,
        request: GetSkillRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetSkillResult, McpError> {
        let started = self.start("skills/get", Target::None, &context);
        self.run(started, self.inner.get_skill(request, context), never).await
    }

    async fn read_resource_directory(
        &self,
        request: ReadResourceDirectoryRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceDirectoryResult, McpError> {
        let started = self.start("resources/directory/read", Target::Resource(&request.uri), &context);
        self.run(started, self.inner.read_resource_directory(request, context), never).await
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::{CallToolResult, ContentBlock};

    use super::*;

    #[test]
    fn a_caller_mistake_keeps_its_error_type_but_is_not_a_server_error() {
        let unknown_tool: Result<(), McpError> = Err(McpError::invalid_params("no such tool", None));
        let ending = Ending::of(&unknown_tool, never, true);
        assert_eq!((ending.error_type.as_deref(), ending.code), (Some("-32602"), Some(-32602)));
        assert!(!ending.is_server_error());
        let internal: Result<(), McpError> = Err(McpError::internal_error("the store failed", None));
        let ending = Ending::of(&internal, never, true);
        assert_eq!(ending.error_type.as_deref(), Some("-32603"));
        assert!(ending.is_server_error());
    }

    #[test]
    fn an_is_error_result_is_a_tool_error_and_a_success_has_no_error_type() {
        let failed: Result<CallToolResponse, McpError> =
            Ok(CallToolResponse::Complete(CallToolResult::error(vec![ContentBlock::text("recusado")])));
        let ending = Ending::of(&failed, tool_failed, true);
        assert_eq!((ending.error_type.as_deref(), ending.code), (Some(TOOL_ERROR), None));
        assert!(ending.is_server_error());
        let done: Result<CallToolResponse, McpError> =
            Ok(CallToolResponse::Complete(CallToolResult::success(vec![ContentBlock::text("ok")])));
        let ending = Ending::of(&done, tool_failed, true);
        assert_eq!((ending.error_type, ending.code), (None, None));
    }

    #[test]
    fn a_resource_not_found_is_recorded_with_the_code_the_client_receives() {
        let missing: Result<(), McpError> = Err(McpError::resource_not_found("Recurso não encontrado.", None));
        assert_eq!(Ending::of(&missing, never, true).code, Some(-32602), "2026-07-28: rmcp sends -32602");
        assert_eq!(Ending::of(&missing, never, false).code, Some(-32002), "2025-11-25: -32002");
    }

    #[test]
    fn the_span_name_is_the_method_and_the_tool_or_prompt_and_long_names_are_cut() {
        let operation = |method, tool: Option<&str>| Operation {
            method,
            tool: tool.map(cut),
            prompt: None,
            uri: None,
            protocol_version: None,
            http: false,
        };
        assert_eq!(operation("tools/call", Some("criar_curso")).span_name(), "tools/call criar_curso");
        assert_eq!(operation("resources/read", None).span_name(), "resources/read");
        let long = "x".repeat(MAX_TARGET_CHARS + 50);
        assert_eq!(operation("tools/call", Some(&long)).tool.map(|name| name.chars().count()), Some(MAX_TARGET_CHARS));
    }

    #[test]
    fn trace_context_is_read_from_meta_and_from_headers() {
        let propagator = TraceContextPropagator::new();
        let mut meta = serde_json::Map::new();
        meta.insert("traceparent".into(), "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".into());
        let cx = propagator.extract(&MetaCarrier(&meta));
        assert_eq!(cx.span().span_context().trace_id().to_string(), "0af7651916cd43dd8448eb211c80319c");
        assert_eq!(cx.span().span_context().span_id().to_string(), "b7ad6b7169203331");
        let mut headers = http::HeaderMap::new();
        headers.insert(
            "traceparent",
            http::HeaderValue::from_static("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
        );
        let cx = propagator.extract(&HeaderCarrier(&headers));
        assert_eq!(cx.span().span_context().trace_id().to_string(), "4bf92f3577b34da6a3ce929d0e0e4736");
        meta.insert("traceparent".into(), "not a traceparent".into());
        assert!(!propagator.extract(&MetaCarrier(&meta)).span().span_context().is_valid());
    }
}
