//! What the server declares besides its handlers: the instructions and server info a host is
//! given at connection time, the icon, the static resources and templates, and the prompt's
//! published arguments. [`crate::server`] registers them.

use rmcp::model::{
    Annotations, Icon, Implementation, PromptArgument, Resource, ResourceTemplate, ServerCapabilities, ServerConfig,
};

use courses_domain::Course;

use crate::app;
use crate::contract::prompt as prompts;
use crate::contract::uris;
use crate::contract::wire::CourseJson;

pub(crate) const JSON: &str = "application/json";

/// How long (ms) a 2026-07-28 client may reuse a tools, prompts or templates listing: they change
/// only when the server restarts with other settings or the operator's policy changes (ADR 0036),
/// and a listen stream that asked for list changes is told of the latter at once.
pub(crate) const STATIC_LIST_TTL_MS: u64 = 5 * 60 * 1000;

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

pub(crate) fn icons() -> Vec<Icon> {
    vec![Icon::new(ICON_SVG).with_mime_type("image/svg+xml").with_sizes(vec!["any".to_owned()])]
}

/// What `initialize` and `server/discover` answer: the capabilities and the server's identity.
pub(crate) fn server_config() -> ServerConfig {
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
                .with_description("Catálogo de cursos: recursos para ler, ferramentas para alterar, prompt para guiar.")
                .with_icons(icons()),
        )
        .with_instructions(INSTRUCTIONS)
    });
    INFO.clone()
}

/// The `_meta` key in which a 2026-07-28 result names the server that answered it.
pub(crate) const SERVER_INFO_META: &str = "io.modelcontextprotocol/serverInfo";

/// A result whose `_meta` can name the server.
pub(crate) trait Answer {
    /// Puts `server_info` in the result's `_meta`.
    fn name_server(&mut self, server_info: &serde_json::Value);
}

fn name_server_in(meta: &mut Option<rmcp::model::MetaObject>, server_info: &serde_json::Value) {
    meta.get_or_insert_default().0.insert(SERVER_INFO_META.to_owned(), server_info.clone());
}

macro_rules! answer_with_meta {
    ($($result:ty),+ $(,)?) => {
        $(impl Answer for $result {
            fn name_server(&mut self, server_info: &serde_json::Value) {
                name_server_in(&mut self.meta, server_info);
            }
        })+
    };
}

answer_with_meta!(
    rmcp::model::ListToolsResult,
    rmcp::model::ListPromptsResult,
    rmcp::model::ListResourcesResult,
    rmcp::model::ListResourceTemplatesResult,
    rmcp::model::ReadResourceResult,
    rmcp::model::CompleteResult,
);

/// A response of several kinds (complete, input required, a task): its result, whichever it is.
/// A kind a later rmcp adds is left as it is.
macro_rules! answer_of_each_kind {
    ($response:ty { $($kind:ident),+ }) => {
        impl Answer for $response {
            fn name_server(&mut self, server_info: &serde_json::Value) {
                match self {
                    $(Self::$kind(result) => name_server_in(&mut result.meta, server_info),)+
                    #[allow(unreachable_patterns, reason = "the enum is non-exhaustive")]
                    _ => {}
                }
            }
        }
    };
}

answer_of_each_kind!(rmcp::model::CallToolResponse { Complete, InputRequired, Task });
answer_of_each_kind!(rmcp::model::ReadResourceResponse { Complete, InputRequired });
answer_of_each_kind!(rmcp::model::GetPromptResponse { Complete, InputRequired });

/// `result`, naming the server in its `_meta` when it answers a 2026-07-28 request (a SHOULD of
/// that revision; earlier ones had the name in `initialize` only). Only the name, the version and
/// the title: `server/discover` has the rest, and every result pays for these bytes.
pub(crate) fn answered<R: Answer>(mut result: R, modern: bool) -> R {
    static SERVER_INFO: std::sync::LazyLock<serde_json::Value> = std::sync::LazyLock::new(|| {
        let full = server_config().server_info;
        let mut named = Implementation::new(full.name, full.version);
        named.title = full.title;
        serde_json::to_value(named).unwrap_or_default()
    });
    if modern {
        result.name_server(&SERVER_INFO);
    }
    result
}

/// The `_meta` that carries the prompt's [content version](prompts::content_version).
pub(crate) fn content_version_meta() -> rmcp::model::MetaObject {
    let mut meta = rmcp::model::MetaObject::new();
    meta.0.insert(prompts::CONTENT_VERSION_KEY.to_owned(), serde_json::Value::from(prompts::content_version()));
    meta
}

/// The arguments `prompts/list` shows for `criar-curso`.
pub(crate) fn create_course_arguments() -> Option<Vec<PromptArgument>> {
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

/// The catalog's entry in `resources/list` (the one static resource).
pub(crate) fn catalog_resource() -> Resource {
    Resource::new(uris::CATALOG, "catalogo")
        .with_title("Catálogo de cursos")
        .with_description("Cursos ativos, mais antigos primeiro, até 100 por página; siga proximaPagina.")
        .with_mime_type(JSON)
        .with_icons(icons())
}

/// The static resources a client is offered: the catalog, and the app to a client that renders
/// apps (ADR 0039).
pub(crate) fn static_resources(renders_apps: bool) -> Vec<Resource> {
    let mut resources = vec![catalog_resource()];
    if renders_apps {
        resources.push(app::app_resource());
    }
    resources
}

/// What `resources/templates/list` answers.
pub(crate) fn resource_templates() -> Vec<ResourceTemplate> {
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

pub(crate) fn course_resource(course: &Course) -> Resource {
    let json = CourseJson::from_course(course);
    let mut annotations = Annotations::default();
    annotations.last_modified = Some(json.atualizado_em.clone());
    Resource::new(uris::course(course.id()), json.titulo.clone())
        .with_title(json.titulo)
        .with_mime_type(JSON)
        .with_annotations(annotations)
}
