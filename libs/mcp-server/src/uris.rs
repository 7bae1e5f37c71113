//! The resource URIs of the contract: `cursos://catalogo`, its pages, and `cursos://{uuid}`.

use courses_domain::{CourseId, PageCursor};

/// The catalog's first page.
pub const CATALOG: &str = "cursos://catalogo";
/// The template of one course's URI.
pub const COURSE_TEMPLATE: &str = "cursos://{uuid}";

const SCHEME: &str = "cursos://";
const PAGE_PREFIX: &str = "cursos://catalogo?pagina=";

/// A resource URI this server can read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResourceUri {
    /// A page of the catalog: the first one, or the one after a cursor.
    Catalog(Option<PageCursor>),
    /// One course.
    Course(CourseId),
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
        let id = uri.strip_prefix(SCHEME)?;
        // One course, one URI: only the canonical lowercase form is a name.
        let course_id = CourseId::parse(id).ok()?;
        (course_id.to_string() == id).then_some(Self::Course(course_id))
    }
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
            "file:///etc/passwd".to_owned(),
        ] {
            assert_eq!(ResourceUri::parse(&uri), None, "{uri:?}");
        }
    }
}
