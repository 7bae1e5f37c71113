//! [`CursosServer`]: the one place where every resource, tool and prompt is registered.
//!
//! | primitive | name | handler |
//! |---|---|---|
//! | tool | `criar_curso`, `atualizar_curso`, `arquivar_curso` | the `#[tool]` methods below |
//! | tool (opt-in, read-only) | `listar_cursos`, `ler_curso` | the `#[tool]` methods below, hidden unless [`ServerOptions::resource_tools`](crate::options::ServerOptions) |
//! | MCP App (extension clients only, ADR 0039) | resource `ui://cursos/catalogo`, entry tool `ver_catalogo`, app-only tools `interface_buscar_cursos`, `interface_arquivar_curso` | the `#[tool]` methods below, [`ServerHandler::list_resources`], [`ServerHandler::read_resource`]; the view is [`crate::app`]'s |
//! | prompt | `criar-curso` | the `#[prompt]` method below |
//! | resource | `cursos://catalogo` (and its pages) | [`ServerHandler::list_resources`], [`ServerHandler::read_resource`] |
//! | resource template | `cursos://{uuid}`, `cursos://{uuid}/historico` (and its pages) | [`ServerHandler::list_resource_templates`], [`ServerHandler::read_resource`] |
//! | completion | `uuid` of `cursos://{uuid}`, `cargaHoraria` of `criar-curso` | [`ServerHandler::complete`] |
//! | live updates | `resources/subscribe` (2025 era), `subscriptions/listen` (2026-07-28) | [`ServerHandler::subscribe`], [`ServerHandler::listen`] |

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use courses_domain::{ApprovalReceipt, Course, PageCursor, PageSize, Provenance};
use rmcp::handler::server::common::{schema_for_input, schema_for_output};
use rmcp::handler::server::router::prompt::PromptRouter;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::{InputResponses, RequestState};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    Annotations, CacheScope, CallToolResponse, CallToolResult, CompleteRequestParams, CompleteResult, CompletionInfo,
    GetPromptResult, Icon, Implementation, JsonObject, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, PromptArgument, PromptMessage, ProtocolVersion,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Reference, Resource, ResourceContents,
    ResourceTemplate, Role, ServerCapabilities, ServerConfig, SubscribeRequestParams, SubscriptionFilter,
    UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, prompt, prompt_router, tool, tool_router};
use serde_json::json;

use crate::access::archive::{self, AskedBy};
use crate::access::caller::{Caller, Scope};
use crate::access::confirmation;
use crate::access::{evidence, refusals};
use crate::contract::prompt as prompts;
use crate::contract::uris::{self, ResourceUri};
use crate::contract::wire::{
    ArchiveCourseArguments, CatalogPageJson, CourseJson, CreateCourseArguments, CreateCoursePromptArguments,
    HistoryPageJson, InterfaceArchiveArguments, ListCoursesArguments, ReadCourseArguments, SearchCoursesArguments,
    SearchResultJson, UpdateCourseArguments, ViewCatalogArguments,
};
use crate::contract::{arguments, wire};
use crate::live::hub::{self, DrainEnd, Refusal};
use crate::state::ServerState;
use crate::{app, outcomes};

/// How many courses the app's search shows: as many as a completion offers.
const SEARCH_RESULTS: usize = 20;

const JSON: &str = "application/json";

/// How long (ms) a 2026-07-28 client may reuse a tools, prompts or templates listing: they change
/// only when the server restarts with other settings or the operator's policy changes (ADR 0036),
/// and a listen stream that asked for list changes is told of the latter at once.
const STATIC_LIST_TTL_MS: u64 = 5 * 60 * 1000;

/// Hours suggested for the prompt's `cargaHoraria`.
const COMMON_WORKLOADS: [&str; 10] = ["4", "8", "10", "12", "16", "20", "30", "40", "60", "80"];

/// What a host is told about this server at connection time.
pub const INSTRUCTIONS: &str = "Catálogo de cursos. Leitura por recursos (sem efeito colateral): \
cursos://catalogo lista os cursos ativos, mais antigos primeiro, até 100 por página (siga o URI em proximaPagina); \
cursos://{uuid} traz um curso, inclusive arquivado. Toda alteração é feita por ferramentas: criar_curso, \
atualizar_curso (alteração parcial de titulo e/ou cargaHoraria) e arquivar_curso (tira o curso do catálogo; \
não há exclusão; o usuário confirma antes). cursos://{uuid}/historico mostra quem alterou o curso, quando e como. O prompt criar-curso guia o cadastro passo a passo. As regras valem no servidor, não no prompt: \
título de 1 a 200 caracteres, sem caracteres de controle ou invisíveis e único entre os cursos ativos (sem diferenciar maiúsculas \
nem espaços extras); carga horária inteira de 1 a 1000 horas; curso arquivado não pode ser alterado. Uma recusa \
volta como resultado com isError e uma mensagem em português que indica o campo ou a regra a corrigir. \
Assine cursos://catalogo ou cursos://{uuid} para saber de mudanças; o id de um curso pode ser completado pelo título.";

/// The catalog's icon: an open book, inline so that it needs no network.
const ICON_SVG: &str = "data:image/svg+xml;base64,PHN2ZyB4bWxucz0iaHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmciIHZpZXdCb3g9IjAgMCAyNCAyNCIgZmlsbD0ibm9uZSIgc3Ryb2tlPSIjMWY2ZmViIiBzdHJva2Utd2lkdGg9IjIiIHN0cm9rZS1saW5lY2FwPSJyb3VuZCIgc3Ryb2tlLWxpbmVqb2luPSJyb3VuZCI+PHBhdGggZD0iTTIgNGg2YTQgNCAwIDAgMSA0IDR2MTRhMyAzIDAgMCAwLTMtM0gyeiIvPjxwYXRoIGQ9Ik0yMiA0aC02YTQgNCAwIDAgMC00IDR2MTRhMyAzIDAgMCAxIDMtM2g3eiIvPjwvc3ZnPg==";

fn icons() -> Vec<Icon> {
    vec![Icon::new(ICON_SVG).with_mime_type("image/svg+xml").with_sizes(vec!["any".to_owned()])]
}

/// The mcp-cursos MCP server: one handler per connection (stdio) or session (HTTP), over the
/// process-wide [`ServerState`].
///
/// Cheap to build: the routers are built once per process and shared.
#[derive(Clone)]
pub struct CursosServer {
    state: ServerState,
    routers: Arc<Routers>,
    /// Identifies this connection's legacy subscriptions in the hub.
    session: u64,
}

struct Routers {
    tools: ToolRouter<CursosServer>,
    prompts: PromptRouter<CursosServer>,
}

impl std::fmt::Debug for CursosServer {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("CursosServer").field("session", &self.session).finish_non_exhaustive()
    }
}

impl CursosServer {
    /// A handler for one connection, over the process-wide `state`.
    #[must_use]
    pub fn new(state: &ServerState) -> Self {
        static WITH_RESOURCE_TOOLS: OnceLock<Arc<Routers>> = OnceLock::new();
        static WITHOUT_RESOURCE_TOOLS: OnceLock<Arc<Routers>> = OnceLock::new();
        static NEXT_SESSION: AtomicU64 = AtomicU64::new(1);
        let build = |resource_tools: bool| {
            let mut tools = Self::tool_router();
            if !resource_tools {
                tools.remove_route("listar_cursos");
                tools.remove_route("ler_curso");
            }
            Arc::new(Routers { tools, prompts: Self::prompt_router() })
        };
        let routers = if state.options.resource_tools {
            WITH_RESOURCE_TOOLS.get_or_init(|| build(true))
        } else {
            WITHOUT_RESOURCE_TOOLS.get_or_init(|| build(false))
        };
        Self {
            state: state.clone(),
            routers: Arc::clone(routers),
            session: NEXT_SESSION.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// The caller of this request, and the one catalog it may reach (ADR 0035).
    fn caller_of(&self, context: &RequestContext<RoleServer>) -> Caller {
        caller_in(&context.extensions, &self.state.local_catalog)
    }

    /// The catalog of this request's caller: the only catalog a request reads or changes.
    fn catalog_of(&self, context: &RequestContext<RoleServer>) -> courses_domain::Catalog {
        self.state.catalog_of(&self.caller_of(context))
    }

    async fn catalog_page_json(
        catalog: &courses_domain::Catalog,
        after: Option<PageCursor>,
    ) -> Result<String, McpError> {
        let page = catalog.active_page(after, PageSize::default()).await.map_err(outcomes::internal_protocol_error)?;
        let total = catalog.count_active().await.map_err(outcomes::internal_protocol_error)?;
        serde_json::to_string(&CatalogPageJson::from_page(total, &page)).map_err(outcomes::internal_protocol_error)
    }
}

fn input_schema<T: rmcp::schemars::JsonSchema + 'static>() -> Arc<JsonObject> {
    let schema = schema_for_input::<T>()
        .unwrap_or_else(|error| panic!("the arguments schema is an object by construction: {error}"));
    wire::portable_schema(&schema)
}

fn output_schema<T: rmcp::schemars::JsonSchema + 'static>() -> Arc<JsonObject> {
    wire::portable_schema(&schema_for_output::<T>())
}

/// Who sends this request. Over HTTP the backend puts the authenticated [`Caller`] into the
/// request's extensions; a request without one is read-only (fail closed) and in the default
/// catalog. Without HTTP (stdio, in-process) the one local user has full scope, in the
/// process's `local` catalog (the stdio app's `--catalog`).
fn caller_in(extensions: &rmcp::model::Extensions, local: &courses_domain::CatalogName) -> Caller {
    match extensions.get::<http::request::Parts>() {
        Some(parts) => {
            parts.extensions.get::<Caller>().cloned().unwrap_or_else(|| Caller::new(UNAUTHENTICATED, Scope::Read))
        }
        None => Caller::stdio(local.clone()),
    }
}

/// The HTTP session (`Mcp-Session-Id`) a request or notification came through, if any.
fn http_session_in(extensions: &rmcp::model::Extensions) -> Option<String> {
    let parts = extensions.get::<http::request::Parts>()?;
    parts.headers.get("mcp-session-id")?.to_str().ok().map(str::to_owned)
}

impl CursosServer {
    /// Who asked for a write, through which tool, with which arguments, and the evidence of how
    /// (ADR 0037; with `approval`, an archiving's receipt): recorded in the history.
    fn provenance(
        &self,
        context: &RequestContext<RoleServer>,
        tool: &str,
        raw_arguments: &JsonObject,
        approval: Option<ApprovalReceipt>,
    ) -> Provenance {
        let arguments = serde_json::to_string(raw_arguments).unwrap_or_default();
        let caller = self.caller_of(context);
        let mut evidence = evidence::of_request(context, self.surface_hash(&caller, app::declared_by(context)));
        if let Some(approval) = approval {
            evidence = evidence.with_approval(approval);
        }
        Provenance::new(caller.name(), tool, arguments).with_evidence(evidence)
    }

    /// The hash of what `caller` is offered now: the same lists `tools/list`, `prompts/list`,
    /// `resources/templates/list` and the static part of `resources/list` answer with. Computed
    /// for writes only (a few kilobytes of JSON and one SHA-256; reads never pay for it).
    fn surface_hash(&self, caller: &Caller, renders_apps: bool) -> String {
        let tools = self.offered_tools(caller, renders_apps);
        let prompts = self.offered_prompts(caller);
        let resources = static_resources(renders_apps);
        evidence::surface_hash(&evidence::Surface {
            tools: &tools,
            prompts: &prompts,
            resource_templates: &resource_templates(),
            resources: &resources,
        })
    }

    /// The tools `caller` is offered: the app's only to a client that renders apps
    /// (`renders_apps`, ADR 0039), only the read-only ones to a caller that may not write, and
    /// none the operator's policy disabled for its catalog (ADR 0036).
    fn offered_tools(&self, caller: &Caller, renders_apps: bool) -> Vec<rmcp::model::Tool> {
        let mut tools = self.routers.tools.list_all();
        if !renders_apps {
            tools.retain(|tool| !app::is_app_tool(&tool.name));
        }
        if !caller.scope().can_write() {
            tools.retain(|tool| !is_writing(tool));
        }
        let policy = self.state.policy().for_catalog(caller.catalog().as_str());
        tools.retain(|tool| policy.allows_tool(&tool.name));
        tools
    }

    /// The prompts `caller` is offered (none the policy disabled), each with its content version
    /// in `_meta`.
    fn offered_prompts(&self, caller: &Caller) -> Vec<rmcp::model::Prompt> {
        let policy = self.state.policy().for_catalog(caller.catalog().as_str());
        let mut listed = self.routers.prompts.list_all();
        listed.retain(|prompt| policy.allows_prompt(&prompt.name));
        for prompt in &mut listed {
            if prompt.name == prompts::CREATE_COURSE {
                prompt.meta = Some(content_version_meta());
            }
        }
        listed
    }
}

/// The name an HTTP request without an authenticated caller is treated under (read-only).
const UNAUTHENTICATED: &str = "sem-identidade";

/// True when the tool changes state: anything not annotated read-only counts as writing.
fn is_writing(tool: &rmcp::model::Tool) -> bool {
    tool.annotations.as_ref().and_then(|annotations| annotations.read_only_hint) != Some(true)
}

fn is_modern(context: &RequestContext<RoleServer>) -> bool {
    context.protocol_version().is_some_and(|version| version >= ProtocolVersion::V_2026_07_28)
}

#[tool_router]
impl CursosServer {
    /// Cria um curso ativo no catálogo. Use quando o usuário pedir para cadastrar um curso novo.
    /// Recusa (isError) título vazio, com mais de 200 caracteres, com caracteres de controle ou igual ao de outro curso ativo (sem diferenciar maiúsculas nem espaços extras), e carga horária fora de 1 a 1000 horas.
    /// Devolve o curso criado e um link para cursos://<id>. Para poder repetir a chamada sem risco (após um erro de rede, por exemplo), informe uma chaveIdempotencia: a mesma chave com os mesmos argumentos devolve o curso já criado, sem criar outro.
    #[tool(
        name = "criar_curso",
        title = "Criar curso",
        input_schema = input_schema::<CreateCourseArguments>(),
        output_schema = output_schema::<CourseJson>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = false)
    )]
    async fn create_course(&self, raw_arguments: JsonObject, context: RequestContext<RoleServer>) -> CallToolResult {
        let provenance = self.provenance(&context, "criar_curso", &raw_arguments, None);
        match arguments::create_course(&raw_arguments) {
            Ok((new_course, None)) => outcomes::created(self.catalog_of(&context).create(new_course, provenance).await),
            Ok((new_course, Some(key))) => outcomes::created_idempotently(
                self.catalog_of(&context).create_idempotent(new_course, key, provenance).await,
            ),
            Err(errors) => outcomes::refused(&errors.message()),
        }
    }

    /// Altera um curso ativo: informe o id e ao menos um dos campos titulo e cargaHoraria; os campos omitidos ficam como estão.
    /// Recusa (isError) curso inexistente ou arquivado, nada a alterar, título repetido de outro curso ativo e valores fora das regras.
    /// Devolve o curso como ficou. Para não sobrescrever a alteração de outra pessoa, informe em versao a versão que você leu: se o curso mudou desde então, nada é alterado.
    #[tool(
        name = "atualizar_curso",
        title = "Atualizar curso",
        input_schema = input_schema::<UpdateCourseArguments>(),
        output_schema = output_schema::<CourseJson>(),
        annotations(read_only_hint = false, destructive_hint = true, idempotent_hint = true, open_world_hint = false)
    )]
    async fn update_course(&self, raw_arguments: JsonObject, context: RequestContext<RoleServer>) -> CallToolResult {
        let provenance = self.provenance(&context, "atualizar_curso", &raw_arguments, None);
        match arguments::update_course(&raw_arguments) {
            Ok(request) => outcomes::updated(
                self.catalog_of(&context)
                    .update_if(request.id, request.changes, request.expected_version, provenance)
                    .await,
            ),
            Err(errors) => outcomes::refused(&errors.message()),
        }
    }

    /// Arquiva um curso: ele sai do catálogo (cursos://catalogo), continua legível em cursos://<id> e não pode mais ser alterado.
    /// Não há como desarquivar. Arquivar um curso já arquivado não muda nada e é aceito.
    /// Recusa (isError) id inexistente, ou versao diferente da atual (o curso mudou desde a sua leitura). Devolve o curso arquivado.
    /// O usuário confirma o arquivamento no cliente; se ele recusar ou cancelar, nada muda.
    #[tool(
        name = "arquivar_curso",
        title = "Arquivar curso",
        input_schema = input_schema::<ArchiveCourseArguments>(),
        output_schema = output_schema::<CourseJson>(),
        annotations(read_only_hint = false, destructive_hint = true, idempotent_hint = true, open_world_hint = false)
    )]
    async fn archive_course(
        &self,
        raw_arguments: JsonObject,
        InputResponses(responses): InputResponses,
        RequestState(request_state): RequestState,
        context: RequestContext<RoleServer>,
    ) -> CallToolResponse {
        let request = match arguments::archive_course(&raw_arguments) {
            Ok(request) => request,
            Err(errors) => return outcomes::refused(&errors.message()).into(),
        };
        let answer = confirmation::Answer { responses, request_state };
        let asked_by = AskedBy::Client { options: &self.state.options, answer, context: &context };
        let caller = self.caller_of(&context);
        let provenance = |tool, receipt| self.provenance(&context, tool, &raw_arguments, Some(receipt));
        archive::archive(&self.catalog_of(&context), &caller, &self.state.confirmations, request, asked_by, provenance)
            .await
    }

    /// Lista os cursos ativos, mais antigos primeiro, até 100 por página: o mesmo JSON do recurso cursos://catalogo.
    /// Para a página seguinte, passe em pagina o valor de proximaPagina da resposta anterior.
    /// Somente leitura: não altera nada. Prefira o recurso cursos://catalogo quando o cliente ler recursos.
    #[tool(
        name = "listar_cursos",
        title = "Listar cursos",
        input_schema = input_schema::<ListCoursesArguments>(),
        output_schema = output_schema::<CatalogPageJson>(),
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn list_courses(&self, raw_arguments: JsonObject, context: RequestContext<RoleServer>) -> CallToolResult {
        let after = match arguments::list_courses(&raw_arguments) {
            Ok(after) => after,
            Err(errors) => return outcomes::refused(&errors.message()),
        };
        match Self::catalog_page_json(&self.catalog_of(&context), after).await {
            Ok(json) => outcomes::read_only(&json),
            Err(_) => outcomes::refused(outcomes::INTERNAL_TOOL_ERROR),
        }
    }

    /// Lê um curso pelo id, inclusive arquivado: o mesmo JSON do recurso cursos://<id>.
    /// Somente leitura: não altera nada. Prefira o recurso cursos://<id> quando o cliente ler recursos.
    #[tool(
        name = "ler_curso",
        title = "Ler curso",
        input_schema = input_schema::<ReadCourseArguments>(),
        output_schema = output_schema::<CourseJson>(),
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn read_course(&self, raw_arguments: JsonObject, context: RequestContext<RoleServer>) -> CallToolResult {
        match arguments::read_course(&raw_arguments) {
            Ok(id) => outcomes::read_course(self.catalog_of(&context).get(id).await),
            Err(errors) => outcomes::refused(&errors.message()),
        }
    }

    /// Mostra o catálogo de cursos ativos numa interface (tabela com busca, detalhe, cadastro, edição e arquivamento), para clientes que exibem MCP Apps.
    /// Devolve a primeira página do catálogo (o mesmo JSON de cursos://catalogo); para a seguinte, passe em pagina o valor de proximaPagina.
    /// Somente leitura: abrir a interface não altera nada.
    #[tool(
        name = "ver_catalogo",
        title = "Ver catálogo",
        input_schema = input_schema::<ViewCatalogArguments>(),
        output_schema = output_schema::<CatalogPageJson>(),
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false),
        meta = app::entry_tool_meta()
    )]
    async fn view_catalog(&self, raw_arguments: JsonObject, context: RequestContext<RoleServer>) -> CallToolResult {
        // The same page, cursor and refusals as listar_cursos: one reading of the catalog.
        self.list_courses(raw_arguments, context).await
    }

    /// Busca cursos ativos pelo que o usuário digitou (parte do título ou o id), melhores primeiro: a mesma busca que completa o id de cursos://{uuid}.
    /// Só para a interface do catálogo. Somente leitura.
    #[tool(
        name = "interface_buscar_cursos",
        title = "Buscar cursos (interface)",
        input_schema = input_schema::<SearchCoursesArguments>(),
        output_schema = output_schema::<SearchResultJson>(),
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false),
        meta = app::app_only_tool_meta()
    )]
    async fn search_courses(&self, raw_arguments: JsonObject, context: RequestContext<RoleServer>) -> CallToolResult {
        let typed = match arguments::search_courses(&raw_arguments) {
            Ok(typed) => typed,
            Err(errors) => return outcomes::refused(&errors.message()),
        };
        match self.catalog_of(&context).suggest(&typed, SEARCH_RESULTS + 1).await {
            Ok(courses) => {
                let found = SearchResultJson {
                    mais_resultados: courses.len() > SEARCH_RESULTS,
                    cursos: courses.iter().take(SEARCH_RESULTS).map(CourseJson::from_course).collect(),
                };
                match serde_json::to_string(&found) {
                    Ok(json) => outcomes::read_only(&json),
                    Err(error) => outcomes::internal_tool_error(&error),
                }
            }
            Err(error) => outcomes::internal_tool_error(&error),
        }
    }

    /// Arquiva um curso pela interface do catálogo, que mostra ao usuário a pergunta do servidor: sem estadoPergunta, devolve a pergunta e nada muda; com estadoPergunta e confirmar, arquiva a versão mostrada se confirmar for true.
    /// Só para a interface do catálogo. As mesmas recusas de arquivar_curso.
    #[tool(
        name = "interface_arquivar_curso",
        title = "Arquivar curso (interface)",
        input_schema = input_schema::<InterfaceArchiveArguments>(),
        annotations(read_only_hint = false, destructive_hint = true, idempotent_hint = true, open_world_hint = false),
        meta = app::app_only_tool_meta()
    )]
    async fn interface_archive_course(
        &self,
        raw_arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> CallToolResponse {
        let request = match arguments::interface_archive(&raw_arguments) {
            Ok(request) => request,
            Err(errors) => return outcomes::refused(&errors.message()).into(),
        };
        let asked_by = AskedBy::App { answer: request.answer };
        let caller = self.caller_of(&context);
        let provenance = |tool, receipt| self.provenance(&context, tool, &raw_arguments, Some(receipt));
        let request = (request.id, request.expected_version);
        archive::archive(&self.catalog_of(&context), &caller, &self.state.confirmations, request, asked_by, provenance)
            .await
    }
}

/// The `_meta` that carries the prompt's [content version](prompts::content_version).
fn content_version_meta() -> rmcp::model::MetaObject {
    let mut meta = rmcp::model::MetaObject::new();
    meta.0.insert(prompts::CONTENT_VERSION_KEY.to_owned(), serde_json::Value::from(prompts::content_version()));
    meta
}

/// The arguments `prompts/list` shows for `criar-curso`.
fn create_course_arguments() -> Option<Vec<PromptArgument>> {
    Some(vec![
        PromptArgument::new("titulo")
            .with_title("Título")
            .with_description("Título do curso a cadastrar.")
            .with_required(true),
        PromptArgument::new("cargaHoraria")
            .with_title("Carga horária")
            .with_description("Carga horária desejada, em horas inteiras (1 a 1000).")
            .with_required(true),
    ])
}

#[prompt_router]
#[allow(missing_docs, reason = "rmcp's #[prompt] generates an undocumented pub metadata function")]
impl CursosServer {
    /// Roteiro guiado para cadastrar um curso: ler o catálogo, checar duplicidade, validar os dados, chamar criar_curso e confirmar o resultado.
    #[prompt(
        name = "criar-curso",
        title = "Cadastrar um curso",
        arguments = create_course_arguments(),
        icons = icons()
    )]
    async fn create_course_prompt(
        &self,
        Parameters(arguments): Parameters<CreateCoursePromptArguments>,
    ) -> Result<GetPromptResult, McpError> {
        let text = prompts::create_course(&arguments).map_err(outcomes::prompt_refused)?;
        let mut result = GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)])
            .with_description("Cadastro guiado de um curso no catálogo");
        result.meta = Some(content_version_meta());
        Ok(result)
    }
}

/// The catalog's entry in `resources/list` (the one static resource).
fn catalog_resource() -> Resource {
    Resource::new(uris::CATALOG, "catalogo")
        .with_title("Catálogo de cursos")
        .with_description("Cursos ativos, mais antigos primeiro, até 100 por página; siga proximaPagina.")
        .with_mime_type(JSON)
        .with_icons(icons())
}

/// The static resources a client is offered: the catalog, and the app to a client that renders
/// apps (ADR 0039).
fn static_resources(renders_apps: bool) -> Vec<Resource> {
    let mut resources = vec![catalog_resource()];
    if renders_apps {
        resources.push(app::app_resource());
    }
    resources
}

/// What `resources/templates/list` answers.
fn resource_templates() -> Vec<ResourceTemplate> {
    vec![
        ResourceTemplate::new(uris::COURSE_TEMPLATE, "curso")
            .with_title("Curso por id")
            .with_description("Um curso pelo seu id (UUID), inclusive arquivado. O id pode ser completado pelo título.")
            .with_mime_type(JSON)
            .with_icons(icons()),
        ResourceTemplate::new(uris::HISTORY_TEMPLATE, "historico")
            .with_title("Histórico de um curso")
            .with_description(
                "Cada alteração aceita de um curso (quem, quando, ferramenta, argumentos, antes e depois, e a \
                 evidência: revisão do protocolo, cliente, superfície oferecida e o recibo de aprovação de um \
                 arquivamento), mais recentes primeiro, até 100 por página; siga proximaPagina.",
            )
            .with_mime_type(JSON)
            .with_icons(icons()),
    ]
}

fn course_resource(course: &Course) -> Resource {
    let json = CourseJson::from_course(course);
    let mut annotations = Annotations::default();
    annotations.last_modified = Some(json.atualizado_em.clone());
    Resource::new(uris::course(course.id()), json.titulo.clone())
        .with_title(json.titulo)
        .with_mime_type(JSON)
        .with_annotations(annotations)
}

impl ServerHandler for CursosServer {
    fn get_info(&self) -> ServerConfig {
        // rmcp asks for it on every stateless HTTP request: built once, then cloned.
        static INFO: std::sync::LazyLock<ServerConfig> = std::sync::LazyLock::new(|| {
            ServerConfig::new(
                ServerCapabilities::builder()
                    .enable_tools()
                    .enable_tool_list_changed()
                    .enable_prompts()
                    .enable_prompts_list_changed()
                    .enable_resources()
                    .enable_resources_subscribe()
                    .enable_resources_list_changed()
                    .enable_completions()
                    .build(),
            )
            .with_server_info(
                Implementation::new("mcp-cursos", env!("CARGO_PKG_VERSION"))
                    .with_title("Catálogo de cursos")
                    .with_description(
                        "Catálogo de cursos: recursos para ler, ferramentas para alterar, prompt para guiar.",
                    )
                    .with_icons(icons()),
            )
            .with_instructions(INSTRUCTIONS)
        });
        INFO.clone()
    }

    async fn call_tool(
        &self,
        request: rmcp::model::CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, McpError> {
        // Boxed: rmcp keeps every handler's future inline in the one future it spawns for each
        // request, so a large one here would be moved on every request, reads included.
        Box::pin(async move {
            let caller = self.caller_of(&context);
            let Some(tool) = self.routers.tools.get(&request.name) else {
                return Err(outcomes::unknown_tool(&request.name, self.state.options.resource_tools));
            };
            // The app's tools do not exist for a client that does not render apps (ADR 0039).
            if app::is_app_tool(&request.name) && !app::declared_by(&context) {
                return Err(outcomes::unknown_tool(&request.name, self.state.options.resource_tools));
            }
            if !caller.scope().can_write() && is_writing(tool) {
                return Err(refusals::scope_refused(&request.name, &caller));
            }
            let policy = self.state.policy().for_catalog(caller.catalog().as_str());
            if !policy.allows_tool(&request.name) {
                return Err(refusals::tool_disabled(&request.name, policy.is_read_only()));
            }
            let tool_context = rmcp::handler::server::tool::ToolCallContext::new(self, request, context);
            self.routers.tools.call(tool_context).await
        })
        .await
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let offered = self.offered_tools(&self.caller_of(&context), app::declared_by(&context));
        let mut result = ListToolsResult::with_all_items(offered);
        if is_modern(&context) {
            // The listing depends on the caller's key: never shared between callers.
            result.ttl_ms = Some(STATIC_LIST_TTL_MS);
            result.cache_scope = Some(CacheScope::Private);
        }
        Ok(result)
    }

    fn get_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        self.routers.tools.get(name).cloned()
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        // Boxed: rmcp keeps every handler's future inline in the one future it spawns for each
        // request, so a large one here would be moved on every request, reads included.
        Box::pin(async move {
            let cursor = match request.and_then(|request| request.cursor) {
                None => None,
                Some(token) => Some(PageCursor::parse_token(&token).map_err(|_| {
                    McpError::invalid_params(
                        "Cursor inválido: use o nextCursor devolvido pela listagem anterior.",
                        None,
                    )
                })?),
            };
            let page = self
                .catalog_of(&context)
                .active_page(cursor, PageSize::default())
                .await
                .map_err(outcomes::internal_protocol_error)?;
            let mut resources = Vec::with_capacity(page.courses.len() + 2);
            if cursor.is_none() {
                resources.extend(static_resources(app::declared_by(&context)));
            }
            resources.extend(page.courses.iter().map(course_resource));
            let mut result = ListResourcesResult::with_all_items(resources);
            result.next_cursor = page.next.map(|next| next.to_token());
            if is_modern(&context) {
                // The catalog changes whenever a tool runs: always revalidate (subscribe to hear of changes).
                // Private: the answer is the caller's catalog's (ADR 0035), never to be shared.
                result.ttl_ms = Some(0);
                result.cache_scope = Some(CacheScope::Private);
            }
            Ok(result)
        })
        .await
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        let mut result = ListResourceTemplatesResult::with_all_items(resource_templates());
        if is_modern(&context) {
            result.ttl_ms = Some(STATIC_LIST_TTL_MS);
            result.cache_scope = Some(CacheScope::Public);
        }
        Ok(result)
    }

    async fn get_prompt(
        &self,
        request: rmcp::model::GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetPromptResponse, McpError> {
        // Boxed: rmcp keeps every handler's future inline in the one future it spawns for each
        // request, so a large one here would be moved on every request, reads included.
        Box::pin(async move {
            if !self.state.policy().allows_prompt(self.caller_of(&context).catalog().as_str(), &request.name) {
                return Err(refusals::prompt_disabled(&request.name));
            }
            let prompt_context =
                rmcp::handler::server::prompt::PromptContext::new(self, request.name, request.arguments, context);
            self.routers.prompts.get_prompt(prompt_context).await
        })
        .await
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        let mut result = ListPromptsResult::with_all_items(self.offered_prompts(&self.caller_of(&context)));
        if is_modern(&context) {
            result.ttl_ms = Some(STATIC_LIST_TTL_MS);
            // The listing depends on the policy of the caller's catalog.
            result.cache_scope = Some(CacheScope::Private);
        }
        Ok(result)
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let uri = request.uri;
        if uri == app::APP_URI {
            // Offered only to clients that render apps; to any other it is no resource at all.
            if !app::declared_by(&context) {
                return Err(outcomes::resource_not_found(&uri));
            }
            let mut result = ReadResourceResult::new(vec![app::app_contents()]);
            if is_modern(&context) {
                // The view changes only with the server's version; the catalog it shows is read live.
                result.ttl_ms = Some(STATIC_LIST_TTL_MS);
                result.cache_scope = Some(CacheScope::Public);
            }
            return Ok(result.into());
        }
        let catalog = self.catalog_of(&context);
        let json = match ResourceUri::parse(&uri) {
            None => return Err(outcomes::resource_not_found(&uri)),
            Some(ResourceUri::Course(id)) => {
                let course = catalog.get(id).await.map_err(|error| outcomes::course_read_error(error, &uri))?;
                self.state.course_texts.text_of(&course).map_err(outcomes::internal_protocol_error)?
            }
            Some(ResourceUri::Catalog(after)) => Self::catalog_page_json(&catalog, after).await?,
            Some(ResourceUri::History(id, after)) => {
                let page = catalog
                    .history(id, after, PageSize::default())
                    .await
                    .map_err(|error| outcomes::course_read_error(error, &uri))?;
                serde_json::to_string(&HistoryPageJson::from_page(id, &page))
                    .map_err(outcomes::internal_protocol_error)?
            }
        };
        let mut result = ReadResourceResult::new(vec![ResourceContents::text(json, uri).with_mime_type(JSON)]);
        if is_modern(&context) {
            // Private: the same URI reads differently, or not at all, in another catalog (ADR 0035).
            result.ttl_ms = Some(0);
            result.cache_scope = Some(CacheScope::Private);
        }
        Ok(result.into())
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        // Boxed: rmcp keeps every handler's future inline in the one future it spawns for each
        // request, so a large one here would be moved on every request, reads included.
        Box::pin(async move {
            let policy = self.state.policy().for_catalog(self.caller_of(&context).catalog().as_str());
            let typed = request.argument.value.as_str();
            let completion = match (&request.r#ref, request.argument.name.as_str()) {
                (Reference::Resource(template), "uuid")
                    if template.uri == uris::COURSE_TEMPLATE || template.uri == uris::HISTORY_TEMPLATE =>
                {
                    let limit = CompletionInfo::MAX_VALUES;
                    let courses = self
                        .catalog_of(&context)
                        .suggest(typed, limit + 1)
                        .await
                        .map_err(outcomes::internal_protocol_error)?;
                    let has_more = courses.len() > limit;
                    let values = courses.iter().take(limit).map(|course| course.id().to_string()).collect();
                    CompletionInfo::with_pagination(values, None, has_more)
                }
                (Reference::Prompt(prompt), "cargaHoraria")
                    if prompt.name == "criar-curso" && policy.allows_prompt(&prompt.name) =>
                {
                    let values = COMMON_WORKLOADS
                        .iter()
                        .filter(|hours| hours.starts_with(typed.trim()))
                        .map(|hours| (*hours).to_owned());
                    CompletionInfo::with_all_values(values.collect())
                }
                // Anything else (other arguments, unknown references): no suggestion, not an error.
                _ => CompletionInfo::with_all_values(Vec::new()),
            }
            .map_err(outcomes::internal_protocol_error_text)?;
            Ok(CompleteResult::new(completion))
        })
        .await
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        // Boxed: rmcp keeps every handler's future inline in the one future it spawns for each
        // request, so a large one here would be moved on every request, reads included.
        Box::pin(async move {
            if !self.state.options.legacy_subscriptions {
                return Err(McpError::invalid_request(
                    "Este servidor roda sem sessões HTTP, então não mantém resources/subscribe. \
                     Use subscriptions/listen (revisão 2026-07-28) ou um servidor com sessões (SESSION_MODE=stateful).",
                    None,
                ));
            }
            // Only resources this server has can change; anything else would be held for nothing.
            if ResourceUri::parse(&request.uri).is_none() {
                return Err(outcomes::resource_not_found(&request.uri));
            }
            let caller = self.caller_of(&context);
            let http_session = http_session_in(&context.extensions);
            self.state
                .hub
                .subscribe(self.session, context.peer, &caller, http_session, &request.uri)
                .map_err(|refusal| live_update_refusal(refusal, "resources/subscribe"))
        })
        .await
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.state.hub.unsubscribe(self.session, &request.uri);
        Ok(())
    }

    fn accepted_subscription_filter(&self, requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        // Counted from here (rmcp acknowledges before calling `listen`), so a shutdown that
        // starts in between still waits for this stream to run and end cleanly.
        self.state.hub.stream_accepted();
        // A filter `listen` will refuse is acknowledged as accepting nothing (nor echoed back);
        // `listen` then ends the request with the error that names the reason.
        if listen_filter_error(requested, self.state.hub.limits().subscriptions_per_listener).is_some() {
            return Some(SubscriptionFilter::default());
        }
        Some(requested.supported_by(&self.get_info().capabilities))
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        // Boxed: rmcp keeps every handler's future inline in the one future it spawns for each
        // request, so a large one here would be moved on every request, reads included.
        Box::pin(async move {
            let hub = &self.state.hub;
            if let Some(error) = listen_filter_error(context.requested(), hub.limits().subscriptions_per_listener) {
                hub.stream_refused();
                return Err(error);
            }
            let accepted = context.accepted();
            let resources = accepted.resource_subscriptions.clone().unwrap_or_default();
            let list_changed = accepted.resources_list_changed == Some(true);
            let caller = caller_in(&context.request_context().extensions, &self.state.local_catalog);
            let ticket = hub
                .admit_stream(&caller, &resources, list_changed)
                .map_err(|refusal| live_update_refusal(refusal, "subscriptions/listen"))?;
            let sink = context.sink().clone();
            // End with the request, or when the process shuts down (stdin closed, SIGTERM): rmcp waits
            // for in-flight handlers before it exits, and an open stream would otherwise hold it.
            // A stream whose client stopped reading is ended too (ADR 0022): its final result tells
            // a client that reads again to listen again.
            let end = tokio::select! {
                end = hub::drain(ticket.mailbox(), hub::Receiver::Stream(&sink), ticket.send_timeout()) => Some(end),
                () = ticket.mailbox().dropped() => Some(DrainEnd::Slow),
                () = context.cancelled() => None,
                () = self.state.shutdown.cancelled() => None,
            };
            if end == Some(DrainEnd::Slow) {
                ticket.drop_slow();
            }
            Ok(())
        })
        .await
    }

    async fn on_custom_request(
        &self,
        request: rmcp::model::CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CustomResult, McpError> {
        Err(outcomes::unreadable_request(&request.method, is_modern(&context)))
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let caller = caller_in(&context.extensions, &self.state.local_catalog);
        let http_session = http_session_in(&context.extensions);
        self.state.hub.session_opened(self.session, context.peer, &caller, http_session);
    }
}

/// The longest part of a client's URI quoted back in an error.
const QUOTED_URI_CHARS: usize = 200;

/// Why a listen filter cannot be accepted whatever the caller: a URI this server does not have,
/// or more URIs than one stream may hold. `None` when the filter is acceptable.
fn listen_filter_error(filter: &SubscriptionFilter, per_listener: usize) -> Option<McpError> {
    let uris = filter.resource_subscriptions.as_deref().unwrap_or_default();
    if let Some(unknown) = uris.iter().find(|uri| ResourceUri::parse(uri).is_none()) {
        let quoted: String = unknown.chars().take(QUOTED_URI_CHARS).collect();
        return Some(McpError::invalid_params(
            format!(
                "Recurso desconhecido neste servidor: {quoted}. Só é possível acompanhar cursos://catalogo (e suas \
                 páginas), cursos://{{uuid}} e cursos://{{uuid}}/historico; nenhuma assinatura foi feita."
            ),
            Some(json!({ "uri": quoted })),
        ));
    }
    let distinct: std::collections::HashSet<&String> = uris.iter().collect();
    (distinct.len() > per_listener).then(|| {
        McpError::invalid_params(
            format!(
                "Um fluxo de subscriptions/listen acompanha no máximo {per_listener} recursos; este pediu {}. \
                 Acompanhe cursos://catalogo para saber de qualquer mudança.",
                distinct.len()
            ),
            None,
        )
    })
}

/// The error for a subscription or stream beyond one of the bounds of live updates (ADR 0022).
fn live_update_refusal(refusal: Refusal, method: &str) -> McpError {
    let message = match refusal {
        Refusal::PerListener(limit) => format!(
            "Esta sessão já assina {limit} recursos, o máximo; cancele alguma assinatura \
             (resources/unsubscribe) ou assine cursos://catalogo para saber de qualquer mudança."
        ),
        Refusal::StreamsPerCaller(limit) => format!(
            "Esta chave já tem {limit} fluxos de subscriptions/listen abertos, o máximo; feche algum antes de abrir outro."
        ),
        Refusal::Streams(limit) => format!(
            "O servidor já tem {limit} fluxos de subscriptions/listen abertos, o máximo; tente de novo mais tarde."
        ),
        Refusal::SubscriptionsPerCaller(limit) => format!(
            "Esta chave já acompanha {limit} recursos somando suas sessões e fluxos, o máximo; \
             acompanhe cursos://catalogo para saber de qualquer mudança."
        ),
        Refusal::Subscriptions(limit) => format!(
            "O servidor já acompanha {limit} recursos para todos os clientes, o máximo; tente de novo mais tarde \
             ou acompanhe cursos://catalogo."
        ),
    };
    tracing::info!(?refusal, method, "a live-update request was refused at a bound");
    McpError::invalid_params(message, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::policy;

    #[test]
    fn the_policy_knows_exactly_the_registered_tools_and_which_of_them_write() {
        let tools = CursosServer::tool_router().list_all();
        let mut registered: Vec<&str> = tools.iter().map(|tool| &*tool.name).collect();
        let mut known = policy::TOOLS.to_vec();
        registered.sort_unstable();
        known.sort_unstable();
        assert_eq!(registered, known);
        let mut writing: Vec<&str> = tools.iter().filter(|tool| is_writing(tool)).map(|tool| &*tool.name).collect();
        let mut known_writing = policy::WRITING_TOOLS.to_vec();
        writing.sort_unstable();
        known_writing.sort_unstable();
        assert_eq!(writing, known_writing);
    }

    #[test]
    fn the_policy_knows_exactly_the_registered_prompts() {
        let prompts = CursosServer::prompt_router().list_all();
        let registered: Vec<&str> = prompts.iter().map(|prompt| &*prompt.name).collect();
        assert_eq!(registered, policy::PROMPTS);
    }
}
