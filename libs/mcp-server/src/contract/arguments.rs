//! Tool arguments, read field by field from the raw JSON object into domain newtypes.
//!
//! Every refusal is a Portuguese sentence that names the field and the rule, so a model can
//! correct its call. All problems of one call are reported together.

use crate::contract::JsonObject;
use courses_domain::{
    CourseChanges, CourseId, CourseTitle, CourseTitleError, IdempotencyKey, NewCourse, PageCursor, WorkloadHours,
    code_point,
};
use serde_json::Value;

use crate::contract::uris::ResourceUri;

const TITLE: &str = "titulo";
const HOURS: &str = "cargaHoraria";
const ID: &str = "id";
const PAGE: &str = "pagina";
const VERSION: &str = "versao";
const IDEMPOTENCY_KEY: &str = "chaveIdempotencia";
const TEXT: &str = "texto";
const QUESTION_STATE: &str = "estadoPergunta";
const CONFIRM: &str = "confirmar";

/// The most characters of a search the app may send: a title's limit (nothing longer can match).
const MAX_SEARCH_CHARS: usize = CourseTitle::MAX_CHARS;

/// The Portuguese sentences explaining why a call's arguments were refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ArgumentErrors(Vec<String>);

impl ArgumentErrors {
    /// All the sentences, in one text.
    #[must_use]
    pub(crate) fn message(&self) -> String {
        self.0.join(" ")
    }
}

/// Reads the arguments of `criar_curso`: the course, and an optional idempotency key.
///
/// # Errors
/// [`ArgumentErrors`] naming every field that is missing, of the wrong type or breaks a rule.
pub(crate) fn create_course(arguments: &JsonObject) -> Result<(NewCourse, Option<IdempotencyKey>), ArgumentErrors> {
    let mut errors = Vec::new();
    reject_unknown(arguments, &[TITLE, HOURS, IDEMPOTENCY_KEY], &mut errors);
    let title = required(arguments, TITLE, &mut errors).and_then(|value| title(value, &mut errors));
    let workload_hours = required(arguments, HOURS, &mut errors).and_then(|value| hours(value, &mut errors));
    let key = optional(arguments, IDEMPOTENCY_KEY).and_then(|value| idempotency_key(value, &mut errors));
    match (title, workload_hours) {
        (Some(title), Some(workload_hours)) if errors.is_empty() => Ok((NewCourse { title, workload_hours }, key)),
        _ => Err(ArgumentErrors(errors)),
    }
}

fn idempotency_key(value: &Value, errors: &mut Vec<String>) -> Option<IdempotencyKey> {
    let parsed = value.as_str().and_then(|text| IdempotencyKey::parse(text).ok());
    if parsed.is_none() {
        errors.push(format!(
            "Campo 'chaveIdempotencia' deve ser um texto de 1 a {} caracteres, sem caracteres de controle.",
            IdempotencyKey::MAX_CHARS
        ));
    }
    parsed
}

/// What `atualizar_curso` asks for.
#[derive(Debug)]
pub(crate) struct UpdateRequest {
    pub(crate) id: CourseId,
    pub(crate) changes: CourseChanges,
    pub(crate) expected_version: Option<u64>,
}

/// Reads the arguments of `atualizar_curso`. Absent and `null` optional fields mean "keep".
///
/// # Errors
/// [`ArgumentErrors`] naming every field that is missing, of the wrong type or breaks a rule.
pub(crate) fn update_course(arguments: &JsonObject) -> Result<UpdateRequest, ArgumentErrors> {
    let mut errors = Vec::new();
    reject_unknown(arguments, &[ID, TITLE, HOURS, VERSION], &mut errors);
    let id = required(arguments, ID, &mut errors).and_then(|value| course_id(value, &mut errors));
    let title = optional(arguments, TITLE).and_then(|value| title(value, &mut errors));
    let workload_hours = optional(arguments, HOURS).and_then(|value| hours(value, &mut errors));
    let expected_version = optional(arguments, VERSION).and_then(|value| version(value, &mut errors));
    match id {
        Some(id) if errors.is_empty() => {
            Ok(UpdateRequest { id, changes: CourseChanges { title, workload_hours }, expected_version })
        }
        _ => Err(ArgumentErrors(errors)),
    }
}

/// Reads the arguments of `arquivar_curso`: the id and an optional expected `versao`.
///
/// # Errors
/// [`ArgumentErrors`] when `id` is missing or not a course id, `versao` is not a version, or an
/// unknown field is present.
pub(crate) fn archive_course(arguments: &JsonObject) -> Result<(CourseId, Option<u64>), ArgumentErrors> {
    let mut errors = Vec::new();
    reject_unknown(arguments, &[ID, VERSION], &mut errors);
    let id = required(arguments, ID, &mut errors).and_then(|value| course_id(value, &mut errors));
    let expected_version = optional(arguments, VERSION).and_then(|value| version(value, &mut errors));
    match id {
        Some(id) if errors.is_empty() => Ok((id, expected_version)),
        _ => Err(ArgumentErrors(errors)),
    }
}

/// Reads the arguments of `ler_curso`.
///
/// # Errors
/// [`ArgumentErrors`] when `id` is missing or not a course id, or an unknown field is present.
pub(crate) fn read_course(arguments: &JsonObject) -> Result<CourseId, ArgumentErrors> {
    only_course_id(arguments)
}

fn only_course_id(arguments: &JsonObject) -> Result<CourseId, ArgumentErrors> {
    let mut errors = Vec::new();
    reject_unknown(arguments, &[ID], &mut errors);
    let id = required(arguments, ID, &mut errors).and_then(|value| course_id(value, &mut errors));
    match id {
        Some(id) if errors.is_empty() => Ok(id),
        _ => Err(ArgumentErrors(errors)),
    }
}

/// Reads the arguments of `listar_cursos`: an optional `pagina`, either the whole `proximaPagina`
/// URI or its token.
///
/// # Errors
/// [`ArgumentErrors`] when `pagina` is not a page of the catalog, or an unknown field is present.
pub(crate) fn list_courses(arguments: &JsonObject) -> Result<Option<PageCursor>, ArgumentErrors> {
    let mut errors = Vec::new();
    reject_unknown(arguments, &[PAGE], &mut errors);
    let cursor = optional(arguments, PAGE).and_then(|value| {
        let cursor = value.as_str().and_then(|text| match ResourceUri::parse(text) {
            Some(ResourceUri::Catalog(cursor)) => Some(cursor),
            _ => PageCursor::parse_token(text).ok().map(Some),
        });
        if cursor.is_none() {
            errors.push(
                "Campo 'pagina' deve ser o valor de 'proximaPagina' devolvido pela listagem anterior.".to_owned(),
            );
        }
        cursor.flatten()
    });
    if errors.is_empty() { Ok(cursor) } else { Err(ArgumentErrors(errors)) }
}

/// Reads the arguments of `interface_buscar_cursos`: what the user typed (may be empty).
///
/// # Errors
/// [`ArgumentErrors`] when `texto` is not a text or is longer than a title can be, or an unknown
/// field is present.
pub(crate) fn search_courses(arguments: &JsonObject) -> Result<String, ArgumentErrors> {
    let mut errors = Vec::new();
    reject_unknown(arguments, &[TEXT], &mut errors);
    let text = match optional(arguments, TEXT) {
        None => String::new(),
        Some(Value::String(text)) if text.chars().count() <= MAX_SEARCH_CHARS => text.clone(),
        Some(Value::String(_)) => {
            errors.push(format!("Campo 'texto' tem mais de {MAX_SEARCH_CHARS} caracteres; nenhum título é tão longo."));
            String::new()
        }
        Some(_) => {
            errors.push("Campo 'texto' deve ser um texto (string): parte do título ou o id.".to_owned());
            String::new()
        }
    };
    if errors.is_empty() { Ok(text) } else { Err(ArgumentErrors(errors)) }
}

/// What `interface_arquivar_curso` was asked: the question (no `estadoPergunta`), or the answer.
#[derive(Debug)]
pub(crate) struct InterfaceArchiveRequest {
    pub(crate) id: CourseId,
    pub(crate) expected_version: Option<u64>,
    /// The sealed question and the user's answer, when this call answers.
    pub(crate) answer: Option<(String, bool)>,
}

/// Reads the arguments of `interface_arquivar_curso`.
///
/// # Errors
/// [`ArgumentErrors`] naming every field that is missing or of the wrong type; `confirmar` without
/// `estadoPergunta` (an answer to no question) is refused too.
pub(crate) fn interface_archive(arguments: &JsonObject) -> Result<InterfaceArchiveRequest, ArgumentErrors> {
    let mut errors = Vec::new();
    reject_unknown(arguments, &[ID, VERSION, QUESTION_STATE, CONFIRM], &mut errors);
    let id = required(arguments, ID, &mut errors).and_then(|value| course_id(value, &mut errors));
    let expected_version = optional(arguments, VERSION).and_then(|value| version(value, &mut errors));
    let state = optional(arguments, QUESTION_STATE).and_then(|value| {
        let text = value.as_str().map(str::to_owned);
        if text.is_none() {
            errors.push("Campo 'estadoPergunta' deve ser o texto devolvido com a pergunta.".to_owned());
        }
        text
    });
    let confirmed = optional(arguments, CONFIRM).and_then(|value| {
        let answer = value.as_bool();
        if answer.is_none() {
            errors.push("Campo 'confirmar' deve ser true ou false: a resposta do usuário.".to_owned());
        }
        answer
    });
    let answer = match (state, confirmed) {
        (Some(state), Some(confirmed)) => Some((state, confirmed)),
        (None, None) => None,
        _ => {
            errors.push(
                "Campos 'estadoPergunta' e 'confirmar' vão juntos: a pergunta feita e a resposta do usuário."
                    .to_owned(),
            );
            None
        }
    };
    match id {
        Some(id) if errors.is_empty() => Ok(InterfaceArchiveRequest { id, expected_version, answer }),
        _ => Err(ArgumentErrors(errors)),
    }
}

fn reject_unknown(arguments: &JsonObject, known: &[&str], errors: &mut Vec<String>) {
    let mut unknown: Vec<&str> = arguments.keys().map(String::as_str).filter(|key| !known.contains(key)).collect();
    if unknown.is_empty() {
        return;
    }
    unknown.sort_unstable();
    let accepted = known.iter().map(|name| format!("'{name}'")).collect::<Vec<_>>().join(", ");
    let unknown = unknown.iter().map(|name| quote(name)).collect::<Vec<_>>().join(", ");
    errors.push(format!("Argumento desconhecido: {unknown}. Os argumentos aceitos são {accepted}."));
}

fn required<'a>(arguments: &'a JsonObject, field: &str, errors: &mut Vec<String>) -> Option<&'a Value> {
    let value = optional(arguments, field);
    if value.is_none() {
        errors.push(match field {
            TITLE => {
                "Campo 'titulo' é obrigatório: informe o título do curso (texto de 1 a 200 caracteres).".to_owned()
            }
            HOURS => {
                "Campo 'cargaHoraria' é obrigatório: informe a carga horária em horas inteiras (1 a 1000).".to_owned()
            }
            _ => format!("Campo '{field}' é obrigatório: informe o id (UUID) do curso."),
        });
    }
    value
}

fn optional<'a>(arguments: &'a JsonObject, field: &str) -> Option<&'a Value> {
    arguments.get(field).filter(|value| !value.is_null())
}

pub(crate) fn title(value: &Value, errors: &mut Vec<String>) -> Option<CourseTitle> {
    let Some(text) = value.as_str() else {
        errors.push("Campo 'titulo' deve ser um texto (string).".to_owned());
        return None;
    };
    CourseTitle::parse(text)
        .map_err(|error| {
            errors.push(match error {
                CourseTitleError::Empty => "Campo 'titulo' não pode ficar vazio.".to_owned(),
                CourseTitleError::TooLong { chars } => format!(
                    "Campo 'titulo' tem {chars} caracteres; o máximo é {} (sem contar espaços nas pontas).",
                    CourseTitle::MAX_CHARS
                ),
                CourseTitleError::ControlCharacter { character } => format!(
                    "Campo 'titulo' não pode conter caracteres de controle (quebras de linha, tabulações e afins): \
                     o título contém {}.",
                    code_point(character)
                ),
                CourseTitleError::InvisibleCharacter { character } => format!(
                    "Campo 'titulo' não pode conter caracteres invisíveis ou de controle de direção (espaços de \
                     largura zero, BOM, marcas e sobreposições de direção e afins): o título contém {}. \
                     Escreva o título só com caracteres visíveis.",
                    code_point(character)
                ),
            });
        })
        .ok()
}

pub(crate) fn hours(value: &Value, errors: &mut Vec<String>) -> Option<WorkloadHours> {
    // JSON Schema's "integer" includes numbers such as 12.0; 12.5 and "12" are not integers.
    let whole = value.as_i64().or_else(|| value.as_f64().filter(|number| number.fract() == 0.0).map(saturating_i64));
    let Some(whole) = whole else {
        errors.push(
            "Campo 'cargaHoraria' deve ser um número inteiro de horas, de 1 a 1000 (por exemplo 12, sem aspas)."
                .to_owned(),
        );
        return None;
    };
    WorkloadHours::parse(whole)
        .map_err(|_| {
            errors.push(format!(
                "Campo 'cargaHoraria' deve estar entre {} e {} horas; recebido: {}.",
                WorkloadHours::MIN,
                WorkloadHours::MAX,
                value
            ));
        })
        .ok()
}

#[allow(clippy::cast_possible_truncation, reason = "saturating on purpose: any such number is out of range anyway")]
fn saturating_i64(number: f64) -> i64 {
    number as i64
}

fn version(value: &Value, errors: &mut Vec<String>) -> Option<u64> {
    let parsed = value.as_u64().filter(|version| *version >= 1);
    if parsed.is_none() {
        errors
            .push("Campo 'versao' deve ser a versão do curso que você leu (número inteiro a partir de 1).".to_owned());
    }
    parsed
}

pub(crate) fn course_id(value: &Value, errors: &mut Vec<String>) -> Option<CourseId> {
    let parsed = value.as_str().and_then(|text| CourseId::parse(text).ok());
    if parsed.is_none() {
        errors.push(
            "Campo 'id' deve ser o id (UUID) de um curso, no formato xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx, \
             como aparece em cursos://catalogo."
                .to_owned(),
        );
    }
    parsed
}

/// A client's name for something, as a message shows it: [`shorten`]ed, between single quotes,
/// with newlines, quotes, controls and invisible characters escaped (`'a\nb'`), so that it can
/// neither break the message's lines nor pass for its text.
pub(crate) fn quote(text: &str) -> String {
    format!("'{}'", shorten(text).escape_debug())
}

/// Echoing a client's text back is fine, echoing a megabyte of it is not.
pub(crate) fn shorten(text: &str) -> String {
    const MAX: usize = 40;
    if text.chars().count() <= MAX {
        text.to_owned()
    } else {
        format!("{}…", text.chars().take(MAX).collect::<String>())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn object(value: Value) -> JsonObject {
        match value {
            Value::Object(object) => object,
            other => panic!("not an object: {other}"),
        }
    }

    fn create_error(value: Value) -> String {
        create_course(&object(value)).expect_err("refused").message()
    }

    #[test]
    fn valid_create_arguments_become_domain_values() {
        let (new_course, key) = create_course(&object(json!({"titulo": " Rust ", "cargaHoraria": 40}))).expect("valid");
        assert_eq!(key, None);
        assert_eq!((new_course.title.as_str(), new_course.workload_hours.get()), ("Rust", 40));
    }

    #[test]
    fn a_whole_number_written_with_a_decimal_point_is_an_integer() {
        let (new_course, _) = create_course(&object(json!({"titulo": "Rust", "cargaHoraria": 12.0}))).expect("valid");
        assert_eq!(new_course.workload_hours.get(), 12);
    }

    #[test]
    fn each_refusal_names_its_field() {
        assert!(create_error(json!({"cargaHoraria": 1})).contains("'titulo' é obrigatório"));
        assert!(create_error(json!({"titulo": "Rust"})).contains("'cargaHoraria' é obrigatório"));
        assert!(create_error(json!({"titulo": 12, "cargaHoraria": 1})).contains("'titulo' deve ser um texto"));
        assert!(create_error(json!({"titulo": "  ", "cargaHoraria": 1})).contains("'titulo' não pode ficar vazio"));
        assert!(create_error(json!({"titulo": "a".repeat(201), "cargaHoraria": 1})).contains("tem 201 caracteres"));
        assert!(create_error(json!({"titulo": "a\nb", "cargaHoraria": 1})).contains("caracteres de controle"));
        let invisible = create_error(json!({"titulo": "Curso \u{202E}exe.pdf", "cargaHoraria": 1}));
        assert!(invisible.contains("caracteres invisíveis ou de controle de direção") && invisible.contains("U+202E"));
        assert!(create_error(json!({"titulo": "\u{200B}", "cargaHoraria": 1})).contains("U+200B"));
        assert!(create_error(json!({"titulo": "a\u{2028}b", "cargaHoraria": 1})).contains("U+2028"));
        for hours in [json!("12"), json!(12.5), json!(true), json!([12]), json!({"horas": 12})] {
            assert!(
                create_error(json!({"titulo": "Rust", "cargaHoraria": hours})).contains("número inteiro"),
                "{hours}"
            );
        }
        for hours in [json!(0), json!(1001), json!(-5), json!(1e300), json!(u64::MAX)] {
            assert!(
                create_error(json!({"titulo": "Rust", "cargaHoraria": hours})).contains("entre 1 e 1000"),
                "{hours}"
            );
        }
    }

    #[test]
    fn every_problem_of_one_call_is_reported_together() {
        let message = create_error(json!({"titulo": "", "cargaHoraria": 0, "extra": 1}));
        assert!(
            message.contains("'titulo'") && message.contains("'cargaHoraria'") && message.contains("'extra'"),
            "{message}"
        );
    }

    #[test]
    fn an_unknown_argument_name_is_quoted_with_its_newlines_and_quotes_escaped() {
        let message = create_error(json!({"titulo": "Rust", "cargaHoraria": 10, "a\nlinha 2: 'b'\u{202e}": 1}));
        assert!(!message.contains('\n') && !message.contains('\u{202e}'), "{message}");
        assert!(message.contains(r"'a\nlinha 2: \'b\'\u{202e}'"), "{message}");
    }

    #[test]
    fn an_unknown_argument_is_refused_and_the_accepted_ones_listed() {
        let message = create_error(json!({"titulo": "Rust", "cargaHoraria": 10, "descricao": "x"}));
        assert_eq!(
            message,
            "Argumento desconhecido: 'descricao'. Os argumentos aceitos são 'titulo', 'cargaHoraria', 'chaveIdempotencia'."
        );
    }

    #[test]
    fn an_update_keeps_absent_and_null_fields() {
        let id = CourseId::generate();
        let request =
            update_course(&object(json!({"id": id.to_string(), "titulo": null, "cargaHoraria": 8}))).expect("valid");
        assert_eq!((request.id, request.expected_version), (id, None));
        assert_eq!((request.changes.title, request.changes.workload_hours.map(WorkloadHours::get)), (None, Some(8)));
    }

    #[test]
    fn an_expected_version_must_be_a_whole_number_from_one() {
        let id = CourseId::generate().to_string();
        let request = update_course(&object(json!({"id": id, "cargaHoraria": 8, "versao": 3}))).expect("valid");
        assert_eq!(request.expected_version, Some(3));
        assert_eq!(archive_course(&object(json!({"id": id, "versao": 2}))).expect("valid").1, Some(2));
        for version in [json!(0), json!(-1), json!(1.5), json!("2")] {
            let message = archive_course(&object(json!({"id": id, "versao": version}))).expect_err("refused").message();
            assert!(message.contains("'versao'"), "{version}: {message}");
        }
    }

    #[test]
    fn an_update_or_archive_without_a_valid_id_is_refused() {
        for arguments in [json!({}), json!({"id": "123"}), json!({"id": 5})] {
            let message = archive_course(&object(arguments.clone())).expect_err("refused").message();
            assert!(message.contains("'id'"), "{arguments}: {message}");
            let message = update_course(&object(arguments.clone())).expect_err("refused").message();
            assert!(message.contains("'id'"), "{arguments}: {message}");
        }
    }
}
