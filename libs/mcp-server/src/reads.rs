//! The read side, over the caller's catalog: the JSON a resource read answers, the pages of
//! `resources/list`, the completions, and the read-only tools (`listar_cursos`, `ver_catalogo`,
//! `interface_buscar_cursos`). Nothing here writes; each error is mapped by [`crate::outcomes`].

use courses_domain::{Catalog, PageCursor, PageSize};
use rmcp::ErrorData as McpError;
use rmcp::model::{CallToolResult, CompletionInfo, Reference, Resource};

use crate::access::policy::CatalogPolicy;
use crate::contract::course_text::CourseTexts;
use crate::contract::uris::{self, ResourceUri};
use crate::contract::wire::{CatalogPageJson, CourseJson, HistoryPageJson, SearchResultJson};
use crate::contract::{JsonObject, arguments};
use crate::{outcomes, surface};

/// How many courses the app's search shows: as many as a completion offers.
const SEARCH_RESULTS: usize = 20;

/// Hours suggested for the prompt's `cargaHoraria`.
const COMMON_WORKLOADS: [&str; 10] = ["4", "8", "10", "12", "16", "20", "30", "40", "60", "80"];

/// The JSON of the catalog's page after `after` (the first page without it).
async fn catalog_page_json(catalog: &Catalog, after: Option<PageCursor>) -> Result<String, McpError> {
    let page = catalog.active_page(after, PageSize::default()).await.map_err(outcomes::internal_protocol_error)?;
    let total = catalog.count_active().await.map_err(outcomes::internal_protocol_error)?;
    serde_json::to_string(&CatalogPageJson::from_page(total, &page)).map_err(outcomes::internal_protocol_error)
}

/// The JSON text `resources/read` of `uri` answers (a course, a catalog page or a history page).
pub(crate) async fn resource_json(
    catalog: &Catalog,
    course_texts: &CourseTexts,
    uri: &str,
) -> Result<String, McpError> {
    Ok(match ResourceUri::parse(uri) {
        None => return Err(outcomes::resource_not_found(uri)),
        Some(ResourceUri::Course(id)) => {
            let course = catalog.get(id).await.map_err(|error| outcomes::course_read_error(error, uri))?;
            course_texts.text_of(&course).map_err(outcomes::internal_protocol_error)?
        }
        Some(ResourceUri::Catalog(after)) => catalog_page_json(catalog, after).await?,
        Some(ResourceUri::History(id, after)) => {
            let page = catalog
                .history(id, after, PageSize::default())
                .await
                .map_err(|error| outcomes::course_read_error(error, uri))?;
            serde_json::to_string(&HistoryPageJson::from_page(id, &page)).map_err(outcomes::internal_protocol_error)?
        }
    })
}

/// One page of `resources/list` after the client's `cursor`: the static resources first (on the
/// first page; the app's to a client that `renders_apps`), then the active courses; and the next
/// page's cursor.
pub(crate) async fn resources_page(
    catalog: &Catalog,
    cursor: Option<String>,
    renders_apps: bool,
) -> Result<(Vec<Resource>, Option<String>), McpError> {
    let cursor = match cursor {
        None => None,
        Some(token) => Some(PageCursor::parse_token(&token).map_err(|_| {
            McpError::invalid_params("Cursor inválido: use o nextCursor devolvido pela listagem anterior.", None)
        })?),
    };
    let page = catalog.active_page(cursor, PageSize::default()).await.map_err(outcomes::internal_protocol_error)?;
    let mut resources = Vec::with_capacity(page.courses.len() + 2);
    if cursor.is_none() {
        resources.extend(surface::static_resources(renders_apps));
    }
    resources.extend(page.courses.iter().map(surface::course_resource));
    Ok((resources, page.next.map(|next| next.to_token())))
}

/// The completion of `argument` (its `name` and what was `typed`) of `reference`: course ids by
/// title for `uuid` of the course and history templates, common workloads for `cargaHoraria` of
/// `criar-curso` (unless `policy` disabled the prompt), nothing for anything else.
pub(crate) async fn completion(
    catalog: &Catalog,
    policy: &CatalogPolicy,
    reference: &Reference,
    (name, typed): (&str, &str),
) -> Result<CompletionInfo, McpError> {
    match (reference, name) {
        (Reference::Resource(template), "uuid")
            if template.uri == uris::COURSE_TEMPLATE || template.uri == uris::HISTORY_TEMPLATE =>
        {
            let limit = CompletionInfo::MAX_VALUES;
            let courses = catalog.suggest(typed, limit + 1).await.map_err(outcomes::internal_protocol_error)?;
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
    .map_err(outcomes::internal_protocol_error_text)
}

/// `listar_cursos` and `ver_catalogo`: the same page, cursor and refusals (one reading of the catalog).
pub(crate) async fn list_courses(catalog: &Catalog, raw_arguments: &JsonObject) -> CallToolResult {
    let after = match arguments::list_courses(raw_arguments) {
        Ok(after) => after,
        Err(errors) => return outcomes::refused(&errors.message()),
    };
    match catalog_page_json(catalog, after).await {
        Ok(json) => outcomes::read_only(&json),
        Err(_) => outcomes::refused(outcomes::INTERNAL_TOOL_ERROR),
    }
}

/// `interface_buscar_cursos`: the active courses that match what the user typed, best first.
pub(crate) async fn search_courses(catalog: &Catalog, raw_arguments: &JsonObject) -> CallToolResult {
    let typed = match arguments::search_courses(raw_arguments) {
        Ok(typed) => typed,
        Err(errors) => return outcomes::refused(&errors.message()),
    };
    match catalog.suggest(&typed, SEARCH_RESULTS + 1).await {
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
