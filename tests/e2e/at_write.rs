//! Issue 23, items 4 and 5, on the real backend over loopback HTTP with a real keys file and
//! policy file (ADR 0044): an archiving that waits for the user's answer is written only if the
//! operator's policy and the caller's key still allow it when the answer comes; an answer counts
//! only from the caller that was asked; and the history records the client as it declared itself.
//! The same rules in process, for every change and the app's path: `contract/at_write.rs`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
    ElicitationAction, ElicitationCapability, Implementation,
};
use rmcp::service::RequestContext;
use rmcp::{ClientHandler, RoleClient};
use serde_json::{Value, json};

use crate::support::{Backend, Era, PATIENCE, fresh_database, new_key, start_backend_with_keys_file};

const MODERN: &str = "2026-07-28";

/// Whether `key` is offered `arquivar_curso` now (one 2026-07-28 `tools/list`).
async fn offered_archiving(mcp_url: &str, key: &str) -> bool {
    let authorization = format!("Bearer {key}");
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "observador", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}}}});
    let headers =
        [("authorization", authorization.as_str()), ("mcp-protocol-version", MODERN), ("mcp-method", "tools/list")];
    let response = mcp_cursos_e2e::post(mcp_url, &headers, body.to_string()).await;
    response.text().await.expect("tools/list").contains("\"arquivar_curso\"")
}

/// Polls until `key` is no longer offered `arquivar_curso` (the backend reread what changed).
async fn until_not_offered(mcp_url: &str, key: &str) {
    let started = Instant::now();
    while offered_archiving(mcp_url, key).await {
        assert!(started.elapsed() < PATIENCE, "the backend never saw the change");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// A user who, while the confirmation is shown, sees the operator apply `change` and waits until
/// the backend took it in (its key no longer offered `arquivar_curso`), then answers yes.
#[derive(Clone)]
struct ChangedWhileAsking {
    change: Arc<dyn Fn() + Send + Sync>,
    mcp_url: String,
    key: String,
}

impl ClientHandler for ChangedWhileAsking {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation = Some(ElicitationCapability::new());
        ClientConfig::new(capabilities, Implementation::new("e2e", "1"))
    }

    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        (self.change)();
        until_not_offered(&self.mcp_url, &self.key).await;
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(json!({"confirmar": true})))
    }
}

struct Deployment {
    _folder: tempfile::TempDir,
    keys_file: PathBuf,
    policy_file: PathBuf,
    backend: Backend,
    /// Keys of scope escrita: `ana` and `bruno` in the default catalog, `carla` in `outro`.
    key: String,
    other: String,
    elsewhere: String,
    course: Value,
}

async fn deploy() -> Deployment {
    let (folder, database) = fresh_database();
    let keys_file = folder.path().join("chaves");
    let policy_file = folder.path().join("politica");
    std::fs::write(&policy_file, "# tudo ativo\n").expect("a policy of no rules: everything on");
    let key = new_key(&keys_file, &["--name", "ana", "--scope", "escrita"]);
    let other = new_key(&keys_file, &["--name", "bruno", "--scope", "escrita"]);
    let elsewhere = new_key(&keys_file, &["--name", "carla", "--scope", "escrita", "--catalog", "outro"]);
    let policy = policy_file.to_str().expect("UTF-8 path");
    let backend = start_backend_with_keys_file(&database, &keys_file, &[("POLICY_FILE", policy)]).await;
    let writer = backend.client_with_key(&key, Era::Discover).await;
    let course = mcp_cursos_e2e::create(&writer, "Rust").await["structuredContent"].clone();
    assert!(course["id"].is_string(), "created: {course}");
    let _ = writer.cancel().await;
    Deployment { _folder: folder, keys_file, policy_file, backend, key, other, elsewhere, course }
}

impl Deployment {
    /// The course as stored now (read with bruno's key, which nothing here changes).
    async fn course_now(&self) -> Value {
        let client = self.backend.client_with_key(&self.other, Era::Discover).await;
        let course = mcp_cursos_e2e::read_json(&client, &mcp_cursos_e2e::course_uri(&self.course)).await;
        let _ = client.cancel().await;
        course
    }

    fn edit_key(&self, from: &'static str, to: &'static str) -> Arc<dyn Fn() + Send + Sync> {
        let keys_file = self.keys_file.clone();
        Arc::new(move || {
            let text = std::fs::read_to_string(&keys_file).expect("keys file");
            let edited: Vec<String> = text
                .lines()
                .map(|line| if line.starts_with("ana ") { line.replace(from, to) } else { line.to_owned() })
                .collect();
            std::fs::write(&keys_file, edited.join("\n") + "\n").expect("keys file");
        })
    }

    fn write_policy(&self, text: &'static str) -> Arc<dyn Fn() + Send + Sync> {
        let policy_file = self.policy_file.clone();
        Arc::new(move || std::fs::write(&policy_file, text).expect("policy file"))
    }
}

fn text(result: &rmcp::model::CallToolResult) -> String {
    json!(result.content).to_string()
}

/// Item 4 on a 2025-era session, whose answer comes within the call: the operator puts the server
/// in read-only mode, or switches `arquivar_curso` off, while the user reads the question. The
/// answer yes archives nothing and the refusal says, in Portuguese, what changed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_policy_switched_while_a_confirmation_waits_archives_nothing_and_says_what_changed() {
    for (policy, says) in [
        ("somente-leitura\n", "o servidor entrou em modo somente leitura"),
        ("desativar ferramenta arquivar_curso\n", "o operador desativou a ferramenta arquivar_curso"),
    ] {
        let deployment = deploy().await;
        let change = deployment.write_policy(policy);
        let user =
            ChangedWhileAsking { change, mcp_url: deployment.backend.mcp_url.clone(), key: deployment.key.clone() };
        let client = deployment.backend.client_with_handler_and_key(user, &deployment.key, Era::Initialize).await;
        let refused = mcp_cursos_e2e::call(&client, "arquivar_curso", json!({"id": deployment.course["id"]})).await;
        assert_eq!(refused.is_error, Some(true), "{policy}: {refused:?}");
        let said = text(&refused);
        assert!(said.contains(says) && said.contains("enquanto a confirmação esperava; nada foi alterado"), "{said}");
        let _ = client.cancel().await;
        std::fs::write(&deployment.policy_file, "# tudo ativo\n").expect("everything on again");
        assert_eq!(deployment.course_now().await["arquivado"], false, "{policy}: not archived");
        let logs = deployment.backend.stderr.all();
        assert!(logs.contains("an archiving was refused at write time"), "{logs}");
        assert!(!logs.contains(&deployment.key), "no key in the log");
        assert!(deployment.backend.stop().await.success());
    }
}

/// Item 4 with the key: downgraded to `leitura` while the user reads a 2025-era question. The
/// key's session is closed within the reread bound (item 3), which drops the pending archiving,
/// or, if the answer won that race, the write is refused: either way nothing is archived.
///
/// rmcp's client does not fail a call whose session the server closed (it retries its GET
/// stream on 404), so the test watches the server's log rather than the call's end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_downgraded_while_a_confirmation_waits_archives_nothing() {
    let deployment = deploy().await;
    let change = deployment.edit_key(" escrita ", " leitura ");
    let user = ChangedWhileAsking { change, mcp_url: deployment.backend.mcp_url.clone(), key: deployment.key.clone() };
    let client = deployment.backend.client_with_handler_and_key(user, &deployment.key, Era::Initialize).await;
    let id = deployment.course["id"].clone();
    let call = tokio::spawn(async move {
        let result = mcp_cursos_e2e::try_call(&client, "arquivar_curso", json!({"id": id})).await;
        (result, client)
    });
    let started = Instant::now();
    let dropped = ["the archiving confirmation failed", "an archiving was refused at write time"];
    loop {
        let logs = deployment.backend.stderr.all();
        if dropped.iter().any(|line| logs.contains(line)) {
            assert!(logs.contains("a session was closed") || logs.contains("refused at write time"), "{logs}");
            break;
        }
        if call.is_finished() {
            let (result, _client) = call.await.expect("the call task");
            let result = result.expect("a tool result");
            assert!(text(&result).contains("o escopo da credencial passou a leitura"), "{result:?}");
            break;
        }
        assert!(started.elapsed() < PATIENCE, "the pending archiving was neither dropped nor refused:\n{logs}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(deployment.course_now().await["arquivado"], false, "not archived");
    let history = {
        let client = deployment.backend.client_with_key(&deployment.other, Era::Discover).await;
        let uri = format!("{}/historico", mcp_cursos_e2e::course_uri(&deployment.course));
        let history = mcp_cursos_e2e::read_json(&client, &uri).await;
        let _ = client.cancel().await;
        history
    };
    assert_eq!(history["entradas"].as_array().map(Vec::len), Some(1), "only the creation: {history}");
    assert!(deployment.backend.stop().await.success());
}

/// A 2026-07-28 `tools/call` of `arquivar_curso` answering yes with `state`.
fn answer_yes(id: &Value, state: &str) -> CallToolRequestParams {
    let mut responses = rmcp::model::InputResponses::new();
    responses.insert("confirmacao".to_owned(), json!({"action": "accept", "content": {"confirmar": true}}));
    CallToolRequestParams::new("arquivar_curso")
        .with_arguments(json!({"id": id}).as_object().cloned().expect("object"))
        .with_input_responses(responses)
        .with_request_state(state)
}

/// Item 4, 2026-07-28: the answer to the question asked of `ana` counts only from `ana`. Another
/// key of the catalog presenting it is asked again; a key of another catalog does not even find
/// the course; and a question declined cannot be answered yes after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_counts_only_from_the_caller_that_was_asked_and_only_once() {
    let deployment = deploy().await;
    let confirming = crate::scenario::ConfirmingUser::default();
    let ana = deployment.backend.client_with_handler_and_key(confirming.clone(), &deployment.key, Era::Discover).await;
    let id = deployment.course["id"].clone();
    let ask = CallToolRequestParams::new("arquivar_curso")
        .with_arguments(json!({"id": id}).as_object().cloned().expect("object"));
    let CallToolResponse::InputRequired(asked) = ana.call_tool_once(ask.clone()).await.expect("answered") else {
        panic!("a client that can confirm is asked");
    };
    let state = asked.request_state.expect("sealed");

    let backend = &deployment.backend;
    let bruno = backend.client_with_handler_and_key(confirming.clone(), &deployment.other, Era::Discover).await;
    match bruno.call_tool_once(answer_yes(&id, &state)).await.expect("answered") {
        CallToolResponse::InputRequired(_) => {}
        other => panic!("another key's answer to ana's question must be ignored (asked again): {other:?}"),
    }
    let carla = backend.client_with_handler_and_key(confirming.clone(), &deployment.elsewhere, Era::Discover).await;
    match carla.call_tool_once(answer_yes(&id, &state)).await.expect("answered") {
        CallToolResponse::Complete(result) => assert!(text(&result).contains("não encontrado"), "{result:?}"),
        other => panic!("another catalog does not have the course: {other:?}"),
    }
    assert_eq!(deployment.course_now().await["arquivado"], false, "not archived by another's answer");

    // Ana declines; her later yes to the same question is refused.
    let mut decline = answer_yes(&id, &state);
    let mut responses = rmcp::model::InputResponses::new();
    responses.insert("confirmacao".to_owned(), json!({"action": "decline"}));
    decline = decline.with_input_responses(responses);
    let CallToolResponse::Complete(declined) = ana.call_tool_once(decline).await.expect("answered") else {
        panic!("a refusal");
    };
    assert!(text(&declined).contains("não confirmou"), "{declined:?}");
    let CallToolResponse::Complete(later) = ana.call_tool_once(answer_yes(&id, &state)).await.expect("answered") else {
        panic!("a refusal");
    };
    assert!(text(&later).contains("já foi respondida"), "{later:?}");
    assert_eq!(deployment.course_now().await["arquivado"], false, "a declined question stays declined");

    // Ana's own answer to a new question archives.
    let archived = mcp_cursos_e2e::call(&ana, "arquivar_curso", json!({"id": id})).await;
    assert_eq!(archived.structured_content.expect("course")["arquivado"], true);
    for client in [ana, bruno, carla] {
        let _ = client.cancel().await;
    }
    assert!(deployment.backend.stop().await.success());
}

/// Item 5: a 2026-07-28 request's `clientInfo` is recorded as it was declared: whole, in part,
/// or not at all; never the SDK's own name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_history_records_the_client_as_declared_never_invented() {
    let deployment = deploy().await;
    let authorization = format!("Bearer {}", deployment.key);
    let headers = [
        ("authorization", authorization.as_str()),
        ("mcp-protocol-version", MODERN),
        ("mcp-method", "tools/call"),
        ("mcp-name", "criar_curso"),
    ];
    let cases = [
        (json!({"name": "meu-host", "version": "2.1"}), json!({"nome": "meu-host", "versao": "2.1"})),
        (json!({"name": "só-nome"}), json!({"nome": "só-nome", "versao": null})),
        (json!({"version": "9"}), json!({"nome": null, "versao": "9"})),
        (json!({}), Value::Null),
        (json!({"name": "", "version": ""}), Value::Null),
    ];
    for (number, (client_info, recorded)) in cases.into_iter().enumerate() {
        let titulo = format!("Curso {number}");
        let body = json!({"jsonrpc": "2.0", "id": number, "method": "tools/call", "params": {
            "name": "criar_curso", "arguments": {"titulo": titulo, "cargaHoraria": 10},
            "_meta": {"io.modelcontextprotocol/protocolVersion": MODERN,
                      "io.modelcontextprotocol/clientInfo": client_info,
                      "io.modelcontextprotocol/clientCapabilities": {}}}});
        let response = mcp_cursos_e2e::post(&deployment.backend.mcp_url, &headers, body.to_string()).await;
        let answer = response.text().await.expect("body");
        let data = answer.lines().find_map(|line| line.strip_prefix("data:")).unwrap_or(&answer).trim().to_owned();
        let message: Value = serde_json::from_str(&data).unwrap_or_else(|_| panic!("JSON-RPC: {answer}"));
        let course = &message["result"]["structuredContent"];
        assert!(course["id"].is_string(), "{client_info}: created: {message}");
        let reader = deployment.backend.client_with_key(&deployment.key, Era::Discover).await;
        let history =
            mcp_cursos_e2e::read_json(&reader, &format!("{}/historico", mcp_cursos_e2e::course_uri(course))).await;
        let _ = reader.cancel().await;
        let cliente = &history["entradas"][0]["evidencia"]["cliente"];
        assert_eq!(cliente, &recorded, "{client_info}: {history:#}");
        assert!(!cliente.to_string().contains("rmcp"), "never the SDK's own name");
    }
    assert!(deployment.backend.stop().await.success());
}
