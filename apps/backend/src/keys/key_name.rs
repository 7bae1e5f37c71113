//! [`KeyName`]: the name of an API key, which is also the caller's name in the history.

use std::fmt;

/// A key's name: 1 to 64 characters among `a-z`, `0-9`, `.`, `_` and `-`.
///
/// The name is what the history records as "who" and what the rate limit counts by, so it is
/// kept short, readable in logs and free of anything a terminal or a log parser would trip on.
/// A few names belong to callers that are not keys (`api-key`, `sem-autenticacao`, `stdio`):
/// [`KeyName::parse_for_keys_file`] refuses them so that no key can pass for one of those.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KeyName(String);

/// Why a text is not a key name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyNameError {
    /// Empty or longer than 64 characters.
    #[error("a key name has 1 to 64 characters")]
    Length,
    /// A character outside `a-z0-9._-`.
    #[error("a key name uses only a-z, 0-9, '.', '_' and '-'")]
    Character,
    /// One of the names kept for callers that are not keys in the keys file.
    #[error("the key name {0:?} is reserved")]
    Reserved(&'static str),
}

impl KeyName {
    /// The longest name accepted.
    pub const MAX_LENGTH: usize = 64;

    /// The name of the key given as `API_KEY` (or generated at start).
    pub const API_KEY: &'static str = "api-key";

    /// The caller name used when `NO_AUTH` serves `/mcp` without keys.
    pub const NO_AUTH: &'static str = "sem-autenticacao";

    /// Names a keys file may not use: they belong to `API_KEY`, `NO_AUTH` and the stdio app.
    pub const RESERVED: [&'static str; 3] = [Self::API_KEY, Self::NO_AUTH, mcp_server::Caller::STDIO_NAME];

    /// Checks a name's length and characters.
    ///
    /// # Errors
    /// [`KeyNameError::Length`] or [`KeyNameError::Character`].
    pub fn parse(text: &str) -> Result<Self, KeyNameError> {
        if text.is_empty() || text.len() > Self::MAX_LENGTH {
            return Err(KeyNameError::Length);
        }
        if !text.bytes().all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || b"._-".contains(&byte)) {
            return Err(KeyNameError::Character);
        }
        Ok(Self(text.to_owned()))
    }

    /// [`KeyName::parse`], also refusing the [reserved](Self::RESERVED) names.
    ///
    /// # Errors
    /// As [`KeyName::parse`], and [`KeyNameError::Reserved`].
    pub fn parse_for_keys_file(text: &str) -> Result<Self, KeyNameError> {
        let name = Self::parse(text)?;
        match Self::RESERVED.iter().find(|reserved| **reserved == text) {
            Some(reserved) => Err(KeyNameError::Reserved(reserved)),
            None => Ok(name),
        }
    }

    /// The name's text.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for KeyName {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_lowercase_name_with_dots_dashes_and_underscores_is_accepted() {
        for text in ["leitor", "ci.deploy-2", "a", "equipe_dados", &"x".repeat(64)] {
            assert_eq!(KeyName::parse(text).expect("valid").as_str(), text);
        }
    }

    #[test]
    fn an_empty_or_too_long_name_is_refused() {
        assert_eq!(KeyName::parse(""), Err(KeyNameError::Length));
        assert_eq!(KeyName::parse(&"x".repeat(65)), Err(KeyNameError::Length));
    }

    #[test]
    fn upper_case_spaces_and_other_characters_are_refused() {
        for text in ["Leitor", "com espaço", "a/b", "a:b", "ção", "a\tb", "#comentario"] {
            assert_eq!(KeyName::parse(text), Err(KeyNameError::Character), "{text}");
        }
    }

    #[test]
    fn names_of_callers_that_are_not_keys_are_reserved_in_a_keys_file() {
        for text in ["api-key", "sem-autenticacao", "stdio"] {
            assert!(KeyName::parse(text).is_ok());
            assert!(matches!(KeyName::parse_for_keys_file(text), Err(KeyNameError::Reserved(_))), "{text}");
        }
        assert!(KeyName::parse_for_keys_file("leitor").is_ok());
    }
}
