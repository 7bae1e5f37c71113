//! [`RateLimit`]: an optional per-key limit on requests per minute, as one token bucket per key.
//!
//! Each key name has its own bucket of `per_minute` tokens, refilled continuously at
//! `per_minute / 60` tokens a second; a request takes one token. So a key may send a burst of up
//! to a minute's allowance, then one request every `60 / per_minute` seconds. Keys never share a
//! bucket. Written by hand (about thirty lines) rather than with `governor`: the rule fits on a
//! screen, the only state is a map from the key names (which only authenticated keys create, so
//! it stays as small as the keys file), and the test can drive the clock.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Requests per minute allowed to each key.
#[derive(Debug)]
pub struct RateLimit {
    per_minute: NonZeroU32,
    buckets: Mutex<HashMap<String, Bucket>>,
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    updated: Instant,
}

impl RateLimit {
    /// `per_minute` requests a minute for each key, with a burst of as many.
    #[must_use]
    pub fn per_minute(per_minute: NonZeroU32) -> Self {
        Self { per_minute, buckets: Mutex::new(HashMap::new()) }
    }

    fn tokens_per_second(&self) -> f64 {
        f64::from(self.per_minute.get()) / 60.0
    }

    /// Takes one token from `key`'s bucket at `now`.
    ///
    /// # Errors
    /// When the bucket is empty: how long until it holds a token again, rounded up to whole
    /// seconds and at least one (what `Retry-After` says). Nothing is taken then.
    pub fn check(&self, key: &str, now: Instant) -> Result<(), RetryAfter> {
        let capacity = f64::from(self.per_minute.get());
        let mut buckets = self.buckets.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let bucket = buckets.entry(key.to_owned()).or_insert(Bucket { tokens: capacity, updated: now });
        let elapsed = now.saturating_duration_since(bucket.updated).as_secs_f64();
        bucket.tokens = (bucket.tokens + elapsed * self.tokens_per_second()).min(capacity);
        bucket.updated = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            return Ok(());
        }
        let wait = (1.0 - bucket.tokens) / self.tokens_per_second();
        Err(RetryAfter(Duration::from_secs_f64(wait)))
    }
}

/// How long a refused key should wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryAfter(Duration);

impl RetryAfter {
    /// Whole seconds, rounded up, at least 1: the value of the `Retry-After` header.
    #[must_use]
    pub fn seconds(self) -> u64 {
        let whole = self.0.as_secs() + u64::from(self.0.subsec_nanos() > 0);
        whole.max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limit(per_minute: u32) -> RateLimit {
        RateLimit::per_minute(NonZeroU32::new(per_minute).expect("not zero"))
    }

    #[test]
    fn a_key_may_burst_up_to_the_limit_then_is_told_when_to_come_back() {
        let limit = limit(3);
        let start = Instant::now();
        for _ in 0..3 {
            assert_eq!(limit.check("ci", start), Ok(()));
        }
        let refused = limit.check("ci", start).expect_err("over the limit");
        assert_eq!(refused.seconds(), 20, "one token every 60/3 seconds");
        let refused_later = limit.check("ci", start + Duration::from_millis(19_500)).expect_err("still empty");
        assert_eq!(refused_later.seconds(), 1, "rounded up, never 0");
        assert_eq!(limit.check("ci", start + Duration::from_secs(20)), Ok(()), "refilled");
    }

    #[test]
    fn keys_never_share_a_bucket() {
        let limit = limit(1);
        let now = Instant::now();
        assert_eq!(limit.check("leitor", now), Ok(()));
        assert!(limit.check("leitor", now).is_err());
        assert_eq!(limit.check("ci", now), Ok(()), "another key has its own allowance");
    }

    #[test]
    fn a_bucket_refills_to_its_capacity_and_no_more() {
        let limit = limit(2);
        let start = Instant::now();
        assert_eq!(limit.check("ci", start), Ok(()));
        let much_later = start + Duration::from_secs(3600);
        assert_eq!(limit.check("ci", much_later), Ok(()));
        assert_eq!(limit.check("ci", much_later), Ok(()));
        assert!(limit.check("ci", much_later).is_err(), "an idle hour does not bank more than the burst");
    }

    #[test]
    fn a_refused_request_takes_no_token() {
        let limit = limit(60);
        let start = Instant::now();
        for _ in 0..60 {
            limit.check("ci", start).expect("within the burst");
        }
        for _ in 0..100 {
            assert!(limit.check("ci", start).is_err());
        }
        assert_eq!(limit.check("ci", start + Duration::from_secs(1)), Ok(()), "one second buys one request");
    }
}
