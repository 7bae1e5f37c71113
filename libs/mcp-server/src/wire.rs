//! Wire types: the JSON shapes of the contract, with its Portuguese names.
//!
//! **API boundary:** domain types never cross into JSON directly. Each shape here is built from
//! the domain by hand ([`CourseJson::from_course`]), and tool arguments are parsed field by field
//! into domain newtypes ([`crate::arguments`]) so that every refusal names its field in Portuguese.

use courses_domain::{Course, CoursePage, OffsetDateTime};
use rmcp::schemars::{self, JsonSchema};
use serde::Serialize;
use time::format_description::well_known::Rfc3339;

use crate::uris;

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
            criado_em: rfc3339(course.created_at()),
            atualizado_em: rfc3339(course.updated_at()),
        }
    }
}

/// One page of `cursos://catalogo`.
#[derive(Debug, Clone, Serialize)]
pub struct CatalogPageJson {
    /// How many courses are active in the whole catalog.
    pub total: u64,
    /// This page's courses, oldest first.
    pub cursos: Vec<CourseJson>,
    /// The URI of the next page, or `null` on the last page.
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

/// Timestamps on the wire: RFC 3339 in UTC (`2026-11-30T12:00:00.123Z`).
fn rfc3339(instant: OffsetDateTime) -> String {
    instant.format(&Rfc3339).unwrap_or_else(|_| instant.to_string())
}

/// Arguments of `criar_curso` (schema only: [`crate::arguments`] reads them field by field).
#[derive(Debug, JsonSchema)]
#[schemars(deny_unknown_fields)]
#[allow(dead_code, reason = "only its JSON Schema is used")]
pub(crate) struct CreateCourseArguments {
    /// Título do curso: texto de 1 a 200 caracteres, sem quebras de linha ou outros caracteres de controle.
    /// Deve ser diferente do título de todo curso ativo (comparação sem diferenciar maiúsculas nem espaços extras).
    titulo: String,
    /// Carga horária em horas inteiras, de 1 a 1000 (um número, não um texto).
    #[serde(rename = "cargaHoraria")]
    #[schemars(range(min = 1, max = 1000))]
    carga_horaria: i64,
}

/// Arguments of `atualizar_curso` (schema only).
#[derive(Debug, JsonSchema)]
#[schemars(deny_unknown_fields)]
#[allow(dead_code, reason = "only its JSON Schema is used")]
pub(crate) struct UpdateCourseArguments {
    /// Id (UUID) do curso a alterar, como aparece em `cursos://catalogo` ou no resultado de `criar_curso`.
    #[schemars(extend("format" = "uuid"))]
    id: String,
    /// Novo título (opcional): 1 a 200 caracteres, sem caracteres de controle, único entre os cursos ativos.
    titulo: Option<String>,
    /// Nova carga horária (opcional), em horas inteiras de 1 a 1000.
    #[serde(rename = "cargaHoraria")]
    #[schemars(range(min = 1, max = 1000))]
    carga_horaria: Option<i64>,
}

/// Arguments of `arquivar_curso` (schema only).
#[derive(Debug, JsonSchema)]
#[schemars(deny_unknown_fields)]
#[allow(dead_code, reason = "only its JSON Schema is used")]
pub(crate) struct ArchiveCourseArguments {
    /// Id (UUID) do curso a arquivar.
    #[schemars(extend("format" = "uuid"))]
    id: String,
}

/// Arguments of the `criar-curso` prompt. Prompt arguments are always strings on the wire.
#[derive(Debug, serde::Deserialize, JsonSchema)]
pub struct CreateCoursePromptArguments {
    /// Título do curso a cadastrar.
    pub titulo: String,
    /// Carga horária desejada, em horas inteiras (1 a 1000).
    #[serde(rename = "cargaHoraria")]
    pub carga_horaria: String,
}
