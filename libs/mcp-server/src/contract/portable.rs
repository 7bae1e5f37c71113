//! The catalog's portable form (ADR 0040): the JSON Lines that `export` writes and `import` reads,
//! and the CSV rows `import` also reads, in the contract's own shapes and names.
//!
//! A file is a header line ([`HeaderJson`], optional on import), then one course per line: the
//! very [`CourseJson`] every tool and resource shows, plus, when the history was exported, its
//! entries oldest first under `historico` ([`HistoryEntryJson`], the shape of
//! `cursos://{uuid}/historico`). `import` also takes lines with only `titulo` and `cargaHoraria`
//! (and an optional `id`), as the CSV rows (`titulo,cargaHoraria[,id]`, with a header row).
//!
//! Every field is read by the same functions that read tool arguments (`arguments.rs`), so a bad
//! row is refused with the sentence a tool call would get, naming its field; the import's own
//! refusals ([`ImportRefusal`]: duplicates in the file, a title or id taken) are worded here too.

use courses_domain::{
    CLOCK_SKEW, CatalogName, Course, CourseId, HistoryEntry, ImportRefusal, ImportedCourseError, NewCourse,
    OffsetDateTime,
};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::contract::arguments;
use crate::contract::wire::{CourseJson, HistoryEntryJson, rfc3339};

/// The `formato` of a header line: what this file is.
pub const FORMAT: &str = "mcp-cursos/catalogo";
/// The version of the line format this program writes and reads.
pub const FORMAT_VERSION: u64 = 1;

const TITLE: &str = "titulo";
const HOURS: &str = "cargaHoraria";
const ID: &str = "id";
const ARCHIVED: &str = "arquivado";
const VERSION: &str = "versao";
const CREATED: &str = "criadoEm";
const UPDATED: &str = "atualizadoEm";
const HISTORY: &str = "historico";

/// The first line of an export.
#[derive(Debug, Clone, Serialize)]
pub struct HeaderJson {
    /// Always [`FORMAT`].
    pub formato: &'static str,
    /// Always [`FORMAT_VERSION`].
    pub versao: u64,
    /// The catalog exported.
    pub catalogo: String,
    /// When the export's snapshot was taken (RFC 3339, UTC).
    #[serde(rename = "exportadoEm")]
    pub exportado_em: String,
    /// How many course lines follow.
    pub total: u64,
    /// Whether each course line carries its history.
    pub historico: bool,
}

impl HeaderJson {
    /// The header of an export of `catalog` with `total` courses, taken `at`.
    #[must_use]
    pub fn new(catalog: &CatalogName, total: u64, with_history: bool, at: OffsetDateTime) -> Self {
        Self {
            formato: FORMAT,
            versao: FORMAT_VERSION,
            catalogo: catalog.as_str().to_owned(),
            exportado_em: rfc3339(at),
            total,
            historico: with_history,
        }
    }
}

#[derive(Serialize)]
struct CourseLineJson {
    #[serde(flatten)]
    course: CourseJson,
    #[serde(skip_serializing_if = "Option::is_none")]
    historico: Option<Vec<HistoryEntryJson>>,
}

/// One course line of an export (no newline): the course's wire form, with its history (oldest
/// first) when `history` is given.
///
/// # Errors
/// A serialization error (none is expected of these shapes).
pub fn course_line(course: &Course, history: Option<&[HistoryEntry]>) -> serde_json::Result<String> {
    serde_json::to_string(&CourseLineJson {
        course: CourseJson::from_course(course),
        historico: history.map(|entries| entries.iter().map(HistoryEntryJson::from_entry).collect()),
    })
}

/// One row of an import, past every rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImportRow {
    /// A course to create: from CSV, or a line with only `titulo`, `cargaHoraria` (and `id`).
    /// Without an id it gets [`CourseId::for_import`]'s.
    New {
        /// The id given, if any.
        id: Option<CourseId>,
        /// Its title and workload.
        course: NewCourse,
    },
    /// A course as another database kept it (an export's line): id, version and instants kept.
    Kept(Course),
}

impl ImportRow {
    /// The course to store in `catalog`, created `now` when it is new.
    #[must_use]
    pub fn into_course(self, catalog: &CatalogName, now: OffsetDateTime) -> Course {
        match self {
            Self::New { id, course } => {
                let id = id.unwrap_or_else(|| CourseId::for_import(catalog, &course.title));
                Course::create_with_id(id, course, now)
            }
            Self::Kept(course) => course,
        }
    }
}

/// What is wrong with one field of a row: the field's wire name and the Portuguese sentence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// The field (`titulo`, `cargaHoraria`, `id`, ...), or `linha` for the row as a whole.
    pub field: &'static str,
    /// Why, in Portuguese, as a tool call would be told.
    pub message: String,
}

impl FieldError {
    fn new(field: &'static str, message: impl Into<String>) -> Self {
        Self { field, message: message.into() }
    }

    /// The whole row: not a JSON object, a wrong header, a CSV record of the wrong length.
    #[must_use]
    pub fn row(message: impl Into<String>) -> Self {
        Self::new("linha", message)
    }
}

/// Reads one JSON line: `Ok(None)` for a header line (checked), `Ok(Some(row))` for a course.
///
/// # Errors
/// Every problem of the line, each naming its field.
pub fn parse_json_line(line: &str, now: OffsetDateTime) -> Result<Option<ImportRow>, Vec<FieldError>> {
    let value: Value = serde_json::from_str(line)
        .map_err(|error| vec![FieldError::row(format!("não é um JSON válido ({error}).",))])?;
    let Value::Object(fields) = value else {
        return Err(vec![FieldError::row("deve ser um objeto JSON (um curso por linha).")]);
    };
    if let Some(format) = fields.get("formato") {
        return check_header(format, fields.get(VERSION)).map(|()| None);
    }
    parse_fields(&fields, now).map(Some)
}

fn check_header(format: &Value, version: Option<&Value>) -> Result<(), Vec<FieldError>> {
    if format.as_str() != Some(FORMAT) {
        return Err(vec![FieldError::new("formato", format!("Campo 'formato' deve ser \"{FORMAT}\"."))]);
    }
    if version.and_then(Value::as_u64) != Some(FORMAT_VERSION) {
        return Err(vec![FieldError::new(
            VERSION,
            format!("Este programa lê a versão {FORMAT_VERSION} do formato; o arquivo declara outra."),
        )]);
    }
    Ok(())
}

/// Reads one CSV record, its fields by the header's names (`titulo`, `cargaHoraria`, `id`).
///
/// # Errors
/// Every problem of the record, each naming its field.
pub fn parse_csv_record(
    title: Option<&str>,
    hours: Option<&str>,
    id: Option<&str>,
) -> Result<ImportRow, Vec<FieldError>> {
    let mut fields = Map::new();
    if let Some(title) = title {
        fields.insert(TITLE.to_owned(), Value::String(title.to_owned()));
    }
    if let Some(hours) = hours {
        // A number when it reads as one, so that the workload's own rule judges it; anything else
        // is refused as a tool call's `"12"` would be.
        let trimmed = hours.trim();
        let value = trimmed.parse::<i64>().map_or_else(|_| Value::String(hours.to_owned()), Value::from);
        fields.insert(HOURS.to_owned(), value);
    }
    if let Some(id) = id.filter(|id| !id.trim().is_empty()) {
        fields.insert(ID.to_owned(), Value::String(id.to_owned()));
    }
    // A CSV row is a new course (no instants of its own): the clock is never compared.
    parse_fields(&fields, OffsetDateTime::now_utc())
}

/// The columns a CSV header may name, in any order: `titulo` and `cargaHoraria` required, `id`
/// optional. Returns each one's index.
///
/// # Errors
/// The header's problem.
pub fn csv_columns(header: &[&str]) -> Result<(usize, usize, Option<usize>), FieldError> {
    let position = |name: &str| header.iter().position(|column| column.trim() == name);
    let unknown: Vec<&str> =
        header.iter().map(|column| column.trim()).filter(|column| ![TITLE, HOURS, ID].contains(column)).collect();
    match (position(TITLE), position(HOURS)) {
        (Some(title), Some(hours)) if unknown.is_empty() => Ok((title, hours, position(ID))),
        _ => Err(FieldError::row(format!(
            "o cabeçalho deve nomear as colunas 'titulo' e 'cargaHoraria' (e, se quiser, 'id'); recebido: {}.",
            arguments::shorten(&header.join(","))
        ))),
    }
}

/// Reads one CSV record (its fields in order) by the header's `columns` ([`csv_columns`]).
///
/// # Errors
/// Every problem of the record, each naming its field; a record longer than its header.
pub fn parse_csv_row(columns: (usize, usize, Option<usize>), record: &[&str]) -> Result<ImportRow, Vec<FieldError>> {
    let (title, hours, id) = columns;
    if record.len() > title.max(hours).max(id.unwrap_or(0)) + 1 {
        return Err(vec![FieldError::row(format!(
            "tem {} colunas; o cabeçalho nomeia menos (use aspas num título com vírgula).",
            record.len()
        ))]);
    }
    let get = |index: usize| record.get(index).copied();
    parse_csv_record(get(title), get(hours), id.and_then(get))
}

/// The field and the Portuguese sentence of a row the import's rules refused.
#[must_use]
pub fn refusal_message(refusal: &ImportRefusal) -> FieldError {
    match refusal {
        ImportRefusal::TitleRepeatsLine(first) => FieldError::new(
            TITLE,
            format!("o título repete o da linha {first} do arquivo (maiúsculas e espaços à parte)."),
        ),
        ImportRefusal::IdRepeated(id) => {
            FieldError::new(ID, format!("o mesmo curso (id {id}) já está numa linha anterior do arquivo."))
        }
        ImportRefusal::TitleTaken => FieldError::new(TITLE, "já existe um curso ativo com este título no catálogo."),
        ImportRefusal::IdOfAnotherCatalog => {
            FieldError::new(ID, "este id é de um curso de outro catálogo deste banco de dados.")
        }
    }
}

fn parse_fields(fields: &Map<String, Value>, now: OffsetDateTime) -> Result<ImportRow, Vec<FieldError>> {
    let mut errors: Vec<FieldError> = Vec::new();
    let known = [TITLE, HOURS, ID, ARCHIVED, VERSION, CREATED, UPDATED, HISTORY];
    let mut unknown: Vec<&str> = fields.keys().map(String::as_str).filter(|key| !known.contains(key)).collect();
    unknown.sort_unstable();
    if let Some(first) = unknown.first() {
        errors.push(FieldError::row(format!(
            "campo desconhecido {}; os campos de um curso são {}.",
            arguments::quote(first),
            known[..7].iter().map(|name| format!("'{name}'")).collect::<Vec<_>>().join(", ")
        )));
    }
    let present = |name| fields.get(name).filter(|value| !value.is_null());
    let title = field(&mut errors, TITLE, present(TITLE), arguments::title, || {
        "Campo 'titulo' é obrigatório: informe o título do curso (texto de 1 a 200 caracteres).".to_owned()
    });
    let hours = field(&mut errors, HOURS, present(HOURS), arguments::hours, || {
        "Campo 'cargaHoraria' é obrigatório: informe a carga horária em horas inteiras (1 a 1000).".to_owned()
    });
    let id = present(ID).and_then(|value| one(&mut errors, ID, value, arguments::course_id));
    // The nil UUID is no course's id: `CourseId` never makes it, and a file that has it was not
    // written by an export.
    let id = id.filter(|id| {
        let nil = id.as_uuid().is_nil();
        if nil {
            errors.push(FieldError::new(
                ID,
                "Campo 'id' não pode ser o UUID nulo (00000000-0000-0000-0000-000000000000).",
            ));
        }
        !nil
    });
    // A kept course (an export's line) has every one of these; a new one has none of them.
    let kept = [ARCHIVED, VERSION, CREATED, UPDATED];
    let given: Vec<&str> = kept.iter().copied().filter(|name| present(name).is_some()).collect();
    if given.is_empty() {
        return match (title, hours) {
            (Some(title), Some(workload_hours)) if errors.is_empty() => {
                Ok(ImportRow::New { id, course: NewCourse { title, workload_hours } })
            }
            _ => Err(errors),
        };
    }
    if id.is_none() && present(ID).is_none() {
        errors.push(FieldError::new(ID, "Campo 'id' é obrigatório num curso exportado (com 'versao' e datas)."));
    }
    for name in kept.iter().copied().filter(|name| !given.contains(name)) {
        errors.push(FieldError::new(
            name,
            format!("Campo '{name}' é obrigatório num curso exportado (com 'versao' e datas), ou nenhum deles."),
        ));
    }
    let archived = present(ARCHIVED).and_then(|value| {
        let parsed = value.as_bool();
        if parsed.is_none() {
            errors.push(FieldError::new(ARCHIVED, "Campo 'arquivado' deve ser true ou false."));
        }
        parsed
    });
    let version = present(VERSION).and_then(|value| {
        let parsed = value.as_u64().filter(|version| *version >= 1);
        if parsed.is_none() {
            errors.push(FieldError::new(VERSION, "Campo 'versao' deve ser um número inteiro a partir de 1."));
        }
        parsed
    });
    let created = present(CREATED).and_then(|value| instant(&mut errors, CREATED, value));
    let updated = present(UPDATED).and_then(|value| instant(&mut errors, UPDATED, value));
    let (Some(title), Some(workload_hours), Some(id), Some(archived), Some(version), Some(created), Some(updated)) =
        (title, hours, id, archived, version, created, updated)
    else {
        return Err(errors);
    };
    if !errors.is_empty() {
        return Err(errors);
    }
    Course::imported(id, NewCourse { title, workload_hours }, archived, version, created, updated, now)
        .map(ImportRow::Kept)
        .map_err(|error| {
            vec![match error {
                ImportedCourseError::Version => {
                    FieldError::new(VERSION, "Campo 'versao' deve ser um número inteiro a partir de 1.")
                }
                ImportedCourseError::UpdatedBeforeCreated => {
                    FieldError::new(UPDATED, "Campo 'atualizadoEm' não pode ser anterior a 'criadoEm'.")
                }
                ImportedCourseError::InTheFuture => FieldError::new(
                    UPDATED,
                    format!(
                        "Campo 'atualizadoEm' não pode ser posterior ao momento da importação (mais de {} minutos \
                         de diferença entre relógios não é aceito).",
                        CLOCK_SKEW.whole_minutes()
                    ),
                ),
                ImportedCourseError::ArchivedAtFirstVersion => FieldError::new(
                    ARCHIVED,
                    "Um curso arquivado tem 'versao' 2 ou mais (o arquivamento é uma alteração).",
                ),
            }]
        })
}

/// Reads a required field with `read`, the argument reader a tool call uses.
fn field<T>(
    errors: &mut Vec<FieldError>,
    name: &'static str,
    value: Option<&Value>,
    read: fn(&Value, &mut Vec<String>) -> Option<T>,
    missing: impl FnOnce() -> String,
) -> Option<T> {
    let Some(value) = value else {
        errors.push(FieldError::new(name, missing()));
        return None;
    };
    one(errors, name, value, read)
}

fn one<T>(
    errors: &mut Vec<FieldError>,
    name: &'static str,
    value: &Value,
    read: fn(&Value, &mut Vec<String>) -> Option<T>,
) -> Option<T> {
    let mut messages = Vec::new();
    let parsed = read(value, &mut messages);
    errors.extend(messages.into_iter().map(|message| FieldError::new(name, message)));
    parsed
}

fn instant(errors: &mut Vec<FieldError>, name: &'static str, value: &Value) -> Option<OffsetDateTime> {
    let parsed = value
        .as_str()
        .and_then(|text| OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339).ok());
    if parsed.is_none() {
        errors.push(FieldError::new(
            name,
            format!("Campo '{name}' deve ser uma data RFC 3339 (2026-12-01T10:00:00.000Z)."),
        ));
    }
    parsed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn course() -> Course {
        let new = NewCourse {
            title: courses_domain::CourseTitle::parse("Rust, \"o livro\"").expect("valid"),
            workload_hours: courses_domain::WorkloadHours::parse(12).expect("valid"),
        };
        Course::create(new, OffsetDateTime::now_utc())
    }

    #[test]
    fn an_exported_line_reads_back_as_the_same_course() {
        let course = course();
        let line = course_line(&course, None).expect("serialized");
        assert!(!line.contains("historico"), "no history unless exported with it: {line}");
        assert_eq!(parse_json_line(&line, OffsetDateTime::now_utc()), Ok(Some(ImportRow::Kept(course))));
    }

    #[test]
    fn a_header_is_checked_and_skipped() {
        let header = HeaderJson::new(&CatalogName::default_catalog(), 3, false, OffsetDateTime::now_utc());
        let line = serde_json::to_string(&header).expect("serialized");
        assert_eq!(parse_json_line(&line, OffsetDateTime::now_utc()), Ok(None));
        let other = line.replace(FORMAT, "outra-coisa");
        assert_eq!(parse_json_line(&other, OffsetDateTime::now_utc()).expect_err("refused")[0].field, "formato");
    }

    #[test]
    fn each_bad_field_is_named_with_the_tools_sentence() {
        let errors = parse_json_line(r#"{"titulo":"","cargaHoraria":5000,"id":"x"}"#, OffsetDateTime::now_utc())
            .expect_err("refused");
        let fields: Vec<&str> = errors.iter().map(|error| error.field).collect();
        assert_eq!(fields, ["titulo", "cargaHoraria", "id"]);
        assert_eq!(errors[0].message, "Campo 'titulo' não pode ficar vazio.");
        let partial = parse_json_line(r#"{"titulo":"A","cargaHoraria":5,"versao":2}"#, OffsetDateTime::now_utc())
            .expect_err("refused");
        let fields: Vec<&str> = partial.iter().map(|error| error.field).collect();
        assert_eq!(fields, ["id", "arquivado", "criadoEm", "atualizadoEm"]);
    }

    #[test]
    fn an_instant_from_the_future_and_the_nil_id_are_refused_by_field() {
        let now = OffsetDateTime::now_utc();
        let line = course_line(&course(), None).expect("line");
        let future = line.replace(&course_line_field(&line, "atualizadoEm"), "\"2999-01-01T00:00:00.000Z\"");
        let errors = parse_json_line(&future, now).expect_err("refused");
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(errors[0].field, "atualizadoEm");
        assert!(errors[0].message.contains("posterior ao momento da importação"), "{}", errors[0].message);
        // An instant a little ahead (another machine's clock) is believed.
        assert!(parse_json_line(&line, now - time::Duration::minutes(4)).is_ok());

        let nil = r#"{"titulo":"A","cargaHoraria":5,"id":"00000000-0000-0000-0000-000000000000"}"#;
        let errors = parse_json_line(nil, now).expect_err("refused");
        assert_eq!((errors.len(), errors[0].field), (1, "id"), "{errors:?}");
        assert!(errors[0].message.contains("UUID nulo"), "{}", errors[0].message);
        let errors = parse_csv_record(Some("A"), Some("5"), Some("00000000-0000-0000-0000-000000000000"))
            .expect_err("refused in CSV too");
        assert_eq!(errors[0].field, "id");
    }

    /// The JSON text of one field of an exported line.
    fn course_line_field(line: &str, name: &str) -> String {
        let value: Value = serde_json::from_str(line).expect("JSON");
        value[name].to_string()
    }

    #[test]
    fn a_csv_record_reads_like_a_tool_call() {
        let row = parse_csv_record(Some("Rust"), Some(" 12 "), Some("")).expect("valid");
        assert!(matches!(row, ImportRow::New { id: None, .. }));
        let errors = parse_csv_record(Some("Rust"), Some("doze"), None).expect_err("refused");
        assert_eq!(errors[0].field, "cargaHoraria");
        assert!(parse_csv_record(None, Some("3"), None).expect_err("refused")[0].message.contains("obrigatório"));
        assert_eq!(csv_columns(&["cargaHoraria", "titulo"]), Ok((1, 0, None)));
        assert!(csv_columns(&["titulo", "horas"]).is_err());
    }
}
