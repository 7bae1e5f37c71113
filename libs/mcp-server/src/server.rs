//! [`CursosServer`]: the one place where every resource, tool and prompt is registered.
//!
//! | primitive | name | handler |
//! |---|---|---|
//! | tool | `criar_curso`, `atualizar_curso`, `arquivar_curso` | the `#[tool]` methods below |
//! | prompt | `criar-curso` | the `#[prompt]` method below |
//! | resource | `cursos://catalogo` (and its pages) | [`ServerHandler::list_resources`], [`ServerHandler::read_resource`] |
//! | resource template | `cursos://{uuid}` | [`ServerHandler::list_resource_templates`], [`ServerHandler::read_resource`] |

use std::sync::{Arc, OnceLock};

use courses_domain::{Catalog, PageCursor, PageSize};
use rmcp::handler::server::common::{schema_for_input, schema_for_output};
use rmcp::handler::server::router::prompt::PromptRouter;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResult, GetPromptResult, Implementation, JsonObject, ListResourceTemplatesResult, ListResourcesResult,
    PaginatedRequestParams, PromptMessage, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    Resource, ResourceContents, ResourceTemplate, Role, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{
    ErrorData as McpError, RoleServer, ServerHandler, prompt, prompt_handler, prompt_router, tool, tool_handler,
    tool_router,
};

use crate::outcomes;
use crate::uris::{self, ResourceUri};
use crate::wire::{
    ArchiveCourseArguments, CourseJson, CreateCourseArguments, CreateCoursePromptArguments, UpdateCourseArguments,
};
use crate::{arguments, prompts, wire};

const JSON: &str = "application/json";

/// What a host is told about this server at connection time.
pub const INSTRUCTIONS: &str = "Catálogo de cursos. Leitura por recursos (sem efeito colateral): \
cursos://catalogo lista os cursos ativos, mais antigos primeiro, até 100 por página (siga o URI em proximaPagina); \
cursos://{uuid} traz um curso, inclusive arquivado. Toda alteração é feita por ferramentas: criar_curso, \
atualizar_curso (alteração parcial de titulo e/ou cargaHoraria) e arquivar_curso (tira o curso do catálogo; \
não há exclusão). O prompt criar-curso guia o cadastro passo a passo. As regras valem no servidor, não no prompt: \
título de 1 a 200 caracteres, sem caracteres de controle e único entre os cursos ativos (sem diferenciar maiúsculas \
nem espaços extras); carga horária inteira de 1 a 1000 horas; curso arquivado não pode ser alterado. Uma recusa \
volta como resultado com isError e uma mensagem em português que indica o campo ou a regra a corrigir.";

/// The mcp-cursos MCP server: a handler over a [`Catalog`].
///
/// Cheap to clone and to build (the routers are built once per process and shared), so
/// transports may create one per connection or per request.
#[derive(Clone)]
pub struct CursosServer {
    catalog: Catalog,
    routers: Arc<Routers>,
}

struct Routers {
    tools: ToolRouter<CursosServer>,
    prompts: PromptRouter<CursosServer>,
}

impl std::fmt::Debug for CursosServer {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("CursosServer").field("catalog", &self.catalog).finish_non_exhaustive()
    }
}

impl CursosServer {
    /// A server over `catalog`.
    #[must_use]
    pub fn new(catalog: Catalog) -> Self {
        static ROUTERS: OnceLock<Arc<Routers>> = OnceLock::new();
        let routers =
            ROUTERS.get_or_init(|| Arc::new(Routers { tools: Self::tool_router(), prompts: Self::prompt_router() }));
        Self { catalog, routers: Arc::clone(routers) }
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

#[tool_router]
impl CursosServer {
    /// Cria um curso ativo no catálogo. Use quando o usuário pedir para cadastrar um curso novo.
    /// Recusa (isError) título vazio, com mais de 200 caracteres, com caracteres de controle ou igual ao de outro curso ativo (sem diferenciar maiúsculas nem espaços extras), e carga horária fora de 1 a 1000 horas.
    /// Devolve o curso criado e um link para cursos://<id>.
    #[tool(
        name = "criar_curso",
        title = "Criar curso",
        input_schema = input_schema::<CreateCourseArguments>(),
        output_schema = output_schema::<CourseJson>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = false)
    )]
    async fn create_course(&self, raw_arguments: JsonObject) -> CallToolResult {
        let new_course = match arguments::create_course(&raw_arguments) {
            Ok(new_course) => new_course,
            Err(errors) => return outcomes::refused(&errors.message()),
        };
        outcomes::created(self.catalog.create(new_course).await)
    }

    /// Altera um curso ativo: informe o id e ao menos um dos campos titulo e cargaHoraria; os campos omitidos ficam como estão.
    /// Recusa (isError) curso inexistente ou arquivado, nada a alterar, título repetido de outro curso ativo e valores fora das regras.
    /// Devolve o curso como ficou.
    #[tool(
        name = "atualizar_curso",
        title = "Atualizar curso",
        input_schema = input_schema::<UpdateCourseArguments>(),
        output_schema = output_schema::<CourseJson>(),
        annotations(read_only_hint = false, destructive_hint = true, idempotent_hint = true, open_world_hint = false)
    )]
    async fn update_course(&self, raw_arguments: JsonObject) -> CallToolResult {
        let (id, changes) = match arguments::update_course(&raw_arguments) {
            Ok(parsed) => parsed,
            Err(errors) => return outcomes::refused(&errors.message()),
        };
        outcomes::updated(self.catalog.update(id, changes).await)
    }

    /// Arquiva um curso: ele sai do catálogo (cursos://catalogo), continua legível em cursos://<id> e não pode mais ser alterado.
    /// Não há como desarquivar. Arquivar um curso já arquivado não muda nada e é aceito.
    /// Recusa (isError) id inexistente. Devolve o curso arquivado.
    #[tool(
        name = "arquivar_curso",
        title = "Arquivar curso",
        input_schema = input_schema::<ArchiveCourseArguments>(),
        output_schema = output_schema::<CourseJson>(),
        annotations(read_only_hint = false, destructive_hint = true, idempotent_hint = true, open_world_hint = false)
    )]
    async fn archive_course(&self, raw_arguments: JsonObject) -> CallToolResult {
        let id = match arguments::archive_course(&raw_arguments) {
            Ok(id) => id,
            Err(errors) => return outcomes::refused(&errors.message()),
        };
        outcomes::archived(self.catalog.archive(id).await)
    }
}

#[prompt_router]
#[allow(missing_docs, reason = "rmcp's #[prompt] generates an undocumented pub metadata function")]
impl CursosServer {
    /// Roteiro guiado para cadastrar um curso: ler o catálogo, checar duplicidade, validar os dados, chamar criar_curso e confirmar o resultado.
    #[prompt(name = "criar-curso", title = "Cadastrar um curso", arguments = prompts::create_course_arguments())]
    async fn create_course_prompt(
        &self,
        Parameters(arguments): Parameters<CreateCoursePromptArguments>,
    ) -> Result<GetPromptResult, McpError> {
        let text = prompts::create_course(&arguments)?;
        Ok(GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)])
            .with_description("Cadastro guiado de um curso no catálogo"))
    }
}

#[tool_handler(router = self.routers.tools)]
#[prompt_handler(router = self.routers.prompts)]
impl ServerHandler for CursosServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_prompts().enable_resources().build())
            .with_server_info(
                Implementation::new("mcp-cursos", env!("CARGO_PKG_VERSION"))
                    .with_title("Catálogo de cursos")
                    .with_description(
                        "Catálogo de cursos: recursos para ler, ferramentas para alterar, prompt para guiar.",
                    ),
            )
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let cursor = match request.and_then(|request| request.cursor) {
            None => None,
            Some(token) => Some(PageCursor::parse_token(&token).map_err(|_| {
                McpError::invalid_params("Cursor inválido: use o nextCursor devolvido pela listagem anterior.", None)
            })?),
        };
        let page =
            self.catalog.active_page(cursor, PageSize::default()).await.map_err(outcomes::internal_protocol_error)?;
        let mut resources = Vec::with_capacity(page.courses.len() + 1);
        if cursor.is_none() {
            resources.push(
                Resource::new(uris::CATALOG, "catalogo")
                    .with_title("Catálogo de cursos")
                    .with_description("Cursos ativos, mais antigos primeiro, até 100 por página; siga proximaPagina.")
                    .with_mime_type(JSON),
            );
        }
        resources.extend(
            page.courses
                .iter()
                .map(|course| Resource::new(uris::course(course.id()), course.title().as_str()).with_mime_type(JSON)),
        );
        let mut result = ListResourcesResult::with_all_items(resources);
        result.next_cursor = page.next.map(|next| next.to_token());
        Ok(result)
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        Ok(ListResourceTemplatesResult::with_all_items(vec![
            ResourceTemplate::new(uris::COURSE_TEMPLATE, "curso")
                .with_title("Curso por id")
                .with_description("Um curso pelo seu id (UUID), inclusive arquivado.")
                .with_mime_type(JSON),
        ]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let uri = request.uri;
        let json = match ResourceUri::parse(&uri) {
            None => return Err(outcomes::resource_not_found(&uri)),
            Some(ResourceUri::Course(id)) => {
                let course = self.catalog.get(id).await.map_err(|error| outcomes::course_read_error(error, &uri))?;
                serde_json::to_string(&CourseJson::from_course(&course))
            }
            Some(ResourceUri::Catalog(after)) => {
                let page = self
                    .catalog
                    .active_page(after, PageSize::default())
                    .await
                    .map_err(outcomes::internal_protocol_error)?;
                let total = self.catalog.count_active().await.map_err(outcomes::internal_protocol_error)?;
                serde_json::to_string(&crate::wire::CatalogPageJson::from_page(total, &page))
            }
        }
        .map_err(outcomes::internal_protocol_error)?;
        Ok(ReadResourceResult::new(vec![ResourceContents::text(json, uri).with_mime_type(JSON)]).into())
    }
}
