//! [`ApiKey`]: the shared secret of the HTTP backend, compared in constant time and never printed.

use std::fmt;

use subtle::ConstantTimeEq;

/// The API key a client must present as `Authorization: Bearer <key>`.
///
/// Its `Debug` and `Display` are redacted, so it cannot reach a log by accident; only
/// [`ApiKey::expose`] gives the text, for the one place that prints a generated key.
#[derive(Clone)]
pub struct ApiKey(String);

/// Why a text is not an acceptable API key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApiKeyError {
    /// Empty, or only whitespace.
    #[error("the API key is empty")]
    Empty,
    /// Contains a character that cannot travel in an HTTP header (control characters, non-ASCII, spaces).
    #[error("the API key must be visible ASCII characters without spaces")]
    NotAHeaderToken,
    /// Shorter than [`ApiKey::MIN_CHARS`]: guessable (the length is said, never the key).
    #[error("the API key has {actual} characters; use at least {minimum} (`openssl rand -hex 32` makes one)")]
    TooShort {
        /// [`ApiKey::MIN_CHARS`].
        minimum: usize,
        /// The configured key's length.
        actual: usize,
    },
}

impl ApiKey {
    /// Bytes of randomness in a generated key (256 bits).
    const GENERATED_BYTES: usize = 32;
    /// The shortest key accepted: 16 characters (a one-character key was accepted; 16 random
    /// hex digits are 64 bits, and generated keys have 68 characters).
    pub const MIN_CHARS: usize = 16;

    /// Checks a configured key.
    ///
    /// # Errors
    /// [`ApiKeyError`] when the key is empty or cannot be sent in a header.
    pub fn parse(text: &str) -> Result<Self, ApiKeyError> {
        if text.trim().is_empty() {
            return Err(ApiKeyError::Empty);
        }
        if !text.bytes().all(|byte| byte.is_ascii_graphic()) {
            return Err(ApiKeyError::NotAHeaderToken);
        }
        if text.len() < Self::MIN_CHARS {
            return Err(ApiKeyError::TooShort { minimum: Self::MIN_CHARS, actual: text.len() });
        }
        Ok(Self(text.to_owned()))
    }

    /// A fresh key from the operating system's secure random source: `mcp_` and 64 hex digits.
    ///
    /// # Errors
    /// When the operating system cannot provide randomness.
    pub fn generate() -> Result<Self, getrandom::Error> {
        let mut bytes = [0_u8; Self::GENERATED_BYTES];
        getrandom::fill(&mut bytes)?;
        let mut text = String::with_capacity(4 + 2 * bytes.len());
        text.push_str("mcp_");
        for byte in bytes {
            text.push_str(&format!("{byte:02x}"));
        }
        Ok(Self(text))
    }

    /// True when `presented` is this key. Constant time in the key's content (a length mismatch
    /// answers early, which reveals only the length).
    #[must_use]
    pub fn matches(&self, presented: &[u8]) -> bool {
        self.0.as_bytes().ct_eq(presented).into()
    }

    /// The key's text, for the one-time message that hands a generated key to its operator.
    #[must_use]
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("ApiKey(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_matches_itself_only() {
        let key = ApiKey::parse("segredo-de-teste").expect("valid");
        assert!(key.matches(b"segredo-de-teste"));
        assert!(!key.matches(b"segredo-de-testE"));
        assert!(!key.matches(b"segredo-de-test"));
        assert!(!key.matches(b""));
    }

    #[test]
    fn a_generated_key_is_long_random_and_different_each_time() {
        let first = ApiKey::generate().expect("randomness");
        let second = ApiKey::generate().expect("randomness");
        assert_eq!(first.expose().len(), 68);
        assert!(first.expose().starts_with("mcp_"));
        assert_ne!(first.expose(), second.expose());
    }

    #[test]
    fn a_key_never_shows_in_debug_output() {
        let key = ApiKey::parse("segredo-de-teste").expect("valid");
        assert!(!format!("{key:?}").contains("segredo"));
    }

    #[test]
    fn an_empty_or_unsendable_key_is_refused() {
        assert_eq!(ApiKey::parse("").map(|_| ()), Err(ApiKeyError::Empty));
        assert_eq!(ApiKey::parse("   ").map(|_| ()), Err(ApiKeyError::Empty));
        assert_eq!(ApiKey::parse("com espaço").map(|_| ()), Err(ApiKeyError::NotAHeaderToken));
        assert_eq!(ApiKey::parse("chave\n").map(|_| ()), Err(ApiKeyError::NotAHeaderToken));
    }

    #[test]
    fn a_short_key_is_refused_saying_its_length_never_its_text() {
        let refused = ApiKey::parse("x").map(|_| ()).expect_err("one character");
        assert_eq!(refused, ApiKeyError::TooShort { minimum: 16, actual: 1 });
        let refused = ApiKey::parse("quinze-letras-a").map(|_| ()).expect_err("15");
        assert!(!refused.to_string().contains("quinze"), "{refused}");
        assert!(ApiKey::parse("dezesseis-letras").is_ok());
    }
}
