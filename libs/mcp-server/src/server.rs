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
//!
//! Each handler delegates: reads to `crate::reads`, archiving to `crate::access::archive`, live updates to the
//! hub (`crate::live`). The larger ones are boxed: rmcp keeps every handler's future inline in the one future
//! it spawns for each request, so a large one would be moved on every request, reads included.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use courses_domain::{ApprovalReceipt, Provenance};
use rmcp::handler::server::common::{schema_for_input, schema_for_output};
use rmcp::handler::server::router::prompt::PromptRouter;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::{InputResponses, RequestState};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CacheScope, CallToolResponse, CallToolResult, CompleteRequestParams, CompleteResult, GetPromptResult, JsonObject,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    PromptMessage, ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    ResourceContents, Role, ServerConfig, SubscribeRequestParams, SubscriptionFilter, UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, prompt, prompt_router, tool, tool_router};

use crate::access::archive::{self, AskedBy};
use crate::access::caller::{Caller, caller_in, http_session_in};
use crate::access::confirmation::{self, AskedOf};
use crate::access::{evidence, refusals};
use crate::contract::prompt as prompts;
use crate::contract::wire::{
    ArchiveCourseArguments, CatalogPageJson, CourseJson, CreateCourseArguments, CreateCoursePromptArguments,
    InterfaceArchiveArguments, ListCoursesArguments, ReadCourseArguments, SearchCoursesArguments, SearchResultJson,
    UpdateCourseArguments, ViewCatalogArguments,
};
use crate::contract::{arguments, ui, wire};
use crate::state::ServerState;
use crate::{app, outcomes, reads, surface};

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
}

fn input_schema<T: rmcp::schemars::JsonSchema + 'static>() -> Arc<JsonObject> {
    let schema = schema_for_input::<T>()
        .unwrap_or_else(|error| panic!("the arguments schema is an object by construction: {error}"));
    wire::portable_schema(&schema)
}

fn output_schema<T: rmcp::schemars::JsonSchema + 'static>() -> Arc<JsonObject> {
    wire::portable_output_schema(&schema_for_output::<T>())
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

    /// Archives through `asked_by` (the tool's or the app's path), asked of this request's caller
    /// in this request's session, with authority asked again at write time (ADR 0044).
    async fn archive(
        &self,
        context: &RequestContext<RoleServer>,
        raw_arguments: &JsonObject,
        request: (courses_domain::CourseId, Option<u64>),
        asked_by: AskedBy<'_>,
    ) -> CallToolResponse {
        let caller = self.caller_of(context);
        let session = http_session_in(&context.extensions);
        let asked = AskedOf { caller: &caller, session: session.as_deref() };
        let provenance = |tool, receipt| self.provenance(context, tool, raw_arguments, Some(receipt));
        let catalog = self.catalog_of(context);
        archive::archive(&catalog, asked, &self.state.confirmations, request, asked_by, &self.state, provenance).await
    }

    /// The hash of what `caller` is offered now: the same lists `tools/list`, `prompts/list`,
    /// `resources/templates/list` and the static part of `resources/list` answer with. Computed
    /// for writes only (a few kilobytes of JSON and one SHA-256; reads never pay for it).
    fn surface_hash(&self, caller: &Caller, renders_apps: bool) -> String {
        let tools = self.offered_tools(caller, renders_apps);
        let prompts = self.offered_prompts(caller);
        let resources = surface::static_resources(renders_apps);
        evidence::surface_hash(&evidence::Surface {
            tools: &tools,
            prompts: &prompts,
            resource_templates: &surface::resource_templates(),
            resources: &resources,
        })
    }

    /// The tools `caller` is offered: the app's only to a client that renders apps
    /// (`renders_apps`, ADR 0039), only the read-only ones to a caller that may not write, and
    /// none the operator's policy disabled for its catalog (ADR 0036).
    fn offered_tools(&self, caller: &Caller, renders_apps: bool) -> Vec<rmcp::model::Tool> {
        let mut tools = self.routers.tools.list_all();
        if !renders_apps {
            tools.retain(|tool| !ui::is_app_tool(&tool.name));
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
                prompt.meta = Some(surface::content_version_meta());
            }
        }
        listed
    }
}

/// True when the tool changes state: anything not annotated read-only counts as writing.
fn is_writing(tool: &rmcp::model::Tool) -> bool {
    tool.annotations.as_ref().and_then(|annotations| annotations.read_only_hint) != Some(true)
}

/// On 2026-07-28, how long (ms) a client may reuse `result`, and whether it may share it.
macro_rules! cache_hint {
    ($result:ident, $context:expr, $ttl_ms:expr, $scope:ident) => {
        if is_modern($context) {
            $result.ttl_ms = Some($ttl_ms);
            $result.cache_scope = Some(CacheScope::$scope);
        }
    };
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
        self.archive(&context, &raw_arguments, request, asked_by).await
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
        reads::list_courses(&self.catalog_of(&context), &raw_arguments).await
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
        reads::list_courses(&self.catalog_of(&context), &raw_arguments).await
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
        reads::search_courses(&self.catalog_of(&context), &raw_arguments).await
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
        self.archive(&context, &raw_arguments, (request.id, request.expected_version), asked_by).await
    }
}

#[prompt_router]
#[allow(missing_docs, reason = "rmcp's #[prompt] generates an undocumented pub metadata function")]
impl CursosServer {
    /// Roteiro guiado para cadastrar um curso: ler o catálogo, checar duplicidade, validar os dados, chamar criar_curso e confirmar o resultado.
    #[prompt(
        name = "criar-curso",
        title = "Cadastrar um curso",
        arguments = surface::create_course_arguments(),
        icons = surface::icons()
    )]
    async fn create_course_prompt(
        &self,
        Parameters(arguments): Parameters<CreateCoursePromptArguments>,
    ) -> Result<GetPromptResult, McpError> {
        let text = prompts::create_course(&arguments).map_err(outcomes::prompt_refused)?;
        let mut result = GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)])
            .with_description("Cadastro guiado de um curso no catálogo");
        result.meta = Some(surface::content_version_meta());
        Ok(result)
    }
}

impl ServerHandler for CursosServer {
    fn get_info(&self) -> ServerConfig {
        surface::server_config()
    }

    async fn call_tool(
        &self,
        request: rmcp::model::CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, McpError> {
        // Boxed: see the module docs.
        Box::pin(async move {
            let modern = is_modern(&context);
            let caller = self.caller_of(&context);
            let Some(tool) = self.routers.tools.get(&request.name) else {
                return Err(outcomes::unknown_tool(&request.name, self.state.options.resource_tools));
            };
            // The app's tools do not exist for a client that does not render apps (ADR 0039).
            if ui::is_app_tool(&request.name) && !app::declared_by(&context) {
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
            self.routers.tools.call(tool_context).await.map(|response| surface::answered(response, modern))
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
        // The listing depends on the caller's key: never shared between callers.
        cache_hint!(result, &context, surface::STATIC_LIST_TTL_MS, Private);
        Ok(surface::answered(result, is_modern(&context)))
    }

    fn get_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        self.routers.tools.get(name).cloned()
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        // Boxed: see the module docs.
        Box::pin(async move {
            let cursor = request.and_then(|request| request.cursor);
            let (resources, next_cursor) =
                reads::resources_page(&self.catalog_of(&context), cursor, app::declared_by(&context)).await?;
            let mut result = ListResourcesResult::with_all_items(resources);
            result.next_cursor = next_cursor;
            // The catalog changes whenever a tool runs: always revalidate (subscribe to hear of changes).
            // Private: the answer is the caller's catalog's (ADR 0035), never to be shared.
            cache_hint!(result, &context, 0, Private);
            Ok(surface::answered(result, is_modern(&context)))
        })
        .await
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        let mut result = ListResourceTemplatesResult::with_all_items(surface::resource_templates());
        cache_hint!(result, &context, surface::STATIC_LIST_TTL_MS, Public);
        Ok(surface::answered(result, is_modern(&context)))
    }

    async fn get_prompt(
        &self,
        request: rmcp::model::GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetPromptResponse, McpError> {
        // Boxed: see the module docs.
        Box::pin(async move {
            if !self.state.policy().allows_prompt(self.caller_of(&context).catalog().as_str(), &request.name) {
                return Err(refusals::prompt_disabled(&request.name));
            }
            let modern = is_modern(&context);
            let prompt_context =
                rmcp::handler::server::prompt::PromptContext::new(self, request.name, request.arguments, context);
            self.routers.prompts.get_prompt(prompt_context).await.map(|response| surface::answered(response, modern))
        })
        .await
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        let mut result = ListPromptsResult::with_all_items(self.offered_prompts(&self.caller_of(&context)));
        // The listing depends on the policy of the caller's catalog.
        cache_hint!(result, &context, surface::STATIC_LIST_TTL_MS, Private);
        Ok(surface::answered(result, is_modern(&context)))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let uri = request.uri;
        if uri == ui::APP_URI {
            // Offered only to clients that render apps; to any other it is no resource at all.
            if !app::declared_by(&context) {
                return Err(outcomes::resource_not_found(&uri));
            }
            let mut result = ReadResourceResult::new(vec![app::app_contents()]);
            // The view changes only with the server's version; the catalog it shows is read live.
            cache_hint!(result, &context, surface::STATIC_LIST_TTL_MS, Public);
            return Ok(surface::answered(result, is_modern(&context)).into());
        }
        let json = reads::resource_json(&self.catalog_of(&context), &self.state.course_texts, &uri).await?;
        let mut result = ReadResourceResult::new(vec![ResourceContents::text(json, uri).with_mime_type(surface::JSON)]);
        // Private: the same URI reads differently, or not at all, in another catalog (ADR 0035).
        cache_hint!(result, &context, 0, Private);
        Ok(surface::answered(result, is_modern(&context)).into())
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        // Boxed: see the module docs.
        Box::pin(async move {
            let policy = self.state.policy().for_catalog(self.caller_of(&context).catalog().as_str());
            let argument = (request.argument.name.as_str(), request.argument.value.as_str());
            let catalog = self.catalog_of(&context);
            let completion = reads::completion(&catalog, &policy, &request.r#ref, argument).await?;
            Ok(surface::answered(CompleteResult::new(completion), is_modern(&context)))
        })
        .await
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        // Boxed: see the module docs.
        Box::pin(async move {
            let caller = self.caller_of(&context);
            let http_session = http_session_in(&context.extensions);
            let legacy = self.state.options.legacy_subscriptions;
            self.state.hub.resources_subscribe(legacy, self.session, context.peer, &caller, http_session, &request.uri)
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
        Some(self.state.hub.accept_listen_filter(requested, &self.get_info().capabilities))
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        // Boxed: see the module docs.
        Box::pin(async move {
            let caller = caller_in(&context.request_context().extensions, &self.state.local_catalog);
            self.state.hub.listen(&context, &caller, &self.state.shutdown).await
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
