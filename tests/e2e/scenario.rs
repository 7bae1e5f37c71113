//! One scenario, run by a real MCP client against either transport; it returns a transcript
//! (ids and timestamps replaced by placeholders) so that the two transports can be compared.

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction,
    ElicitationCapability, GetPromptRequestParams, Implementation, ReadResourceRequestParams,
};
use rmcp::service::{RequestContext, RunningService};
use rmcp::{ClientHandler, RoleClient, ServiceError};
use serde_json::{Value, json};

use mcp_cursos_e2e::read_json as read;

use crate::support::Era;

/// A host whose user confirms every question (elicitation), as one with a confirmation dialog.
#[derive(Debug, Clone, Default)]
pub(crate) struct ConfirmingUser {
    /// The questions the user was asked.
    pub(crate) questions: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl ClientHandler for ConfirmingUser {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation = Some(ElicitationCapability::new());
        ClientConfig::new(capabilities, Implementation::new("e2e", "1"))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        if let ElicitRequestParams::FormElicitationParams { message, .. } = request {
            self.questions.lock().expect("questions").push(message);
        }
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(json!({"confirmar": true})))
    }
}

/// Runs the scenario on an empty catalog and returns its normalized transcript. `author` is the
/// name the transport records writes under (`stdio`, or the API key's name).
pub(crate) async fn run(client: &RunningService<RoleClient, ConfirmingUser>, era: Era, author: &str) -> Vec<Value> {
    let mut transcript = Vec::new();
    let mut record = |step: &str, value: Value| transcript.push(json!({ "step": step, "value": value }));

    record("tools/list", json!(client.list_all_tools().await.expect("tools/list")));
    record("resources/templates/list", json!(client.list_all_resource_templates().await.expect("templates")));
    record("prompts/list", json!(client.list_all_prompts().await.expect("prompts/list")));

    let created = call(client, "criar_curso", json!({"titulo": "Arquitetura de Software", "cargaHoraria": 12})).await;
    assert_eq!(created["isError"], false, "{era:?}: {created}");
    let id = created["structuredContent"]["id"].as_str().expect("id").to_owned();
    let uri = format!("cursos://{id}");
    record("criar_curso", created.clone());

    let duplicate = call(client, "criar_curso", json!({"titulo": "arquitetura de software", "cargaHoraria": 5})).await;
    assert_eq!(duplicate["isError"], true);
    record("criar_curso duplicado", duplicate);

    let invalid = call(client, "criar_curso", json!({"titulo": "", "cargaHoraria": 0})).await;
    assert_eq!(invalid["isError"], true);
    record("criar_curso inválido", invalid);

    let updated = call(client, "atualizar_curso", json!({"id": id, "cargaHoraria": 20})).await;
    assert_eq!(updated["structuredContent"]["cargaHoraria"], 20);
    record("atualizar_curso", updated);

    let second = call(client, "criar_curso", json!({"titulo": "Rust", "cargaHoraria": 40})).await;
    let second_id = second["structuredContent"]["id"].as_str().expect("id").to_owned();

    let course = read(client, &uri).await;
    assert_eq!(course["cargaHoraria"], 20);
    record("ler curso", course);

    let catalog = read(client, "cursos://catalogo").await;
    assert_eq!(catalog["total"], 2);
    record("ler catálogo", catalog);

    let resources = json!(client.list_all_resources().await.expect("resources/list"));
    assert_eq!(resources.as_array().map(Vec::len), Some(3));
    record("resources/list", resources);

    let archived = call(client, "arquivar_curso", json!({"id": id})).await;
    assert_eq!(archived["structuredContent"]["arquivado"], true, "{era:?}: {archived}");
    let questions = client.service().questions.lock().expect("questions").clone();
    assert_eq!(questions.len(), 1, "{era:?}: the user confirmed once: {questions:?}");
    assert!(questions[0].contains("Arquitetura de Software"), "{questions:?}");
    record("arquivar_curso", archived.clone());
    let again = call(client, "arquivar_curso", json!({"id": id})).await;
    assert_eq!(again["structuredContent"], archived["structuredContent"], "archiving twice is a no-op");
    record("arquivar_curso de novo", again);

    let refused = call(client, "atualizar_curso", json!({"id": id, "titulo": "Outro"})).await;
    assert_eq!(refused["isError"], true);
    record("atualizar arquivado", refused);

    let catalog = read(client, "cursos://catalogo").await;
    assert_eq!(catalog["total"], 1);
    assert_eq!(catalog["cursos"][0]["id"], second_id.as_str());
    record("catálogo depois de arquivar", catalog);

    let mut history = read(client, &format!("{uri}/historico")).await;
    let entries = history["entradas"].as_array_mut().expect("entries");
    let tools: Vec<_> =
        entries.iter().map(|entry| entry["ferramenta"].as_str().unwrap_or_default().to_owned()).collect();
    assert_eq!(tools, ["arquivar_curso", "atualizar_curso", "criar_curso"], "{era:?}");
    let revision = era.revision();
    for entry in entries.iter_mut() {
        // Who depends on the transport; everything else must match.
        assert_eq!(entry["autor"], author, "{era:?}");
        entry["autor"] = json!("<autor>");
        // Every entry carries its evidence (ADR 0037), the same on both transports.
        let evidence = &entry["evidencia"];
        assert_eq!(evidence["revisaoProtocolo"], revision, "{era:?}: {evidence}");
        assert_eq!(evidence["cliente"], json!({"nome": "e2e", "versao": "1"}), "{era:?}");
        assert!(evidence["superficie"].as_str().is_some_and(|hash| hash.starts_with("sha256:")), "{evidence}");
    }
    let receipt = &entries[0]["evidencia"]["aprovacao"];
    assert_eq!(receipt["perguntado"], true, "{era:?}: {receipt}");
    assert_eq!(receipt["pergunta"].as_str(), questions.first().map(String::as_str), "the question the user saw");
    record("histórico", history);

    let not_found = client.read_resource(ReadResourceRequestParams::new("cursos://nao-existe")).await;
    record("recurso inexistente", error_json(not_found.map(|_| ())));

    let unknown_tool = client.call_tool(CallToolRequestParams::new("apagar_curso")).await;
    record("ferramenta desconhecida", error_json(unknown_tool.map(|_| ())));

    let arguments = json!({"titulo": "Go", "cargaHoraria": "10"}).as_object().cloned().expect("object");
    let prompt =
        client.get_prompt(GetPromptRequestParams::new("criar-curso").with_arguments(arguments)).await.expect("prompt");
    record("prompts/get", json!(prompt));

    normalize(&transcript, &[(&id, "<id-1>"), (&second_id, "<id-2>")])
}

async fn call<H: ClientHandler>(client: &RunningService<RoleClient, H>, tool: &str, arguments: Value) -> Value {
    json!(mcp_cursos_e2e::call(client, tool, arguments).await)
}

fn error_json(outcome: Result<(), ServiceError>) -> Value {
    let error = mcp_cursos_e2e::protocol_error(outcome, "a scenario step");
    json!({"code": error.code.0, "message": error.message, "data": error.data})
}

/// Replaces the given ids and every RFC 3339 timestamp, which differ from run to run.
fn normalize(transcript: &[Value], ids: &[(&str, &str)]) -> Vec<Value> {
    let mut text = serde_json::to_string(transcript).expect("json");
    for (id, placeholder) in ids {
        text = text.replace(id, placeholder);
    }
    serde_json::from_str(&replace_timestamps(&text)).expect("json")
}

fn replace_timestamps(text: &str) -> String {
    // `2026-11-30T12:00:00.123Z` and `2026-11-30T12:00:00Z`.
    let bytes = text.as_bytes();
    let shape = b"dddd-dd-ddTdd:dd:dd";
    let mut output = String::with_capacity(text.len());
    let mut index = 0;
    while index < bytes.len() {
        let matches_shape = bytes.len() - index >= shape.len()
            && shape
                .iter()
                .zip(&bytes[index..])
                .all(|(want, got)| if *want == b'd' { got.is_ascii_digit() } else { want == got });
        if matches_shape {
            let mut end = index + shape.len();
            if bytes.get(end) == Some(&b'.') {
                end += 1;
                while bytes.get(end).is_some_and(u8::is_ascii_digit) {
                    end += 1;
                }
            }
            if bytes.get(end) == Some(&b'Z') {
                output.push_str("<timestamp>");
                index = end + 1;
                continue;
            }
        }
        let character = text[index..].chars().next().expect("char");
        output.push(character);
        index += character.len_utf8();
    }
    output
}

#[test]
fn timestamps_are_replaced_wherever_they_appear() {
    assert_eq!(
        replace_timestamps(r#"{"a":"2026-11-30T12:00:00.123Z","b":"x 2026-01-01T00:00:00Z y","c":"2026-11-30"}"#),
        r#"{"a":"<timestamp>","b":"x <timestamp> y","c":"2026-11-30"}"#
    );
}
