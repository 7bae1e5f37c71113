//! The resource URIs of the contract: `cursos://catalogo`, its pages, `cursos://{uuid}`, and
//! `cursos://{uuid}/historico` with its pages.

use courses_domain::{CourseId, PageCursor};

/// The catalog's first page.
pub const CATALOG: &str = "cursos://catalogo";
/// The template of one course's URI.
pub const COURSE_TEMPLATE: &str = "cursos://{uuid}";

/// The template of one course's history (newest first, paginated).
pub const HISTORY_TEMPLATE: &str = "cursos://{uuid}/historico";

const SCHEME: &str = "cursos://";
const HISTORY_SUFFIX: &str = "/historico";
const HISTORY_PAGE_MARKER: &str = "/historico?pagina=";
const PAGE_PREFIX: &str = "cursos://catalogo?pagina=";

/// A resource URI this server can read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResourceUri {
    /// A page of the catalog: the first one, or the one after a cursor.
    Catalog(Option<PageCursor>),
    /// One course.
    Course(CourseId),
    /// A page of one course's history: the newest entries, or the ones after a cursor.
    History(CourseId, Option<PageCursor>),
}

impl ResourceUri {
    /// Reads a URI, or `None` when it names nothing this server has.
    #[must_use]
    pub fn parse(uri: &str) -> Option<Self> {
        if uri == CATALOG {
            return Some(Self::Catalog(None));
        }
        if let Some(token) = uri.strip_prefix(PAGE_PREFIX) {
            return PageCursor::parse_token(token).ok().map(|cursor| Self::Catalog(Some(cursor)));
        }
        let rest = uri.strip_prefix(SCHEME)?;
        if let Some((id, token)) = rest.split_once(HISTORY_PAGE_MARKER) {
            let cursor = PageCursor::parse_token(token).ok()?;
            return canonical_id(id).map(|id| Self::History(id, Some(cursor)));
        }
        if let Some(id) = rest.strip_suffix(HISTORY_SUFFIX) {
            return canonical_id(id).map(|id| Self::History(id, None));
        }
        canonical_id(rest).map(Self::Course)
    }
}

/// One course, one URI: only the canonical lowercase form is a name.
fn canonical_id(text: &str) -> Option<CourseId> {
    let id = CourseId::parse(text).ok()?;
    (id.to_string() == text).then_some(id)
}

/// The URI of one course's history (its newest entries).
#[must_use]
pub fn history(id: CourseId) -> String {
    format!("{SCHEME}{id}{HISTORY_SUFFIX}")
}

/// The URI of the page of `id`'s history that continues after `cursor`.
#[must_use]
pub fn history_page(id: CourseId, cursor: &PageCursor) -> String {
    format!("{SCHEME}{id}{HISTORY_PAGE_MARKER}{}", cursor.to_token())
}

/// The URI of one course.
#[must_use]
pub fn course(id: CourseId) -> String {
    format!("{SCHEME}{id}")
}

/// The URI of the catalog page that starts after `cursor`.
#[must_use]
pub fn catalog_page(cursor: &PageCursor) -> String {
    format!("{PAGE_PREFIX}{}", cursor.to_token())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_catalog_and_a_course_uri_are_recognised() {
        let id = CourseId::generate();
        assert_eq!(ResourceUri::parse("cursos://catalogo"), Some(ResourceUri::Catalog(None)));
        assert_eq!(ResourceUri::parse(&course(id)), Some(ResourceUri::Course(id)));
    }

    #[test]
    fn a_page_uri_round_trips() {
        let cursor = PageCursor::after_position(101);
        assert_eq!(ResourceUri::parse(&catalog_page(&cursor)), Some(ResourceUri::Catalog(Some(cursor))));
    }

    #[test]
    fn a_history_uri_and_its_pages_round_trip() {
        let id = CourseId::generate();
        let cursor = PageCursor::after_position(42);
        assert_eq!(ResourceUri::parse(&history(id)), Some(ResourceUri::History(id, None)));
        assert_eq!(ResourceUri::parse(&history_page(id, &cursor)), Some(ResourceUri::History(id, Some(cursor))));
    }

    #[test]
    fn anything_else_is_not_a_resource_of_this_server() {
        let id = CourseId::generate();
        for uri in [
            String::new(),
            "cursos://".into(),
            "cursos://catalogo/".into(),
            "cursos://catalogo?pagina=".into(),
            "cursos://catalogo?pagina=xyz".into(),
            "cursos://catalogo?pagina=-1".into(),
            "cursos://catalogo?pagina=1&x=2".into(),
            "cursos://catalogo?outra=1".into(),
            "cursos://nao-e-um-uuid".into(),
            format!("cursos://{}", id.to_string().to_uppercase()),
            format!("cursos://{id}/extra"),
            format!("https://{id}"),
            format!("cursos://{id}/historico/"),
            format!("cursos://{id}/historico?pagina="),
            format!("cursos://{id}/historico?pagina=x"),
            format!("cursos://{}/historico", id.to_string().to_uppercase()),
            "cursos://catalogo/historico".to_owned(),
            "cursos:///historico".to_owned(),
            "file:///etc/passwd".to_owned(),
        ] {
            assert_eq!(ResourceUri::parse(&uri), None, "{uri:?}");
        }
    }
}
