//! [`IdempotencyKey`]: the caller's name for one creation, so that a retry creates nothing new.

use std::fmt;

use super::NewCourse;

/// A caller-chosen key (1 to [`IdempotencyKey::MAX_CHARS`] characters, no control characters, no
/// surrounding whitespace) that makes a creation idempotent.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IdempotencyKey(String);

/// Why a text is not an [`IdempotencyKey`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdempotencyKeyError {
    /// Nothing is left after trimming.
    #[error("the idempotency key is empty")]
    Empty,
    /// Longer than [`IdempotencyKey::MAX_CHARS`].
    #[error("the idempotency key is longer than {max} characters", max = IdempotencyKey::MAX_CHARS)]
    TooLong,
    /// Contains a control character.
    #[error("the idempotency key contains a control character")]
    ControlCharacter,
}

impl IdempotencyKey {
    /// The longest key accepted, in characters.
    pub const MAX_CHARS: usize = 200;

    /// Trims and checks a key.
    ///
    /// # Errors
    /// [`IdempotencyKeyError`] naming the rule the text breaks.
    pub fn parse(text: &str) -> Result<Self, IdempotencyKeyError> {
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return Err(IdempotencyKeyError::Empty);
        }
        if trimmed.chars().any(char::is_control) {
            return Err(IdempotencyKeyError::ControlCharacter);
        }
        if trimmed.chars().count() > Self::MAX_CHARS {
            return Err(IdempotencyKeyError::TooLong);
        }
        Ok(Self(trimmed.to_owned()))
    }

    /// The key's text.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for IdempotencyKey {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.0)
    }
}

/// What a creation under an [`IdempotencyKey`] asked for, stored with the key: a retry with the
/// same key is a replay only if its fingerprint is the same. The text is the title as written, a
/// unit separator (U+001F, which no title holds) and the workload: fixed, since stored
/// fingerprints are compared with new ones.
///
/// **Invariant:** made only from a [`NewCourse`] (`CreationFingerprint::of`, crate-private).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreationFingerprint(String);

impl CreationFingerprint {
    /// The fingerprint of a request to create `new_course`.
    pub(crate) fn of(new_course: &NewCourse) -> Self {
        Self(format!("{}\u{1f}{}", new_course.title.as_str(), new_course.workload_hours))
    }

    /// The fingerprint's text, as stored.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Stored fingerprints are compared with new ones: their text must never change.
    #[test]
    fn a_fingerprint_is_the_title_as_written_and_the_workload() {
        let new_course = NewCourse {
            title: crate::rules::CourseTitle::parse(" Rust  Avançado ").expect("title"),
            workload_hours: crate::rules::WorkloadHours::parse(40).expect("hours"),
        };
        assert_eq!(CreationFingerprint::of(&new_course).as_str(), "Rust  Avançado\u{1f}40");
    }

    #[test]
    fn a_key_is_trimmed_and_kept_as_written() {
        assert_eq!(
            IdempotencyKey::parse("  pedido-42 ").map(|key| key.as_str().to_owned()),
            Ok("pedido-42".to_owned())
        );
    }

    #[test]
    fn an_empty_long_or_control_character_key_is_refused() {
        assert_eq!(IdempotencyKey::parse(" "), Err(IdempotencyKeyError::Empty));
        assert_eq!(IdempotencyKey::parse(&"k".repeat(201)), Err(IdempotencyKeyError::TooLong));
        assert_eq!(IdempotencyKey::parse("a\nb"), Err(IdempotencyKeyError::ControlCharacter));
    }
}
