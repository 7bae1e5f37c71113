//! The questions already answered: an answer spends its question, so a question declined or
//! cancelled cannot later be answered yes, nor an accepted one replayed (issue 23, ADR 0044).
//!
//! Each sealed question carries a random nonce; the first answer that opens it records the nonce
//! here until the question would have expired anyway ([`super::confirmation::ANSWER_TIMEOUT`]).
//! The record is this process's: replicas that share a confirmation secret do not share it (the
//! caveat is in ADR 0044). It is bounded: when [`CAPACITY`] unexpired answers are held, a new
//! answer is refused (fail closed) rather than forgetting one that could then be replayed.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The most answers remembered at once (each about 60 bytes: 4 MiB at most).
pub(crate) const CAPACITY: usize = 65_536;

/// Why an answer cannot spend its question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NotSpent {
    /// The question was answered before (declined, cancelled or accepted).
    AlreadyAnswered,
    /// [`CAPACITY`] answers are remembered and none has expired.
    Full,
}

/// The nonces of the questions answered, each until its question expires.
#[derive(Debug)]
pub(crate) struct SpentAnswers {
    answered: Mutex<HashMap<String, Instant>>,
    lifetime: Duration,
    capacity: usize,
}

impl SpentAnswers {
    /// Remembers each answer for `lifetime` (the questions' time to live).
    pub(crate) fn new(lifetime: Duration) -> Self {
        Self::with_capacity(lifetime, CAPACITY)
    }

    fn with_capacity(lifetime: Duration, capacity: usize) -> Self {
        Self { answered: Mutex::new(HashMap::new()), lifetime, capacity }
    }

    /// Spends the question `nonce` at `now`.
    ///
    /// # Errors
    /// [`NotSpent`] when it was answered before, or when no answer can be remembered now.
    pub(crate) fn spend(&self, nonce: &str, now: Instant) -> Result<(), NotSpent> {
        let mut answered = self.answered.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if answered.get(nonce).is_some_and(|until| *until > now) {
            return Err(NotSpent::AlreadyAnswered);
        }
        if answered.len() >= self.capacity {
            answered.retain(|_, until| *until > now);
            if answered.len() >= self.capacity {
                return Err(NotSpent::Full);
            }
        }
        answered.insert(nonce.to_owned(), now + self.lifetime);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_question_is_spent_by_its_first_answer_until_it_would_have_expired() {
        let spent = SpentAnswers::new(Duration::from_secs(300));
        let now = Instant::now();
        assert_eq!(spent.spend("a", now), Ok(()));
        assert_eq!(spent.spend("a", now + Duration::from_secs(299)), Err(NotSpent::AlreadyAnswered));
        assert_eq!(spent.spend("b", now), Ok(()), "another question");
        // Past its lifetime the sealed question no longer opens; forgetting it is safe.
        assert_eq!(spent.spend("a", now + Duration::from_secs(301)), Ok(()));
    }

    #[test]
    fn when_full_expired_answers_are_forgotten_and_otherwise_new_answers_are_refused() {
        let spent = SpentAnswers::with_capacity(Duration::from_secs(10), 2);
        let now = Instant::now();
        assert_eq!(spent.spend("a", now), Ok(()));
        assert_eq!(spent.spend("b", now + Duration::from_secs(5)), Ok(()));
        assert_eq!(spent.spend("c", now + Duration::from_secs(6)), Err(NotSpent::Full), "fail closed");
        assert_eq!(spent.spend("a", now + Duration::from_secs(6)), Err(NotSpent::AlreadyAnswered));
        // "a" expired: its room is taken back, "b" is still remembered.
        assert_eq!(spent.spend("c", now + Duration::from_secs(11)), Ok(()));
        assert_eq!(spent.spend("b", now + Duration::from_secs(12)), Err(NotSpent::AlreadyAnswered));
    }
}
