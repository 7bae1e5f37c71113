//! [`CourseTitle`]: a course's validated title.

use std::fmt;

/// A course title: trimmed, 1 to [`CourseTitle::MAX_CHARS`] characters, no control characters.
///
/// Two titles are the same title for the catalog's uniqueness rule when their
/// [`comparison_key`](CourseTitle::comparison_key)s are equal.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CourseTitle(String);

/// Why a text is not a [`CourseTitle`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CourseTitleError {
    /// Nothing is left after trimming.
    #[error("the title is empty")]
    Empty,
    /// Longer than [`CourseTitle::MAX_CHARS`] characters after trimming.
    #[error("the title has {chars} characters; the maximum is {max}", max = CourseTitle::MAX_CHARS)]
    TooLong {
        /// How many characters the trimmed title has.
        chars: usize,
    },
    /// Contains a control character (newline, tab, NUL, escape, ...).
    #[error("the title contains a control character")]
    ControlCharacter,
}

impl CourseTitle {
    /// The longest title accepted, in characters (Unicode scalar values), after trimming.
    pub const MAX_CHARS: usize = 200;

    /// Trims the text and checks the title rules.
    ///
    /// # Errors
    /// [`CourseTitleError`] naming the rule the text breaks.
    pub fn parse(text: &str) -> Result<Self, CourseTitleError> {
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return Err(CourseTitleError::Empty);
        }
        if trimmed.chars().any(char::is_control) {
            return Err(CourseTitleError::ControlCharacter);
        }
        let chars = trimmed.chars().count();
        if chars > Self::MAX_CHARS {
            return Err(CourseTitleError::TooLong { chars });
        }
        Ok(Self(trimmed.to_owned()))
    }

    /// The title as the user wrote it, trimmed.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The key under which two active courses may not coexist: lowercase, with inner whitespace
    /// collapsed to single spaces. `"Arquitetura   de Software"` and `"arquitetura de software"`
    /// have the same key.
    #[must_use]
    pub fn comparison_key(&self) -> String {
        comparison_key_of(&self.0)
    }
}

/// The comparison key of any text, as [`CourseTitle::comparison_key`] computes it for titles:
/// trimmed, inner whitespace collapsed to single spaces, lowercase. Control characters are dropped.
/// Searches use it so that what a user types matches the way titles are compared.
#[must_use]
pub fn comparison_key_of(text: &str) -> String {
    let without_controls: String =
        text.chars().filter(|character| !character.is_control() || character.is_whitespace()).collect();
    without_controls.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase()
}

impl fmt::Display for CourseTitle {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_title_is_trimmed() {
        let title = CourseTitle::parse("  Arquitetura de Software \u{3000}").expect("valid title");
        assert_eq!(title.as_str(), "Arquitetura de Software");
    }

    #[test]
    fn an_empty_or_blank_title_is_refused() {
        assert_eq!(CourseTitle::parse(""), Err(CourseTitleError::Empty));
        assert_eq!(CourseTitle::parse(" \u{a0}  "), Err(CourseTitleError::Empty));
    }

    #[test]
    fn a_title_of_exactly_200_characters_is_accepted_and_201_is_refused() {
        let max = "é".repeat(200);
        assert_eq!(CourseTitle::parse(&max).map(|title| title.as_str().chars().count()), Ok(200));
        assert_eq!(CourseTitle::parse(&format!("{max}a")), Err(CourseTitleError::TooLong { chars: 201 }));
    }

    #[test]
    fn the_length_limit_counts_characters_after_trimming() {
        let padded = format!("   {}   ", "a".repeat(200));
        assert!(CourseTitle::parse(&padded).is_ok());
    }

    #[test]
    fn a_title_with_a_control_character_is_refused() {
        for text in ["Rust\nAvançado", "Rust\tAvançado", "Rust\u{0}", "Rust\u{1b}[31m", "Rust\u{7f}"] {
            assert_eq!(CourseTitle::parse(text), Err(CourseTitleError::ControlCharacter), "{text:?}");
        }
    }

    #[test]
    fn titles_differing_only_in_case_and_inner_whitespace_share_a_comparison_key() {
        let first = CourseTitle::parse("Arquitetura   de Software").expect("valid title");
        let second = CourseTitle::parse(" arquitetura de SOFTWARE").expect("valid title");
        assert_eq!(first.comparison_key(), second.comparison_key());
        assert_ne!(first, second, "the stored titles keep the user's spelling");
    }

    #[test]
    fn case_folding_covers_non_ascii_letters() {
        let first = CourseTitle::parse("INTRODUÇÃO À ÁLGEBRA").expect("valid title");
        let second = CourseTitle::parse("introdução à álgebra").expect("valid title");
        assert_eq!(first.comparison_key(), second.comparison_key());
    }
}
