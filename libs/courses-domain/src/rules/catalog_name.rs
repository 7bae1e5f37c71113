//! [`CatalogName`]: which tenant's catalog an operation is in (ADR 0035).

use std::fmt;

/// The name of one catalog on a deployment that serves several (ADR 0035): 1 to
/// [`CatalogName::MAX_CHARS`] lower-case ASCII letters, digits and `-`, starting with a letter or
/// a digit. Chosen by the operator (keys file, `--catalog`), never by a request.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CatalogName(String);

/// Why a text is not a [`CatalogName`]. The messages are Portuguese: operators read them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CatalogNameError {
    /// The text is empty.
    #[error("o nome do catálogo está vazio")]
    Empty,
    /// Longer than [`CatalogName::MAX_CHARS`].
    #[error("o nome do catálogo tem mais de {max} caracteres", max = CatalogName::MAX_CHARS)]
    TooLong,
    /// Starts with `-`.
    #[error("o nome do catálogo deve começar por uma letra minúscula ou um dígito")]
    BadStart,
    /// Holds a character other than `a`–`z`, `0`–`9` and `-`.
    #[error("o nome do catálogo só pode ter letras minúsculas sem acento (a-z), dígitos e '-'")]
    BadCharacter,
}

impl CatalogName {
    /// The longest name accepted, in characters.
    pub const MAX_CHARS: usize = 64;

    /// The name of the default catalog: where existing keys, databases and the single `API_KEY` are.
    pub const DEFAULT: &'static str = "padrao";

    /// Checks a name (no trimming: an operator's name is taken as written).
    ///
    /// # Errors
    /// [`CatalogNameError`] naming the rule the text breaks.
    pub fn parse(text: &str) -> Result<Self, CatalogNameError> {
        if text.is_empty() {
            return Err(CatalogNameError::Empty);
        }
        if text.chars().count() > Self::MAX_CHARS {
            return Err(CatalogNameError::TooLong);
        }
        if !text.bytes().all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'-') {
            return Err(CatalogNameError::BadCharacter);
        }
        if text.starts_with('-') {
            return Err(CatalogNameError::BadStart);
        }
        Ok(Self(text.to_owned()))
    }

    /// The default catalog, [`CatalogName::DEFAULT`].
    #[must_use]
    pub fn default_catalog() -> Self {
        Self(Self::DEFAULT.to_owned())
    }

    /// The name's text, as stored.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// A name read back from the store (the store only holds names that passed [`CatalogName::parse`]).
    pub(crate) fn from_stored(text: &str) -> Option<Self> {
        Self::parse(text).ok()
    }
}

impl Default for CatalogName {
    fn default() -> Self {
        Self::default_catalog()
    }
}

impl fmt::Display for CatalogName {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::{CatalogName, CatalogNameError};

    #[test]
    fn names_of_lower_case_letters_digits_and_hyphens_are_accepted() {
        for name in ["padrao", "a", "7", "time-azul", "cliente-42", &"x".repeat(64)] {
            assert_eq!(CatalogName::parse(name).map(|parsed| parsed.as_str().to_owned()), Ok(name.to_owned()));
        }
        assert_eq!(CatalogName::default_catalog().as_str(), "padrao");
    }

    #[test]
    fn other_names_are_refused_with_the_rule_they_break() {
        assert_eq!(CatalogName::parse(""), Err(CatalogNameError::Empty));
        assert_eq!(CatalogName::parse(&"x".repeat(65)), Err(CatalogNameError::TooLong));
        assert_eq!(CatalogName::parse("-azul"), Err(CatalogNameError::BadStart));
        for bad in ["Azul", "time azul", "time_azul", "padrão", "a/b", " padrao", "padrao\n"] {
            assert_eq!(CatalogName::parse(bad), Err(CatalogNameError::BadCharacter), "{bad:?}");
        }
        assert!(CatalogNameError::BadCharacter.to_string().contains("catálogo"));
    }
}
