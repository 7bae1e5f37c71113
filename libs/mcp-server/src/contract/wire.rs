//! Wire types: the JSON shapes of the contract, with its Portuguese names.
//!
//! **API boundary:** domain types never cross into JSON directly. Each shape here is built from
//! the domain by hand ([`CourseJson::from_course`]), and tool arguments are parsed field by field
//! into domain newtypes ([`crate::contract::arguments`]) so that every refusal names its field in Portuguese.

use courses_domain::{
    ApprovalReceipt, Course, CourseId, CoursePage, Evidence, HistoryEntry, HistoryPage, OffsetDateTime,
};
use schemars::JsonSchema;
use std::sync::Arc;

use crate::contract::JsonObject;
use serde::Serialize;
use serde_json::Value;

use crate::contract::uris;

/// A course, as every tool result and resource read shows it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(title = "Curso")]
pub struct CourseJson {
    /// Identificador do curso (UUID v4, atribuído pelo servidor). O curso é lido em `cursos://<id>`.
    #[schemars(with = "String", extend("format" = "uuid"))]
    pub id: String,
    /// Título do curso (1 a 200 caracteres, sem espaços nas pontas).
    pub titulo: String,
    /// Carga horária em horas inteiras, de 1 a 1000.
    #[serde(rename = "cargaHoraria")]
    #[schemars(range(min = 1, max = 1000))]
    pub carga_horaria: u16,
    /// `true` quando o curso foi arquivado: saiu do catálogo, continua legível e não pode mais ser alterado.
    pub arquivado: bool,
    /// Revisão do curso: 1 na criação, mais 1 a cada alteração aceita.
    #[schemars(range(min = 1))]
    pub versao: u64,
    /// Quando o curso foi criado (RFC 3339, UTC).
    #[serde(rename = "criadoEm")]
    #[schemars(extend("format" = "date-time"))]
    pub criado_em: String,
    /// Quando o curso foi alterado pela última vez (RFC 3339, UTC).
    #[serde(rename = "atualizadoEm")]
    #[schemars(extend("format" = "date-time"))]
    pub atualizado_em: String,
}

impl CourseJson {
    /// The wire form of a domain course.
    #[must_use]
    pub fn from_course(course: &Course) -> Self {
        Self {
            id: course.id().to_string(),
            titulo: course.title().as_str().to_owned(),
            carga_horaria: course.workload_hours().get(),
            arquivado: course.is_archived(),
            versao: course.version(),
            criado_em: rfc3339(course.created_at()),
            atualizado_em: rfc3339(course.updated_at()),
        }
    }
}

/// One page of `cursos://catalogo`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(title = "Página do catálogo")]
pub struct CatalogPageJson {
    /// Quantos cursos ativos há no catálogo inteiro.
    pub total: u64,
    /// Os cursos desta página, mais antigos primeiro.
    pub cursos: Vec<CourseJson>,
    /// URI da página seguinte (para `resources/read`, ou para o argumento `pagina` de `listar_cursos`), ou `null` na última página.
    #[serde(rename = "proximaPagina")]
    pub proxima_pagina: Option<String>,
}

impl CatalogPageJson {
    /// The wire form of a page of the catalog.
    #[must_use]
    pub fn from_page(total: u64, page: &CoursePage) -> Self {
        Self {
            total,
            cursos: page.courses.iter().map(CourseJson::from_course).collect(),
            proxima_pagina: page.next.map(|cursor| uris::catalog_page(&cursor)),
        }
    }
}

/// One page of `cursos://{uuid}/historico`: the course's accepted writes, newest first.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(title = "Histórico do curso")]
pub struct HistoryPageJson {
    /// O curso deste histórico (`cursos://<id>`).
    pub curso: String,
    /// As alterações desta página, mais recentes primeiro.
    pub entradas: Vec<HistoryEntryJson>,
    /// URI da página seguinte (alterações mais antigas), ou `null` na última página.
    #[serde(rename = "proximaPagina")]
    pub proxima_pagina: Option<String>,
}

impl HistoryPageJson {
    /// The wire form of a page of `id`'s history.
    #[must_use]
    pub fn from_page(id: CourseId, page: &HistoryPage) -> Self {
        Self {
            curso: uris::course(id),
            entradas: page.entries.iter().map(HistoryEntryJson::from_entry).collect(),
            proxima_pagina: page.next.map(|cursor| uris::history_page(id, &cursor)),
        }
    }
}

/// One accepted write of a course.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct HistoryEntryJson {
    /// Quando a alteração foi aceita (RFC 3339, UTC).
    #[schemars(extend("format" = "date-time"))]
    pub em: String,
    /// Quem pediu: o nome da chave de API, ou `stdio`.
    pub autor: String,
    /// A ferramenta chamada.
    pub ferramenta: String,
    /// Os argumentos da chamada, como foram enviados.
    pub argumentos: Value,
    /// O curso antes da alteração (`null` na criação).
    pub antes: Option<CourseJson>,
    /// O curso depois da alteração.
    pub depois: CourseJson,
    /// Como a alteração foi pedida: revisão do protocolo, cliente, superfície oferecida e, num
    /// arquivamento, o recibo da aprovação. `null` numa alteração registrada antes de o servidor
    /// guardar essa evidência (não registrada, nunca inventada).
    pub evidencia: Option<EvidenceJson>,
}

/// The evidence of how a write was asked for (ADR 0037).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct EvidenceJson {
    /// A revisão do protocolo MCP da requisição (`null` se o cliente não declarou nenhuma).
    #[serde(rename = "revisaoProtocolo")]
    pub revisao_protocolo: Option<String>,
    /// O cliente, como ele se declarou (`clientInfo`); `null` se não declarou.
    pub cliente: Option<ClientJson>,
    /// SHA-256 (`sha256:<hex>`) das definições de ferramentas, prompts e recursos oferecidas a quem
    /// pediu, naquele momento.
    pub superficie: String,
    /// O recibo da aprovação de um arquivamento; `null` nas demais alterações.
    pub aprovacao: Option<ApprovalJson>,
}

/// The client as it declared itself.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ClientJson {
    /// O nome declarado (`null` se não declarou).
    pub nome: Option<String>,
    /// A versão declarada (`null` se não declarou).
    pub versao: Option<String>,
}

/// An archiving's approval receipt.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ApprovalJson {
    /// `true` quando o usuário foi consultado; `false` quando ninguém foi (arquivamento sem
    /// confirmação permitido pelo operador, `UNCONFIRMED_ARCHIVE=allow`).
    pub perguntado: bool,
    /// A pergunta mostrada ao usuário.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pergunta: Option<String>,
    /// A versão do curso que a pergunta mostrava (a arquivada).
    #[serde(rename = "versaoMostrada", skip_serializing_if = "Option::is_none")]
    pub versao_mostrada: Option<u64>,
    /// A resposta, como o cliente a enviou.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resposta: Option<Value>,
    /// Quando o servidor recebeu a resposta (RFC 3339, UTC).
    #[serde(rename = "respondidaEm", skip_serializing_if = "Option::is_none")]
    pub respondida_em: Option<String>,
}

impl EvidenceJson {
    fn from_evidence(evidence: &Evidence) -> Self {
        let cliente = (evidence.client_name().is_some() || evidence.client_version().is_some()).then(|| ClientJson {
            nome: evidence.client_name().map(str::to_owned),
            versao: evidence.client_version().map(str::to_owned),
        });
        let aprovacao = evidence.approval().map(|approval| match approval {
            ApprovalReceipt::Asked { question, shown_version, answer, answered_at } => ApprovalJson {
                perguntado: true,
                pergunta: Some(question.clone()),
                versao_mostrada: Some(*shown_version),
                resposta: Some(json_or_text(answer)),
                respondida_em: Some(rfc3339(*answered_at)),
            },
            ApprovalReceipt::NotAsked => ApprovalJson {
                perguntado: false,
                pergunta: None,
                versao_mostrada: None,
                resposta: None,
                respondida_em: None,
            },
        });
        Self {
            revisao_protocolo: evidence.protocol_revision().map(str::to_owned),
            cliente,
            superficie: evidence.surface_hash().to_owned(),
            aprovacao,
        }
    }
}

/// `text` as a JSON string literal (quoted, `"` `\\` and control characters escaped): how catalog
/// data (a course's title) and user values appear inside a human-readable text, so that it reads
/// as data and cannot close its quotes or start a line of its own.
pub(crate) fn quoted(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".to_owned())
}

/// Text recorded as JSON, shown as JSON (or as the text, should it ever not parse).
fn json_or_text(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()))
}

impl HistoryEntryJson {
    /// The wire form of one history entry.
    #[must_use]
    pub fn from_entry(entry: &HistoryEntry) -> Self {
        let arguments = entry.provenance.arguments();
        Self {
            em: rfc3339(entry.recorded_at),
            autor: entry.provenance.author().to_owned(),
            ferramenta: entry.provenance.tool().to_owned(),
            argumentos: json_or_text(arguments),
            antes: entry.before.as_ref().map(CourseJson::from_course),
            depois: CourseJson::from_course(&entry.after),
            evidencia: entry.provenance.evidence().map(EvidenceJson::from_evidence),
        }
    }
}

/// An input schema that every host's validator reads the same way: drops schemars' Rust-specific
/// integer formats (`uint16`, `int64`, ...; unknown formats make some validators warn) and turns
/// nullable type arrays (`["string", "null"]`) into the plain type, since some hosts (Gemini's
/// OpenAPI subset) cannot read type arrays. The server still accepts `null` for optional fields.
#[must_use]
pub fn portable_schema(schema: &JsonObject) -> Arc<JsonObject> {
    cleaned(schema, true)
}

/// An output schema with the same integer formats dropped, and its nullable types kept: the
/// clients validate structured results against it (the official TypeScript and Python SDKs
/// refuse a result that breaks it), and a field that is `null` on the wire (`proximaPagina` on
/// the last page) must be allowed to be (issue 24, item 11).
#[must_use]
pub fn portable_output_schema(schema: &JsonObject) -> Arc<JsonObject> {
    cleaned(schema, false)
}

fn cleaned(schema: &JsonObject, flatten_nullable: bool) -> Arc<JsonObject> {
    fn clean(value: &mut Value, flatten_nullable: bool) {
        match value {
            Value::Object(object) => {
                if object.get("format").and_then(Value::as_str).is_some_and(|format| RUST_INT_FORMATS.contains(&format))
                {
                    object.remove("format");
                }
                if flatten_nullable && let Some(Value::Array(types)) = object.get("type") {
                    let non_null: Vec<Value> =
                        types.iter().filter(|kind| kind.as_str() != Some("null")).cloned().collect();
                    if let [only] = non_null.as_slice() {
                        let only = only.clone();
                        object.insert("type".to_owned(), only);
                    }
                }
                object.values_mut().for_each(|value| clean(value, flatten_nullable));
            }
            Value::Array(items) => items.iter_mut().for_each(|value| clean(value, flatten_nullable)),
            _ => {}
        }
    }
    const RUST_INT_FORMATS: [&str; 10] =
        ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "uint", "int"];
    let mut value = Value::Object(schema.clone());
    clean(&mut value, flatten_nullable);
    match value {
        Value::Object(object) => Arc::new(object),
        _ => Arc::new(schema.clone()),
    }
}

/// Timestamps on the wire: RFC 3339 in UTC with exactly three fractional digits
/// (`2026-11-30T12:00:00.120Z`), so that they have one width and sort as text.
///
/// Written digit by digit: two of these are in every course a read returns, and `time`'s
/// format descriptions cost about ten times as much (bench/RESULTS.md). Years outside 0..=9999
/// (no course has one) take that general path.
pub(crate) fn rfc3339(instant: OffsetDateTime) -> String {
    let utc = instant.to_offset(time::UtcOffset::UTC);
    let Ok(year) = u16::try_from(utc.year()) else { return rfc3339_described(utc) };
    if year > 9999 {
        return rfc3339_described(utc);
    }
    let mut text = *b"0000-00-00T00:00:00.000Z";
    let mut put = |at: usize, width: u32, value: u16| {
        for digit in 0..width {
            let place = 10_u16.pow(width - 1 - digit);
            text[at + digit as usize] = b'0' + u8::try_from(value / place % 10).unwrap_or(0);
        }
    };
    put(0, 4, year);
    put(5, 2, u16::from(u8::from(utc.month())));
    put(8, 2, u16::from(utc.day()));
    put(11, 2, u16::from(utc.hour()));
    put(14, 2, u16::from(utc.minute()));
    put(17, 2, u16::from(utc.second()));
    put(20, 3, utc.millisecond());
    std::str::from_utf8(&text).map_or_else(|_| rfc3339_described(utc), str::to_owned)
}

fn rfc3339_described(utc: OffsetDateTime) -> String {
    const WIRE_TIMESTAMP: &[time::format_description::BorrowedFormatItem<'static>] =
        time::macros::format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z");
    utc.format(WIRE_TIMESTAMP).unwrap_or_else(|_| utc.to_string())
}

/// Arguments of `criar_curso` (schema only: [`crate::contract::arguments`] reads them field by field).
#[derive(Debug, JsonSchema)]
#[schemars(deny_unknown_fields)]
#[allow(dead_code, reason = "only its JSON Schema is used")]
pub(crate) struct CreateCourseArguments {
    /// Título do curso: texto de 1 a 200 caracteres, sem quebras de linha, outros caracteres de controle ou invisíveis.
    /// Deve ser diferente do título de todo curso ativo (comparação sem diferenciar maiúsculas nem espaços extras).
    titulo: String,
    /// Carga horária em horas inteiras, de 1 a 1000 (um número, não um texto).
    #[serde(rename = "cargaHoraria")]
    #[schemars(range(min = 1, max = 1000))]
    carga_horaria: i64,
    /// Chave de idempotência (opcional, 1 a 200 caracteres): repetir a chamada com a mesma chave e os mesmos argumentos devolve o curso já criado, sem criar outro; a mesma chave com outros argumentos é recusada.
    #[serde(rename = "chaveIdempotencia")]
    #[schemars(length(min = 1, max = 200))]
    chave_idempotencia: Option<String>,
}

/// Arguments of `atualizar_curso` (schema only).
#[derive(Debug, JsonSchema)]
#[schemars(deny_unknown_fields)]
#[allow(dead_code, reason = "only its JSON Schema is used")]
pub(crate) struct UpdateCourseArguments {
    /// Id (UUID) do curso a alterar, como aparece em `cursos://catalogo` ou no resultado de `criar_curso`.
    #[schemars(extend("format" = "uuid"))]
    id: String,
    /// Novo título (opcional): 1 a 200 caracteres, sem caracteres de controle ou invisíveis, único entre os ativos.
    titulo: Option<String>,
    /// Nova carga horária (opcional), em horas inteiras de 1 a 1000.
    #[serde(rename = "cargaHoraria")]
    #[schemars(range(min = 1, max = 1000))]
    carga_horaria: Option<i64>,
    /// Versão do curso que você leu (opcional; o campo `versao` do curso). Se o curso estiver em outra versão, nada é alterado.
    #[schemars(range(min = 1))]
    versao: Option<u64>,
}

/// Arguments of `listar_cursos` (schema only).
#[derive(Debug, JsonSchema)]
#[schemars(deny_unknown_fields)]
#[allow(dead_code, reason = "only its JSON Schema is used")]
pub(crate) struct ListCoursesArguments {
    /// Página a ler (opcional): o valor de `proximaPagina` da resposta anterior. Sem ele, a primeira página.
    pagina: Option<String>,
}

/// Arguments of `ler_curso` (schema only).
#[derive(Debug, JsonSchema)]
#[schemars(deny_unknown_fields)]
#[allow(dead_code, reason = "only its JSON Schema is used")]
pub(crate) struct ReadCourseArguments {
    /// Id (UUID) do curso a ler.
    #[schemars(extend("format" = "uuid"))]
    id: String,
}

/// Arguments of `arquivar_curso` (schema only).
#[derive(Debug, JsonSchema)]
#[schemars(deny_unknown_fields)]
#[allow(dead_code, reason = "only its JSON Schema is used")]
pub(crate) struct ArchiveCourseArguments {
    /// Id (UUID) do curso a arquivar.
    #[schemars(extend("format" = "uuid"))]
    id: String,
    /// Versão do curso que você leu (opcional; o campo `versao` do curso). Se o curso estiver em outra versão, nada é alterado.
    #[schemars(range(min = 1))]
    versao: Option<u64>,
}

/// Arguments of `ver_catalogo` (schema only).
#[derive(Debug, JsonSchema)]
#[schemars(deny_unknown_fields)]
#[allow(dead_code, reason = "only its JSON Schema is used")]
pub(crate) struct ViewCatalogArguments {
    /// Página a mostrar (opcional): o valor de `proximaPagina` da resposta anterior. Sem ele, a primeira página.
    pagina: Option<String>,
}

/// Arguments of `interface_buscar_cursos` (schema only).
#[derive(Debug, JsonSchema)]
#[schemars(deny_unknown_fields)]
#[allow(dead_code, reason = "only its JSON Schema is used")]
pub(crate) struct SearchCoursesArguments {
    /// O que o usuário digitou: parte do título ou o id. Vazio: os cursos mais antigos.
    texto: Option<String>,
}

/// What `interface_buscar_cursos` answers: the active courses that match, best first.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(title = "Busca no catálogo")]
pub struct SearchResultJson {
    /// Os cursos ativos encontrados, melhores primeiro.
    pub cursos: Vec<CourseJson>,
    /// `true` quando há mais cursos que combinam do que os mostrados.
    #[serde(rename = "maisResultados")]
    pub mais_resultados: bool,
}

/// Arguments of `interface_arquivar_curso` (schema only).
#[derive(Debug, JsonSchema)]
#[schemars(deny_unknown_fields)]
#[allow(dead_code, reason = "only its JSON Schema is used")]
pub(crate) struct InterfaceArchiveArguments {
    /// Id (UUID) do curso a arquivar.
    #[schemars(extend("format" = "uuid"))]
    id: String,
    /// Versão do curso mostrada ao usuário (opcional). Se o curso estiver em outra versão, nada é alterado.
    #[schemars(range(min = 1))]
    versao: Option<u64>,
    /// A pergunta devolvida pela primeira chamada (sem ele, a chamada só devolve a pergunta).
    #[serde(rename = "estadoPergunta")]
    estado_pergunta: Option<String>,
    /// A resposta do usuário à pergunta: true arquiva, false não muda nada.
    confirmar: Option<bool>,
}

/// The question `interface_arquivar_curso` returns for the app to show (nothing is archived).
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(title = "Pergunta de arquivamento")]
pub struct ArchiveQuestionJson {
    /// A pergunta a mostrar ao usuário, com as palavras do servidor.
    pub pergunta: String,
    /// Devolva este valor com a resposta; vale para este usuário e este curso, por alguns minutos.
    #[serde(rename = "estadoPergunta")]
    pub estado_pergunta: String,
    /// O curso como a pergunta o mostra.
    pub curso: CourseJson,
}

/// Arguments of the `criar-curso` prompt, read leniently: [`crate::contract::prompt`] checks them and
/// answers a missing one with a Portuguese message. The published argument list is
/// [`crate::contract::prompt::create_course_arguments`].
#[derive(Debug, Default, serde::Deserialize, JsonSchema)]
pub struct CreateCoursePromptArguments {
    /// Título do curso a cadastrar.
    #[serde(default)]
    pub titulo: Option<serde_json::Value>,
    /// Carga horária desejada, em horas inteiras (1 a 1000).
    #[serde(default, rename = "cargaHoraria")]
    pub carga_horaria: Option<serde_json::Value>,
}

#[cfg(test)]
mod tests {
    use time::macros::datetime;

    use super::*;

    #[test]
    fn wire_timestamps_always_have_three_fractional_digits() {
        assert_eq!(rfc3339(datetime!(2026-11-30 12:00:00 UTC)), "2026-11-30T12:00:00.000Z");
        assert_eq!(rfc3339(datetime!(2026-11-30 12:00:00.12 UTC)), "2026-11-30T12:00:00.120Z");
        assert_eq!(rfc3339(datetime!(2026-11-30 09:00:00.5 -3)), "2026-11-30T12:00:00.500Z");
        assert_eq!(rfc3339(datetime!(0001-01-01 00:00:00.999999 UTC)), "0001-01-01T00:00:00.999Z");
        assert_eq!(rfc3339(datetime!(9999-12-31 23:59:59.9999 UTC)), "9999-12-31T23:59:59.999Z");
    }

    /// The digit-by-digit writer agrees with `time`'s own formatting, over instants spread across
    /// four centuries (every month, day, hour and millisecond shape) and the years it leaves to it.
    #[test]
    fn wire_timestamps_are_what_time_s_format_description_writes() {
        let mut instant = datetime!(1900-01-01 00:00:00 UTC);
        let step = time::Duration::seconds(7_919_237) + time::Duration::nanoseconds(123_456_789);
        while instant.year() < 2300 {
            assert_eq!(rfc3339(instant), rfc3339_described(instant), "{instant}");
            instant += step;
        }
        let before_year_zero = datetime!(-0001-06-15 12:00:00.5 UTC);
        assert_eq!(rfc3339(before_year_zero), rfc3339_described(before_year_zero));
    }
}
