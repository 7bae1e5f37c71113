//! The catalog's MCP App (ADR 0039), in process, on both eras: offered only to clients that
//! declare `io.modelcontextprotocol/ui` (everyone else sees today's lists), the resource's MIME,
//! CSP and size, the entry tool's first page, the app-only tools' visibility, the search, and the
//! app's archiving path, which needs the question this server asked and obeys the policy.

use mcp_server::Policy;
use mcp_server::app::{APP_BUDGET_BYTES, APP_MIME_TYPE, APP_URI, UI_EXTENSION};
use rmcp::model::ExtensionCapabilities;

use super::*;

/// A host that renders MCP Apps (and has no confirmation dialog of its own: the app asks).
#[derive(Debug, Clone)]
pub(super) struct RendersApps {
    mime_types: Vec<&'static str>,
}

impl RendersApps {
    pub(super) const HTML: Self = Self { mime_types: Vec::new() };
}

impl rmcp::ClientHandler for RendersApps {
    fn get_info(&self) -> ClientConfig {
        let mut extensions = ExtensionCapabilities::new();
        let mime_types = if self.mime_types.is_empty() { vec![APP_MIME_TYPE] } else { self.mime_types.clone() };
        let settings = json!({ "mimeTypes": mime_types }).as_object().cloned().expect("object");
        extensions.insert(UI_EXTENSION.to_owned(), settings);
        let mut capabilities = ClientCapabilities::default();
        capabilities.extensions = Some(extensions);
        ClientConfig::new(capabilities, Implementation::new("host-de-apps", "1"))
    }
}

pub(super) async fn tool_list<H: rmcp::ClientHandler>(client: &RunningService<RoleClient, H>) -> Vec<Value> {
    let tools = client.list_all_tools().await.expect("tools/list");
    serde_json::to_value(tools).expect("json").as_array().cloned().expect("array")
}

fn names(tools: &[Value]) -> Vec<String> {
    let mut names: Vec<String> = tools.iter().filter_map(|tool| tool["name"].as_str().map(str::to_owned)).collect();
    names.sort();
    names
}

async fn resource_uris<H: rmcp::ClientHandler>(client: &RunningService<RoleClient, H>) -> Vec<String> {
    let resources = client.list_resources(None).await.expect("resources/list");
    resources.resources.iter().map(|resource| resource.uri.clone()).collect()
}

async fn read_app<H: rmcp::ClientHandler>(client: &RunningService<RoleClient, H>) -> Value {
    let read = client.read_resource(ReadResourceRequestParams::new(APP_URI)).await.expect("resources/read");
    serde_json::to_value(&read).expect("json")["contents"][0].clone()
}

#[tokio::test]
async fn the_app_is_offered_only_to_clients_that_declare_the_extension_on_both_eras() {
    for era in ERAS {
        let harness = connect(era).await;
        harness.create("Rust", 10).await;
        // A client without the extension: exactly the lists it had before the app existed.
        assert_eq!(names(&tool_list(&harness.client).await), ["arquivar_curso", "atualizar_curso", "criar_curso"]);
        let plain_resources = resource_uris(&harness.client).await;
        assert_eq!(plain_resources.len(), 2, "{era:?}: the catalog and the course: {plain_resources:?}");
        assert!(!plain_resources.iter().any(|uri| uri.starts_with("ui://")), "{era:?}");
        let error = harness.read_error(APP_URI).await;
        assert!(error.message.contains("Recurso não encontrado"), "{era:?}: {error:?}");
        for tool in ["ver_catalogo", "interface_buscar_cursos", "interface_arquivar_curso"] {
            let error = protocol_error(harness.try_call(tool, json!({})).await, &format!("{era:?}: {tool}"));
            assert!(error.message.contains("Ferramenta desconhecida"), "{era:?} {tool}: {error:?}");
        }

        let host = attach(RendersApps::HTML, &harness.state, era).await;
        assert_eq!(
            names(&tool_list(&host).await),
            [
                "arquivar_curso",
                "atualizar_curso",
                "criar_curso",
                "interface_arquivar_curso",
                "interface_buscar_cursos",
                "ver_catalogo"
            ],
            "{era:?}"
        );
        let host_resources = resource_uris(&host).await;
        assert_eq!(host_resources[0], "cursos://catalogo", "{era:?}");
        assert_eq!(host_resources[1], APP_URI, "{era:?}");
        assert_eq!(host_resources.len(), 3, "{era:?}");

        // Declaring the extension for other kinds of view only is not rendering this one.
        let other_host = attach(RendersApps { mime_types: vec!["text/x-outra-coisa"] }, &harness.state, era).await;
        assert_eq!(names(&tool_list(&other_host).await), ["arquivar_curso", "atualizar_curso", "criar_curso"]);
    }
}

#[tokio::test]
async fn the_app_resource_is_self_contained_html_with_an_empty_csp_within_its_budget() {
    for era in ERAS {
        let harness = connect(era).await;
        let host = attach(RendersApps::HTML, &harness.state, era).await;
        let listed = host.list_resources(None).await.expect("resources/list");
        let listed = serde_json::to_value(&listed.resources[1]).expect("json");
        assert_eq!(listed["mimeType"], APP_MIME_TYPE, "{era:?}");
        let contents = read_app(&host).await;
        assert_eq!(contents["uri"], APP_URI);
        assert_eq!(contents["mimeType"], "text/html;profile=mcp-app", "{era:?}");
        let csp = &contents["_meta"]["ui"]["csp"];
        for directive in ["connectDomains", "resourceDomains", "frameDomains", "baseUriDomains"] {
            assert_eq!(csp[directive], json!([]), "{era:?}: {directive} names no origin");
        }
        assert_eq!(listed["_meta"]["ui"]["csp"], *csp, "the listing declares the same CSP");
        let html = contents["text"].as_str().expect("text");
        assert!(html.len() < APP_BUDGET_BYTES, "{} bytes over the budget", html.len());
        assert_eq!(listed["size"], html.len(), "{era:?}");
        assert!(html.starts_with("<!doctype html>"), "{era:?}");
        assert!(html.contains("<html lang=\"pt-BR\">"));
        for external in ["http://", "https://", "src=\"//", "href=\"//", "@import"] {
            assert!(!html.contains(external), "{era:?}: the app loads nothing from elsewhere ({external})");
        }
    }
}

#[tokio::test]
async fn the_entry_tool_is_read_only_opens_the_app_and_app_only_tools_are_hidden_from_the_model() {
    for era in ERAS {
        let harness = connect(era).await;
        let host = attach(RendersApps::HTML, &harness.state, era).await;
        let tools = tool_list(&host).await;
        let tool = |name: &str| tools.iter().find(|tool| tool["name"] == name).cloned().expect("tool");
        let entry = tool("ver_catalogo");
        assert_eq!(entry["annotations"]["readOnlyHint"], true, "{era:?}");
        assert_eq!(entry["_meta"]["ui"]["resourceUri"], APP_URI);
        assert_eq!(entry["_meta"]["ui"]["visibility"], json!(["model", "app"]));
        assert_eq!(entry["outputSchema"]["type"], "object");
        for name in ["interface_buscar_cursos", "interface_arquivar_curso"] {
            assert_eq!(tool(name)["_meta"]["ui"]["visibility"], json!(["app"]), "{era:?} {name}");
        }
        assert_eq!(tool("interface_buscar_cursos")["annotations"]["readOnlyHint"], true);
        assert_eq!(tool("interface_arquivar_curso")["annotations"]["readOnlyHint"], false);
        assert_eq!(tool("interface_arquivar_curso")["annotations"]["destructiveHint"], true);
        for model_tool in ["criar_curso", "atualizar_curso", "arquivar_curso"] {
            assert!(tool(model_tool).get("_meta").is_none(), "{era:?}: {model_tool} is unchanged");
        }
    }
}

#[tokio::test]
async fn the_entry_tool_answers_the_catalog_s_pages_as_structured_content() {
    for era in ERAS {
        let harness = connect(era).await;
        harness.seed(101).await;
        let host = attach(RendersApps::HTML, &harness.state, era).await;
        let first = call_as(&host, "ver_catalogo", json!({})).await;
        assert_eq!(first.is_error, Some(false), "{era:?}");
        let page = first.structured_content.expect("structured content");
        assert_eq!(page, harness.read("cursos://catalogo").await, "{era:?}: the resource's own page");
        let next = page["proximaPagina"].as_str().expect("a second page").to_owned();
        let second = call_as(&host, "ver_catalogo", json!({"pagina": next})).await;
        let second = second.structured_content.expect("structured content");
        assert_eq!(second["cursos"].as_array().expect("courses").len(), 1, "{era:?}");
        assert_eq!(second["cursos"][0]["titulo"], "Curso semeado 0100");
        let bad = call_as(&host, "ver_catalogo", json!({"pagina": "cursos://outra"})).await;
        assert_refused(&bad, "proximaPagina");
    }
}

#[tokio::test]
async fn the_app_s_search_is_the_completion_s_search_over_active_courses() {
    for era in ERAS {
        let harness = connect(era).await;
        let rust = harness.create("Rust para iniciantes", 10).await;
        harness.create("Go avançado", 20).await;
        let archived = harness.create("Rust antigo", 5).await;
        harness
            .state
            .catalog()
            .archive_if(
                courses_domain::CourseId::parse(archived["id"].as_str().expect("id")).expect("id"),
                None,
                Provenance::new("teste", "arquivar_curso", "{}"),
            )
            .await
            .expect("archived");
        let host = attach(RendersApps::HTML, &harness.state, era).await;
        let found = call_as(&host, "interface_buscar_cursos", json!({"texto": "rust"})).await;
        let found = found.structured_content.expect("structured content");
        assert_eq!(found["cursos"], json!([rust]), "{era:?}: active courses only");
        assert_eq!(found["maisResultados"], false);
        let long = "x".repeat(201);
        assert_refused(&call_as(&host, "interface_buscar_cursos", json!({"texto": long})).await, "'texto'");
        assert_refused(&call_as(&host, "interface_buscar_cursos", json!({"texto": 3})).await, "'texto'");
    }
}

#[tokio::test]
async fn archiving_through_the_app_needs_the_question_this_server_asked_and_covers_the_version_shown() {
    for era in ERAS {
        let harness = connect(era).await;
        let course = harness.create("Rust", 10).await;
        let id = course["id"].clone();
        let uri = course_uri(&course);
        let host = attach(RendersApps::HTML, &harness.state, era).await;
        let answer = async |state: &str, confirmar: bool| {
            let arguments = json!({"id": id, "estadoPergunta": state, "confirmar": confirmar});
            call_as(&host, "interface_arquivar_curso", arguments).await
        };

        // Asking changes nothing and answers the tool's own question.
        let asked = call_as(&host, "interface_arquivar_curso", json!({"id": id})).await;
        assert_eq!(asked.is_error, Some(false), "{era:?}: {asked:?}");
        let question = asked.structured_content.expect("the question");
        assert!(question["pergunta"].as_str().expect("text").starts_with("Arquivar o curso \"Rust\""), "{question}");
        assert_eq!(question["curso"], course);
        let state = question["estadoPergunta"].as_str().expect("state").to_owned();
        assert_eq!(harness.read(&uri).await, course, "{era:?}: asking archives nothing");

        // An answer to no question, or to another path's question, archives nothing.
        for forged in ["", "arquivar", &format!("{state}A")] {
            assert_refused(&answer(forged, true).await, "não responde a uma pergunta deste servidor");
        }
        assert_refused(
            &call_as(&host, "interface_arquivar_curso", json!({"id": id, "confirmar": true})).await,
            "vão juntos",
        );
        assert_refused(&answer(&state, false).await, "não confirmou o arquivamento");
        // A question answered no cannot be answered yes after (issue 23, ADR 0044).
        assert_refused(&answer(&state, true).await, "já foi respondida");
        assert_eq!(harness.read(&uri).await, course, "{era:?}: nothing archived yet");

        // A change after the question was shown: the answer no longer covers the course.
        let asked = call_as(&host, "interface_arquivar_curso", json!({"id": id})).await;
        let state = asked.structured_content.expect("question")["estadoPergunta"].as_str().expect("state").to_owned();
        let renamed = call_as(&host, "atualizar_curso", json!({"id": id, "titulo": "Rust 2"})).await;
        assert_eq!(renamed.is_error, Some(false));
        let stale = answer(&state, true).await;
        assert_refused(&stale, "mudou depois que o usuário confirmou");
        // It names what the user confirmed (the question's course) and what the course is now.
        let said = text_of(&stale);
        assert!(
            said.contains("era para \"Rust\", versão 1, e o curso agora é \"Rust 2\", versão 2"),
            "{era:?}: {said}"
        );
        assert_eq!(harness.read(&uri).await["arquivado"], false);

        // Asked again, confirmed: archived, with the question and answer in the history.
        let asked = call_as(&host, "interface_arquivar_curso", json!({"id": id})).await;
        let state = asked.structured_content.expect("question")["estadoPergunta"].as_str().expect("state").to_owned();
        let archived = answer(&state, true).await;
        assert_eq!(archived.is_error, Some(false), "{era:?}: {archived:?}");
        assert_eq!(archived.structured_content.expect("course")["arquivado"], true);
        let history = harness.read(&format!("{uri}/historico")).await;
        let newest = &history["entradas"][0];
        assert_eq!(newest["ferramenta"], "interface_arquivar_curso", "{history}");
        let approval = &newest["evidencia"]["aprovacao"];
        assert_eq!(approval["perguntado"], true, "{history}");
        assert_eq!(approval["versaoMostrada"], 2);
        assert_eq!(approval["resposta"], json!({"interface": APP_URI, "confirmar": true}));
        assert_eq!(harness.catalog_total().await, 0, "{era:?}");
    }
}

#[tokio::test]
async fn the_app_s_archiving_is_off_whenever_the_policy_turns_arquivar_curso_off() {
    for era in ERAS {
        let harness = connect(era).await;
        let course = harness.create("Rust", 10).await;
        let host = attach(RendersApps::HTML, &harness.state, era).await;
        for text in ["desativar ferramenta arquivar_curso", "somente-leitura"] {
            harness.state.set_policy(Policy::parse(text).expect("policy"));
            let listed = names(&tool_list(&host).await);
            assert!(!listed.contains(&"interface_arquivar_curso".to_owned()), "{era:?} {text}: {listed:?}");
            assert!(listed.contains(&"ver_catalogo".to_owned()), "{era:?} {text}: reading stays");
            let refused =
                mcp_cursos_e2e::try_call(&host, "interface_arquivar_curso", json!({"id": course["id"]})).await;
            assert!(matches!(refused, Err(ServiceError::McpError(_))), "{era:?} {text}: {refused:?}");
        }
        harness.state.set_policy(Policy::default());
        assert_eq!(harness.read(&course_uri(&course)).await, course);
    }
}
