//! [`CourseId`]: the identity of a course.

use std::fmt;

use uuid::Uuid;

/// The identity of a course: a UUID v4 assigned by the catalog when the course is created.
///
/// Its text form is the canonical lowercase hyphenated UUID (`1b4e28ba-2fa1-41d2-883f-0016d3cca427`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CourseId(Uuid);

/// The namespace of [`CourseId::for_import`]'s UUIDs (a fixed random v4, chosen once: changing it
/// would make a re-import create every id-less row again).
const IMPORT_NAMESPACE: Uuid = Uuid::from_u128(0x6f1c_2a4e_93b7_4d0a_8e51_c7f2_b9d4_0e38);

/// Why a text is not a [`CourseId`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a UUID in hyphenated form (xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)")]
pub struct CourseIdError;

impl CourseId {
    /// A fresh random identity (UUID v4).
    #[must_use]
    pub fn generate() -> Self {
        Self(Uuid::new_v4())
    }

    /// The identity an imported row without an id gets: a UUID v5 (name-based, SHA-1) of its
    /// catalog and title comparison key, under this project's own namespace. The same row imported
    /// twice into one catalog gets the same id, so the second import finds it already there
    /// (ADR 0040); the same title in two catalogs gets two ids.
    #[must_use]
    pub fn for_import(catalog: &super::CatalogName, title: &super::CourseTitle) -> Self {
        let name = format!("{}\n{}", catalog.as_str(), title.key());
        Self(Uuid::new_v5(&IMPORT_NAMESPACE, name.as_bytes()))
    }

    /// Parses the hyphenated text form of a UUID (any case, surrounding whitespace ignored).
    ///
    /// Only the 36-character hyphenated form is accepted, so that one course has one URI.
    ///
    /// # Errors
    /// [`CourseIdError`] when the text is not a hyphenated UUID.
    pub fn parse(text: &str) -> Result<Self, CourseIdError> {
        let text = text.trim();
        if text.len() != 36 {
            return Err(CourseIdError);
        }
        Uuid::try_parse(text).map(Self).map_err(|_| CourseIdError)
    }

    /// The underlying UUID.
    #[must_use]
    pub fn as_uuid(&self) -> &Uuid {
        &self.0
    }
}

impl fmt::Display for CourseId {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0.hyphenated(), formatter)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_imported_row_gets_the_same_id_for_the_same_catalog_and_title_key_only() {
        let catalog = crate::rules::CatalogName::parse("escola").expect("valid");
        let other = crate::rules::CatalogName::parse("outra").expect("valid");
        let title = |text| crate::rules::CourseTitle::parse(text).expect("valid");
        let id = CourseId::for_import(&catalog, &title("Rust Básico"));
        assert_eq!(id.as_uuid().get_version_num(), 5);
        // Same comparison key (case, width, spaces): same id.
        assert_eq!(id, CourseId::for_import(&catalog, &title("RUST  básico")));
        assert_ne!(id, CourseId::for_import(&catalog, &title("Rust Avançado")));
        assert_ne!(id, CourseId::for_import(&other, &title("Rust Básico")));
    }

    #[test]
    fn a_generated_id_is_a_version_4_uuid() {
        assert_eq!(CourseId::generate().as_uuid().get_version_num(), 4);
    }

    #[test]
    fn an_id_round_trips_through_its_text_form() {
        let id = CourseId::generate();
        assert_eq!(CourseId::parse(&id.to_string()), Ok(id));
    }

    #[test]
    fn an_uppercase_id_is_read_as_the_same_id_and_printed_lowercase() {
        let id = CourseId::parse("1B4E28BA-2FA1-41D2-883F-0016D3CCA427").expect("valid id");
        assert_eq!(id.to_string(), "1b4e28ba-2fa1-41d2-883f-0016d3cca427");
    }

    #[test]
    fn text_that_is_not_a_hyphenated_uuid_is_refused() {
        for text in [
            "",
            "abc",
            "1b4e28ba2fa141d2883f0016d3cca427",
            "1b4e28ba-2fa1-41d2-883f-0016d3cca42z",
            "{1b4e28ba-2fa1-41d2-883f-0016d3cca427}",
        ] {
            assert_eq!(CourseId::parse(text), Err(CourseIdError), "{text:?}");
        }
    }
}
