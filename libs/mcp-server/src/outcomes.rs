//! Error mapping: every domain outcome becomes exactly one MCP outcome.
//!
//! - A refusal the caller can fix (validation, duplicate title, unknown id, archived course,
//!   nothing to update) is a tool result with `isError: true` and a Portuguese sentence.
//! - A storage failure is logged with its cause; the client gets a generic sentence (a tool
//!   error from tools, an internal protocol error from resources). No SQL, path or cause leaks.
//! - An unknown or malformed resource URI is a resource-not-found protocol error with the URI in
//!   `data` (the SDK sends -32002 up to 2025-11-25 and -32602 from 2026-07-28).

use courses_domain::{
    ArchiveCourseError, Course, CourseId, CreateCourseError, Created, GetCourseError, Unwritable, UpdateCourseError,
};
use rmcp::ErrorData as McpError;
use rmcp::model::{CallToolResult, ContentBlock, Resource};
use serde_json::json;

use crate::contract::uris;
use crate::contract::wire::{CourseJson, quoted};

pub(crate) const INTERNAL_TOOL_ERROR: &str =
    "Erro interno ao acessar o catálogo de cursos. Tente novamente em instantes.";

/// A refused tool call: `isError: true` with a Portuguese sentence for the model.
pub(crate) fn refused(message: &str) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}

/// The result of `criar_curso`.
pub(crate) fn created(outcome: Result<Course, CreateCourseError>) -> CallToolResult {
    match outcome {
        Ok(course) => success(&course, "Curso criado"),
        Err(error) => create_refusal(error, false),
    }
}

/// The result of `criar_curso` with a `chaveIdempotencia`.
pub(crate) fn created_idempotently(outcome: Result<Created, CreateCourseError>) -> CallToolResult {
    match outcome {
        Ok(Created { course, replayed: false }) => success(&course, "Curso criado"),
        Ok(Created { course, replayed: true }) => {
            success(&course, "Curso já criado antes com esta chaveIdempotencia (nada foi criado agora)")
        }
        Err(error) => create_refusal(error, true),
    }
}

/// `with_key`: the call carried a `chaveIdempotencia`.
fn create_refusal(error: CreateCourseError, with_key: bool) -> CallToolResult {
    match error {
        CreateCourseError::DuplicateTitle { title } => refused(&duplicate_title(title.as_str())),
        CreateCourseError::IdempotencyKeyReused { key } => refused(&format!(
            "A chaveIdempotencia \"{}\" já foi usada para criar um curso com outros argumentos; nada foi criado. \
             Use uma chave nova para um pedido novo.",
            key.as_str().chars().take(40).collect::<String>()
        )),
        CreateCourseError::Unwritable(reason) => unwritable(reason),
        CreateCourseError::Store(error) => internal_tool_error(&error),
        CreateCourseError::OutcomeUnknown(error) => {
            log_outcome_unknown(&error);
            refused(&creation_outcome_unknown(with_key))
        }
    }
}

/// The result of `atualizar_curso`.
pub(crate) fn updated(outcome: Result<Course, UpdateCourseError>) -> CallToolResult {
    match outcome {
        Ok(course) => success(&course, "Curso atualizado"),
        Err(UpdateCourseError::NothingToUpdate) => {
            refused("Nada para atualizar: informe 'titulo', 'cargaHoraria' ou ambos, além do 'id'.")
        }
        Err(UpdateCourseError::NotFound { id }) => refused(&not_found(&id.to_string())),
        Err(UpdateCourseError::Archived { id }) => refused(&format!(
            "O curso {id} está arquivado e não pode mais ser alterado. Para oferecê-lo de novo, crie um curso novo com criar_curso."
        )),
        Err(UpdateCourseError::DuplicateTitle { title }) => refused(&duplicate_title(title.as_str())),
        Err(UpdateCourseError::StaleVersion { id, expected, current }) => {
            refused(&stale_version(&id.to_string(), expected, current))
        }
        Err(UpdateCourseError::Unwritable(reason)) => unwritable(reason),
        Err(UpdateCourseError::Store(error)) => internal_tool_error(&error),
        Err(UpdateCourseError::OutcomeUnknown { id, source }) => {
            log_outcome_unknown(&source);
            refused(&change_outcome_unknown("a alteração", &id.to_string()))
        }
    }
}

/// The result of `arquivar_curso`.
pub(crate) fn archived(outcome: Result<Course, ArchiveCourseError>) -> CallToolResult {
    match outcome {
        Ok(course) => success(&course, "Curso arquivado"),
        Err(ArchiveCourseError::NotFound { id }) => refused(&not_found(&id.to_string())),
        Err(ArchiveCourseError::StaleVersion { id, expected, current }) => {
            refused(&stale_version(&id.to_string(), expected, current))
        }
        Err(ArchiveCourseError::Unwritable(reason)) => unwritable(reason),
        Err(ArchiveCourseError::Store(error)) => internal_tool_error(&error),
        Err(ArchiveCourseError::OutcomeUnknown { id, source }) => {
            log_outcome_unknown(&source);
            refused(&change_outcome_unknown("o arquivamento", &id.to_string()))
        }
    }
}

/// `arquivar_curso` after the user confirmed archiving course `id` at `shown_version` (`shown`, as
/// the user saw it, when known), when the course changed in between (renamed, updated or archived
/// by someone else): nothing archived, and the model is told what was confirmed and what the course
/// is now, so it can ask again.
pub(crate) fn changed_since_confirmation(
    id: CourseId,
    shown_version: u64,
    shown: Option<&Course>,
    current: Option<&Course>,
) -> CallToolResult {
    let confirmed = match shown {
        Some(shown) => format!("{}, versão {}", quoted(shown.title().as_str()), shown.version()),
        None => format!("a versão {shown_version}"),
    };
    let now = match current {
        Some(current) if current.is_archived() => {
            format!("agora está arquivado (versão {})", current.version())
        }
        Some(current) => format!("agora é {}, versão {}", quoted(current.title().as_str()), current.version()),
        None => "não pôde ser lido de novo".to_owned(),
    };
    refused(&format!(
        "O curso {id} mudou depois que o usuário confirmou o arquivamento: a confirmação era para {confirmed}, \
         e o curso {now}. Nada foi arquivado. Leia cursos://{id} e peça a confirmação de novo se ainda fizer sentido."
    ))
}

/// The result of `ler_curso`.
pub(crate) fn read_course(outcome: Result<Course, GetCourseError>) -> CallToolResult {
    match outcome {
        Ok(course) => {
            let value = serde_json::to_value(CourseJson::from_course(&course)).unwrap_or_else(|_| json!({}));
            let mut result = CallToolResult::success(vec![ContentBlock::text(value.to_string())]);
            result.structured_content = Some(value);
            result
        }
        Err(GetCourseError::NotFound { id }) => refused(&not_found(&id.to_string())),
        Err(GetCourseError::Store(error)) => internal_tool_error(&error),
    }
}

/// The result of a read-only tool whose answer is the JSON document `json`.
pub(crate) fn read_only(json: &str) -> CallToolResult {
    let mut result = CallToolResult::success(vec![ContentBlock::text(json)]);
    result.structured_content = serde_json::from_str(json).ok();
    result
}

/// Reading `cursos://{uuid}` failed.
pub(crate) fn course_read_error(error: GetCourseError, uri: &str) -> McpError {
    match error {
        GetCourseError::NotFound { .. } => resource_not_found(uri),
        GetCourseError::Store(error) => internal_protocol_error(error),
    }
}

/// The URI names nothing this server has.
pub(crate) fn resource_not_found(uri: &str) -> McpError {
    McpError::resource_not_found("Recurso não encontrado.", Some(json!({ "uri": uri })))
}

/// A failure that is not the client's: logged here, generic on the wire.
#[allow(clippy::needless_pass_by_value, reason = "used as a map_err function")]
pub(crate) fn internal_protocol_error(error: impl std::error::Error) -> McpError {
    tracing::error!(error = %error_chain(&error), "internal error while serving a request");
    McpError::internal_error("Erro interno do servidor.", None)
}

/// An internal failure described by text only.
#[allow(clippy::needless_pass_by_value, reason = "used as a map_err function")]
pub(crate) fn internal_protocol_error_text(error: String) -> McpError {
    tracing::error!(%error, "internal error while serving a request");
    McpError::internal_error("Erro interno do servidor.", None)
}

/// The store cannot make writes durable (ADR 0026): the client is told why and that retrying will
/// not help until the server's operator acts; the store already logged the cause (with the path).
fn unwritable(reason: Unwritable) -> CallToolResult {
    tracing::error!(%reason, "a write was refused: the catalog cannot make writes durable");
    let why = match reason {
        Unwritable::FileReplaced => {
            "o arquivo do banco de dados (ou o seu -wal ou -shm) foi apagado ou substituído enquanto o servidor \
             estava em execução"
        }
        Unwritable::ReadOnly => "o banco de dados está somente para leitura",
        Unwritable::DiskFull => "o disco do banco de dados está cheio",
        Unwritable::WriterStopped => "a gravação no banco de dados parou após um erro interno do servidor",
    };
    refused(&format!(
        "O catálogo não pode gravar alterações agora: {why}. Nada foi alterado. Repetir o pedido não resolve \
         até que o operador do servidor corrija o problema; as leituras continuam disponíveis."
    ))
}

/// A write whose outcome the store cannot tell (its `COMMIT` failed, ADR 0020): logged with its
/// cause; the client is told it may or may not be stored, and how to retry safely.
fn log_outcome_unknown(error: &(impl std::error::Error + ?Sized)) {
    tracing::error!(error = %error_chain(error), "a write's outcome is unknown: its commit failed");
}

/// `criar_curso` whose outcome is unknown. A retry cannot create the course twice: with the same
/// `chaveIdempotencia` it returns the course if it was created, and without one the same title is
/// refused as a duplicate if it was.
fn creation_outcome_unknown(with_key: bool) -> String {
    let retry = if with_key {
        "Repita o pedido com a mesma chaveIdempotencia: se o curso já tiver sido criado, ele será devolvido sem criar outro."
    } else {
        "Repita o pedido (de preferência com uma chaveIdempotencia): se o curso já tiver sido criado, o mesmo título será \
         recusado como duplicado, sem criar outro."
    };
    format!(
        "Não foi possível confirmar se o curso foi criado: a gravação no banco de dados falhou ao ser concluída, e ele pode \
         ou não ter sido gravado. {retry}"
    )
}

/// `atualizar_curso` or `arquivar_curso` whose outcome is unknown.
fn change_outcome_unknown(what: &str, id: &str) -> String {
    format!(
        "Não foi possível confirmar se {what} do curso {id} foi gravad{ending}: a gravação no banco de dados falhou ao ser \
         concluída, e {pronoun} pode ou não ter sido feit{ending}. Leia cursos://{id} para ver a versão atual antes de \
         repetir o pedido; com 'versao', uma repetição de algo já feito é recusada sem alterar nada.",
        ending = if what.starts_with("a ") { "a" } else { "o" },
        pronoun = if what.starts_with("a ") { "ela" } else { "ele" },
    )
}

pub(crate) fn internal_tool_error(error: &(impl std::error::Error + ?Sized)) -> CallToolResult {
    tracing::error!(error = %error_chain(error), "internal error while running a tool");
    refused(INTERNAL_TOOL_ERROR)
}

fn success(course: &Course, summary: &str) -> CallToolResult {
    let json = CourseJson::from_course(course);
    let uri = uris::course(course.id());
    let value = serde_json::to_value(&json).unwrap_or_else(|_| json!({}));
    let text = format!(
        "{summary}: {} ({} h){}. Leia-o em {uri}.",
        quoted(&json.titulo),
        json.carga_horaria,
        if json.arquivado { ", arquivado" } else { "" }
    );
    let mut result = CallToolResult::success(vec![
        ContentBlock::text(text),
        ContentBlock::text(value.to_string()),
        ContentBlock::resource_link(Resource::new(uri, json.titulo).with_mime_type("application/json")),
    ]);
    result.structured_content = Some(value);
    result
}

fn duplicate_title(title: &str) -> String {
    format!(
        "Já existe um curso ativo com o título {} (títulos são comparados sem diferenciar maiúsculas, espaços extras, caracteres invisíveis nem grafias Unicode equivalentes). \
         Escolha outro 'titulo' ou altere o curso existente com atualizar_curso.",
        quoted(title)
    )
}

fn stale_version(id: &str, expected: u64, current: u64) -> String {
    format!(
        "O curso {id} está na versão {current}, não na versão {expected} informada em 'versao': ele mudou desde a sua leitura, \
         e nada foi alterado. Leia cursos://{id} de novo e repita a alteração se ainda fizer sentido."
    )
}

fn not_found(id: &str) -> String {
    format!("Curso não encontrado: nenhum curso tem o id {id}. Consulte cursos://catalogo para ver os ids existentes.")
}

fn error_chain(error: &(impl std::error::Error + ?Sized)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// The longest part of an unknown tool's name quoted back.
const QUOTED_NAME_CHARS: usize = 100;

/// A `prompts/get` of `criar-curso` whose arguments are missing or oversized: -32602 with the
/// contract's Portuguese `message`.
pub(crate) fn prompt_refused(message: String) -> McpError {
    McpError::invalid_params(message, None)
}

/// A `tools/call` naming no tool of this server (for this caller's settings). The names early
/// versions had get a pointer to what replaced them; every other name a Portuguese -32602.
pub(crate) fn unknown_tool(name: &str, resource_tools: bool) -> McpError {
    let quoted: String = name.chars().take(QUOTED_NAME_CHARS).collect();
    let (message, resource) = match name {
        "listar_cursos" => (
            "A ferramenta listar_cursos não está disponível neste servidor: para listar os cursos ativos, \
             leia o recurso cursos://catalogo (até 100 por página; siga proximaPagina para as seguintes)."
                .to_owned(),
            uris::CATALOG,
        ),
        "ler_curso" => (
            "A ferramenta ler_curso não está disponível neste servidor: para ler um curso pelo id, leia o \
             recurso cursos://{uuid} (os ids aparecem em cursos://catalogo)."
                .to_owned(),
            uris::COURSE_TEMPLATE,
        ),
        "buscar_curso" => (
            format!(
                "A ferramenta buscar_curso não existe mais. Para ler um curso pelo id, leia o recurso \
                 cursos://{{uuid}} (por exemplo cursos://<id>; os ids aparecem em cursos://catalogo){}.",
                if resource_tools { ", ou chame a ferramenta ler_curso com o id" } else { "" }
            ),
            uris::COURSE_TEMPLATE,
        ),
        _ => {
            return McpError::invalid_params(
                format!(
                    "Ferramenta desconhecida: {quoted:?}. Consulte tools/list para ver as ferramentas deste \
                     servidor; para ler o catálogo, leia o recurso cursos://catalogo."
                ),
                Some(json!({ "tool": quoted })),
            );
        }
    };
    McpError::invalid_params(message, Some(json!({ "tool": quoted, "recurso": resource })))
}

/// The methods this server serves on both eras that rmcp reads into typed parameters. A request
/// naming one whose parameters do not fit (`"arguments": [1]` in `tools/call`) reaches the server
/// as a custom request; it is refused as invalid parameters, not as an unknown method.
const TYPED_METHODS: [&str; 10] = [
    "ping",
    "tools/call",
    "tools/list",
    "resources/read",
    "resources/list",
    "resources/templates/list",
    "prompts/get",
    "prompts/list",
    "completion/complete",
    "subscriptions/listen",
];

/// Served on 2025-era connections only: 2026-07-28 removed them, and rmcp hands them over as
/// custom requests, which must stay unknown methods there (-32601, HTTP 404).
const LEGACY_TYPED_METHODS: [&str; 3] = ["initialize", "resources/subscribe", "resources/unsubscribe"];

/// A request rmcp could not read into a known method's parameters, or a method it does not know
/// (on this request's era, `modern` for 2026-07-28): -32602 in Portuguese for the first (nothing
/// runs), -32601 for the second.
pub(crate) fn unreadable_request(method: &str, modern: bool) -> McpError {
    let known = TYPED_METHODS.contains(&method) || (!modern && LEGACY_TYPED_METHODS.contains(&method));
    if !known {
        return McpError::new(rmcp::model::ErrorCode::METHOD_NOT_FOUND, method.to_owned(), None);
    }
    tracing::warn!(method, "request refused: its parameters do not have the method's shape");
    let hint = if method == "tools/call" {
        "'name' deve ser o nome da ferramenta (texto) e 'arguments', quando presente, um objeto JSON com os campos da \
         ferramenta (por exemplo {\"titulo\": \"Rust\", \"cargaHoraria\": 20})."
    } else {
        "confira os nomes e os tipos dos campos de 'params' na especificação do MCP."
    };
    McpError::invalid_params(format!("Parâmetros inválidos para {method}: {hint}"), Some(json!({ "metodo": method })))
}

#[cfg(test)]
mod unreadable_request_tests {
    use rmcp::model::ErrorCode;

    use super::unreadable_request;

    #[test]
    fn a_served_method_with_unreadable_params_is_invalid_params_in_portuguese() {
        for modern in [false, true] {
            let error = unreadable_request("tools/call", modern);
            assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
            assert!(error.message.starts_with("Parâmetros inválidos para tools/call"), "{}", error.message);
            assert_eq!(unreadable_request("resources/read", modern).code, ErrorCode::INVALID_PARAMS);
        }
        assert_eq!(unreadable_request("resources/subscribe", false).code, ErrorCode::INVALID_PARAMS);
    }

    #[test]
    fn a_method_this_server_does_not_serve_stays_unknown() {
        for method in ["cursos/apagar", "logging/setLevel", "tasks/get"] {
            for modern in [false, true] {
                let error = unreadable_request(method, modern);
                assert_eq!(error.code, ErrorCode::METHOD_NOT_FOUND, "{method}");
                assert_eq!(error.message, method);
            }
        }
        for removed in ["initialize", "resources/subscribe", "resources/unsubscribe"] {
            assert_eq!(unreadable_request(removed, true).code, ErrorCode::METHOD_NOT_FOUND, "{removed} on 2026-07-28");
        }
    }
}

#[cfg(test)]
mod outcome_unknown_tests {
    use courses_domain::{ArchiveCourseError, CourseId, CreateCourseError, StoreError, Unwritable, UpdateCourseError};

    use super::{archived, create_refusal, updated};

    fn text(result: &rmcp::model::CallToolResult) -> String {
        assert_eq!(result.is_error, Some(true), "{result:?}");
        result.content.iter().filter_map(|block| block.as_text().map(|text| text.text.clone())).collect()
    }

    fn cause() -> StoreError {
        StoreError::message("disk I/O error at /var/lib/secret/cursos.db")
    }

    #[test]
    fn a_creation_of_unknown_outcome_says_so_and_how_to_retry_without_the_cause() {
        let with_key = text(&create_refusal(CreateCourseError::OutcomeUnknown(cause()), true));
        assert!(with_key.starts_with("Não foi possível confirmar se o curso foi criado"), "{with_key}");
        assert!(with_key.contains("mesma chaveIdempotencia"), "{with_key}");
        let without_key = text(&create_refusal(CreateCourseError::OutcomeUnknown(cause()), false));
        assert!(without_key.contains("recusado como duplicado"), "{without_key}");
        for message in [with_key, without_key] {
            assert!(!message.contains("secret") && !message.contains("I/O"), "no cause is sent: {message}");
            assert!(!message.contains("Nada foi alterado"), "it does not claim nothing was written: {message}");
        }
    }

    #[test]
    fn an_update_or_archiving_of_unknown_outcome_names_the_course_to_read_again() {
        let id = CourseId::generate();
        let update = text(&updated(Err(UpdateCourseError::OutcomeUnknown { id, source: cause() })));
        assert!(
            update.starts_with(&format!("Não foi possível confirmar se a alteração do curso {id} foi gravada")),
            "{update}"
        );
        let archive = text(&archived(Err(ArchiveCourseError::OutcomeUnknown { id, source: cause() })));
        assert!(
            archive.starts_with(&format!("Não foi possível confirmar se o arquivamento do curso {id} foi gravado")),
            "{archive}"
        );
        for message in [update, archive] {
            assert!(message.contains(&format!("cursos://{id}")) && !message.contains("secret"), "{message}");
        }
    }

    #[test]
    fn a_stopped_writer_is_unwritable_until_the_operator_acts() {
        let message = text(&create_refusal(CreateCourseError::Unwritable(Unwritable::WriterStopped), false));
        assert!(message.contains("parou após um erro interno") && message.contains("Nada foi alterado"), "{message}");
    }
}

#[cfg(test)]
mod prompt_refused_tests {
    use rmcp::model::ErrorCode;
    use serde_json::Value;

    use crate::contract::prompt::create_course;
    use crate::contract::wire::CreateCoursePromptArguments;

    #[test]
    fn a_missing_argument_is_named_in_portuguese() {
        let refused = |arguments| super::prompt_refused(create_course(&arguments).expect_err("refused"));
        let error = refused(CreateCoursePromptArguments { titulo: Some(Value::from("Rust")), carga_horaria: None });
        assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
        assert!(error.message.contains("'cargaHoraria'") && !error.message.contains("'titulo',"), "{}", error.message);
        let error = refused(CreateCoursePromptArguments::default());
        assert!(error.message.contains("'titulo', 'cargaHoraria'"), "{}", error.message);
    }
}
