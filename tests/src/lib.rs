//! Shared support for every test crate of mcp-cursos: the e2e tests in `e2e/` (whose
//! `support.rs` starts the binaries) and `libs/mcp-server`'s in-process contract tests. It speaks
//! MCP (and, with the default feature `http`, plain HTTP) as a client and knows no server
//! internals: the protocol eras and how a client connects on each, client handlers that record
//! notices, and request builders and readers.

use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ProtocolVersion, ReadResourceRequestParams, SubscriptionFilter,
};
use rmcp::service::{
    ClientInitializeError, ClientLifecycleMode, ClientServiceExt, NotificationContext, RunningService, Subscription,
};
use rmcp::{ClientHandler, RoleClient, ServiceError, ServiceExt};
use serde_json::{Value, json};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

/// How long a client waits for a notice before the test fails.
const NOTICE_PATIENCE: Duration = Duration::from_secs(60);

/// The two protocol eras a client may speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// `initialize` handshake, negotiated at 2025-11-25.
    Initialize,
    /// `server/discover` with per-request `_meta`, 2026-07-28.
    Discover,
}

/// Both eras, oldest first: most tests run once per era.
pub const ERAS: [Era; 2] = [Era::Initialize, Era::Discover];

impl Era {
    /// The protocol revision a client of this era ends up speaking.
    #[must_use]
    pub const fn revision(self) -> &'static str {
        match self {
            Self::Initialize => "2025-11-25",
            Self::Discover => "2026-07-28",
        }
    }

    /// Connects `handler` over `transport`: `initialize`, or `server/discover` for 2026-07-28.
    ///
    /// # Errors
    /// The handshake's failure.
    pub async fn connect<H, T, E, A>(
        self,
        handler: H,
        transport: T,
    ) -> Result<RunningService<RoleClient, H>, ClientInitializeError>
    where
        H: ClientHandler,
        T: rmcp::transport::IntoTransport<RoleClient, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        match self {
            Self::Initialize => handler.serve(transport).await,
            Self::Discover => {
                let preferred_versions = vec![ProtocolVersion::V_2026_07_28];
                handler.serve_with_lifecycle(transport, ClientLifecycleMode::Discover { preferred_versions }).await
            }
        }
    }
}

/// Records the resource notices a 2025-era client receives, as `updated <uri>` and `list_changed`.
#[derive(Debug, Clone)]
pub struct Recorder(pub UnboundedSender<String>);

impl ClientHandler for Recorder {
    async fn on_resource_updated(
        &self,
        params: rmcp::model::ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.0.send(format!("updated {}", params.uri));
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.0.send("list_changed".to_owned());
    }
}

/// Records the tools' and prompts' list-changed notices a 2025-era session gets, as `tools` and
/// `prompts`.
#[derive(Debug, Clone)]
pub struct ListsRecorder(pub UnboundedSender<String>);

impl ClientHandler for ListsRecorder {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.0.send("tools".to_owned());
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.0.send("prompts".to_owned());
    }
}

/// Waits (bounded) for the next notice a recorder sent to `received`.
///
/// # Panics
/// When none comes in time, or the client is gone.
pub async fn next_notice(received: &mut UnboundedReceiver<String>) -> String {
    tokio::time::timeout(NOTICE_PATIENCE, received.recv()).await.expect("a notice in time").expect("connected")
}

/// Waits (bounded) for the next notification on a 2026-07-28 listen stream, as JSON.
///
/// # Panics
/// When none comes in time, or the stream ends or fails.
pub async fn next_stream_notice(subscription: &mut Subscription) -> Value {
    let notice = tokio::time::timeout(NOTICE_PATIENCE, subscription.next())
        .await
        .expect("a notice in time")
        .expect("the stream is open")
        .expect("a notification");
    serde_json::to_value(&notice).expect("json")
}

/// The refusal of a listen request: an error at once, or a stream acknowledged as accepting
/// nothing, then ended with the error.
///
/// # Panics
/// When the listen request is not refused.
pub async fn listen_refusal<H: ClientHandler>(
    client: &RunningService<RoleClient, H>,
    filter: SubscriptionFilter,
) -> rmcp::ErrorData {
    match client.listen(filter).await {
        Err(ServiceError::McpError(error)) => error,
        Ok(mut subscription) => match tokio::time::timeout(NOTICE_PATIENCE, subscription.next()).await {
            Ok(Err(ServiceError::McpError(error))) => error,
            other => panic!("expected the stream to end with a refusal, got {other:?}"),
        },
        Err(other) => panic!("expected a refusal, got {other:?}"),
    }
}

/// `count` catalog pages, each a URI of the server that every write touches.
#[must_use]
pub fn catalog_pages(count: usize) -> Vec<String> {
    (1..=count).map(|page| format!("cursos://catalogo?pagina={page}")).collect()
}

/// The names of the tools `client` lists, sorted.
///
/// # Panics
/// When `tools/list` fails.
pub async fn tool_names<H: ClientHandler>(client: &RunningService<RoleClient, H>) -> Vec<String> {
    let tools = client.list_all_tools().await.expect("tools/list");
    let mut names: Vec<String> = tools.into_iter().map(|tool| tool.name.to_string()).collect();
    names.sort();
    names
}

/// `tools/call` of `tool` with `arguments` (a JSON object).
///
/// # Panics
/// When `arguments` is not an object.
#[must_use]
pub fn tool_call(tool: &str, arguments: &Value) -> CallToolRequestParams {
    let arguments = arguments.as_object().cloned().expect("arguments object");
    CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments)
}

/// Calls `tool` with `arguments`: the tool's result, or the protocol error.
///
/// # Errors
/// The protocol error (or transport failure) the call got.
pub async fn try_call<H: ClientHandler>(
    client: &RunningService<RoleClient, H>,
    tool: &str,
    arguments: Value,
) -> Result<CallToolResult, ServiceError> {
    client.call_tool(tool_call(tool, &arguments)).await
}

/// Calls `tool` with `arguments`: the tool's result (a refusal is one too).
///
/// # Panics
/// When the call gets no tool result (a protocol error, a closed connection).
pub async fn call<H: ClientHandler>(
    client: &RunningService<RoleClient, H>,
    tool: &str,
    arguments: Value,
) -> CallToolResult {
    try_call(client, tool, arguments).await.expect("answered")
}

/// The protocol error `outcome` must be; `what` names the request in the failure otherwise.
///
/// # Panics
/// When `outcome` is an answer, or a failure other than a protocol error.
pub fn protocol_error<T: std::fmt::Debug>(outcome: Result<T, ServiceError>, what: &str) -> rmcp::ErrorData {
    match outcome {
        Err(ServiceError::McpError(error)) => error,
        other => panic!("{what}: expected a protocol error, got {other:?}"),
    }
}

/// `criar_curso` of `titulo` with 8 hours: the whole result, as JSON.
pub async fn create<H: ClientHandler>(client: &RunningService<RoleClient, H>, titulo: &str) -> Value {
    json!(call(client, "criar_curso", json!({"titulo": titulo, "cargaHoraria": 8})).await)
}

/// The URI of `course` (a course as JSON): `cursos://<id>`.
///
/// # Panics
/// When `course` has no text `id`.
#[must_use]
pub fn course_uri(course: &Value) -> String {
    format!("cursos://{}", course["id"].as_str().expect("id"))
}

/// `completion/complete` of the course template's `uuid` from what the user typed, `value`.
#[must_use]
pub fn id_completion(value: impl Into<String>) -> rmcp::model::CompleteRequestParams {
    let argument = rmcp::model::ArgumentInfo::new("uuid", value);
    rmcp::model::CompleteRequestParams::new(rmcp::model::Reference::for_resource("cursos://{uuid}"), argument)
}

/// The JSON document of the resource at `uri` (its first contents' text).
///
/// # Panics
/// When the read fails or its text is not JSON.
pub async fn read_json<H: ClientHandler>(client: &RunningService<RoleClient, H>, uri: &str) -> Value {
    let result = json!(client.read_resource(ReadResourceRequestParams::new(uri)).await.expect("resources/read"));
    serde_json::from_str(result["contents"][0]["text"].as_str().expect("text contents")).expect("JSON document")
}

/// A raw `POST` of `body` to `url` as an MCP client sends it (JSON, accepting JSON and SSE), with
/// `headers` added and nothing else.
///
/// # Panics
/// When no HTTP answer comes.
#[cfg(feature = "http")]
pub async fn post(url: &str, headers: &[(&str, &str)], body: impl Into<reqwest::Body>) -> reqwest::Response {
    install_tls_provider();
    let mut request = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.send().await.expect("HTTP request")
}

/// Installs rustls's `ring` provider as the process default, once: in a workspace build reqwest
/// has the backend's `rustls-no-provider` feature (Cargo unifies features), and a client built
/// without a provider panics. Every helper that starts a backend or sends HTTP calls this first.
#[cfg(feature = "http")]
pub fn install_tls_provider() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        // Err: another provider was installed first, which serves as well.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}
