//! Issue 23, item 4, in process: authority at the moment of effect (ADR 0044). An archiving that
//! waits for the user's answer is written only if, when the answer comes, the caller still may
//! write in that catalog, the operator's policy still offers the tool there and the server is not
//! read-only; a question answered no cannot be answered yes after. Both eras, the tool's path and
//! the app's. The same over HTTP with a real keys file and policy file: `tests/e2e/at_write.rs`.

use std::sync::Mutex;

use mcp_server::{Authority, Caller, Lapsed, Policy, Scope};
use rmcp::model::CallToolResponse;

use super::apps::RendersApps;
use super::*;

/// An authority whose answer the test changes while a confirmation waits: every caller stands
/// as it is until [`Switchable::change`], then as the change says.
#[derive(Debug, Default)]
struct Switchable(Mutex<Option<Result<Caller, Lapsed>>>);

impl Switchable {
    fn change(&self, now: Result<Caller, Lapsed>) {
        *self.0.lock().expect("lock") = Some(now);
    }
}

impl Authority for Switchable {
    fn current(&self, caller: &Caller) -> Result<Caller, Lapsed> {
        self.0.lock().expect("lock").clone().unwrap_or_else(|| Ok(caller.clone()))
    }
}

/// What changes while the user reads the question, and the words the refusal must say.
#[derive(Debug, Clone, Copy)]
enum Change {
    ReadOnly,
    ToolOff,
    ScopeDowngraded,
    Revoked,
    MovedCatalog,
}

const CHANGES: [Change; 5] =
    [Change::ReadOnly, Change::ToolOff, Change::ScopeDowngraded, Change::Revoked, Change::MovedCatalog];

impl Change {
    fn apply(self, state: &ServerState, authority: &Switchable) {
        let local = || Caller::stdio(courses_domain::CatalogName::default_catalog());
        match self {
            Self::ReadOnly => {
                let _ = state.set_policy(Policy::parse("somente-leitura\n").expect("policy"));
            }
            Self::ToolOff => {
                let _ = state.set_policy(Policy::parse("desativar ferramenta arquivar_curso\n").expect("policy"));
            }
            Self::ScopeDowngraded => authority.change(Ok(Caller::new(Caller::STDIO_NAME, Scope::Read))),
            Self::Revoked => authority.change(Err(Lapsed::Revoked)),
            Self::MovedCatalog => {
                authority.change(Ok(local().in_catalog(courses_domain::CatalogName::parse("outro").expect("catalog"))));
            }
        }
    }

    const fn is_policy(self) -> bool {
        matches!(self, Self::ReadOnly | Self::ToolOff)
    }

    fn says(self) -> &'static str {
        match self {
            Self::ReadOnly => "o servidor entrou em modo somente leitura",
            Self::ToolOff => "o operador desativou a ferramenta arquivar_curso",
            Self::ScopeDowngraded => "o escopo da credencial passou a leitura",
            Self::Revoked => "a chave foi revogada",
            Self::MovedCatalog => "a credencial passou para o catálogo outro",
        }
    }
}

/// A user who, while reading the confirmation, sees `change` happen (the operator's edit, a key
/// revoked), then answers yes.
#[derive(Debug, Clone)]
struct ChangedWhileAsking {
    change: Change,
    state: ServerState,
    authority: Arc<Switchable>,
}

impl rmcp::ClientHandler for ChangedWhileAsking {
    fn get_info(&self) -> ClientConfig {
        Answering::CONFIRMS.get_info()
    }

    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        self.change.apply(&self.state, &self.authority);
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(json!({"confirmar": true})))
    }
}

/// A server over a fresh catalog whose authority the test can switch, with one course.
async fn server_with_course(era: Era) -> (Harness, Arc<Switchable>, Value) {
    let (catalog, database) = open_catalog();
    let authority = Arc::new(Switchable::default());
    let state = ServerState::new(catalog, ServerOptions::default()).with_authority(authority.clone());
    let client = attach(Answering::CONFIRMS, &state, era).await;
    let harness = Harness { client, catalog: state.catalog().clone(), state, _database: database };
    let course = harness.create("Rust", 10).await;
    (harness, authority, course)
}

/// The course is as it was created and its history holds only the creation (read through the
/// catalog itself: the caller may have lost its reads too).
async fn assert_untouched(harness: &Harness, course: &Value, what: &str) {
    let id = courses_domain::CourseId::parse(course["id"].as_str().expect("id")).expect("id");
    let now = harness.catalog.get(id).await.expect("the course");
    assert!(!now.is_archived(), "{what}: archived");
    assert_eq!(now.version(), 1, "{what}: changed");
}

#[tokio::test]
async fn a_change_of_policy_or_credential_while_the_confirmation_waits_archives_nothing_on_both_eras() {
    for era in ERAS {
        for change in CHANGES {
            let what = format!("{era:?} {change:?}");
            let (harness, authority, course) = server_with_course(era).await;
            let user = ChangedWhileAsking { change, state: harness.state.clone(), authority };
            let user = attach(user, &harness.state, era).await;
            match mcp_cursos_e2e::try_call(&user, "arquivar_curso", json!({"id": course["id"]})).await {
                // Refused at the write (the answer came within the call, or past its checks).
                Ok(refused) => {
                    assert_refused(&refused, change.says());
                    assert_refused(&refused, "enquanto a confirmação esperava; nada foi alterado");
                }
                // 2026-07-28: the answer is a new call, refused before it runs by the policy now.
                Err(ServiceError::McpError(error)) => {
                    assert!(era == Era::Discover && change.is_policy(), "{what}: {error:?}");
                    assert!(error.message.contains("desativada pelo operador"), "{what}: {}", error.message);
                }
                Err(error) => panic!("{what}: {error:?}"),
            }
            assert_untouched(&harness, &course, &what).await;
        }
    }
}

#[tokio::test]
async fn a_change_of_credential_after_the_app_asked_archives_nothing_on_both_eras() {
    // The policy's changes are refused before the tool runs (the app's tool goes off with
    // arquivar_curso: contract/apps.rs); a credential's change reaches the write itself.
    for era in ERAS {
        for change in [Change::ScopeDowngraded, Change::Revoked, Change::MovedCatalog] {
            let what = format!("{era:?} {change:?}");
            let (harness, authority, course) = server_with_course(era).await;
            let host = attach(RendersApps::HTML, &harness.state, era).await;
            let asked = call_as(&host, "interface_arquivar_curso", json!({"id": course["id"]})).await;
            let state = asked.structured_content.expect("the question")["estadoPergunta"].clone();
            change.apply(&harness.state, &authority);
            let answer = json!({"id": course["id"], "estadoPergunta": state, "confirmar": true});
            let refused = call_as(&host, "interface_arquivar_curso", answer).await;
            assert_refused(&refused, change.says());
            assert_untouched(&harness, &course, &what).await;
        }
    }
}

/// A 2026-07-28 retry of `arquivar_curso` answering `action` with `state`.
fn answered(id: &Value, state: &str, action: &str) -> rmcp::model::CallToolRequestParams {
    let mut responses = rmcp::model::InputResponses::new();
    let content = if action == "accept" { json!({"confirmar": true}) } else { Value::Null };
    responses.insert("confirmacao".to_owned(), json!({"action": action, "content": content}));
    rmcp::model::CallToolRequestParams::new("arquivar_curso")
        .with_arguments(json!({"id": id}).as_object().cloned().expect("object"))
        .with_input_responses(responses)
        .with_request_state(state)
}

#[tokio::test]
async fn a_question_declined_or_cancelled_cannot_be_answered_yes_after_and_an_accepted_one_is_spent() {
    for first in ["decline", "cancel"] {
        let (harness, _authority, course) = server_with_course(Era::Discover).await;
        let ask = rmcp::model::CallToolRequestParams::new("arquivar_curso")
            .with_arguments(json!({"id": course["id"]}).as_object().cloned().expect("object"));
        let CallToolResponse::InputRequired(asked) =
            harness.client.call_tool_once(ask.clone()).await.expect("answered")
        else {
            panic!("a client that can confirm is asked");
        };
        let state = asked.request_state.expect("a sealed state");
        let CallToolResponse::Complete(declined) =
            harness.client.call_tool_once(answered(&course["id"], &state, first)).await.expect("answered")
        else {
            panic!("{first}: a refusal");
        };
        assert_refused(&declined, "não confirmou o arquivamento");
        let CallToolResponse::Complete(later) =
            harness.client.call_tool_once(answered(&course["id"], &state, "accept")).await.expect("answered")
        else {
            panic!("{first}: a refusal, not a new question");
        };
        assert_refused(&later, "já foi respondida");
        assert_untouched(&harness, &course, first).await;

        // A new question is a new answer: it archives, once.
        let CallToolResponse::InputRequired(again) = harness.client.call_tool_once(ask).await.expect("answered") else {
            panic!("asked again");
        };
        let fresh = again.request_state.expect("a sealed state");
        assert_ne!(fresh, state);
        let CallToolResponse::Complete(archived) =
            harness.client.call_tool_once(answered(&course["id"], &fresh, "accept")).await.expect("answered")
        else {
            panic!("archived");
        };
        assert_eq!(archived.structured_content.expect("course")["arquivado"], true, "{first}");
    }
}
