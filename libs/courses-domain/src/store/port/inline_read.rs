//! A read on the async runtime's worker never waits for a connection (ADR 0021, amended by
//! issue 14).
//!
//! The `Catalog` runs a bounded read of a store that
//! [`reads_inline`](super::CourseStore::reads_inline) inside [`attempt`]. There the store takes a
//! pooled connection only if one is free now ([`may_wait`] is false); when none is, it calls
//! [`no_connection_free`] and fails the read, and the catalog runs the read again on the blocking
//! pool, where waiting for a connection holds no worker. Before, a burst of reads beyond the pool
//! parked the workers in the pool's wait (up to its 30 s timeout), and nothing else, not even
//! `/ready`'s own timeout, ran on them meanwhile.

use std::cell::Cell;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Not in an inline read: a store may wait for a connection.
    Outside,
    /// In an inline read: a store must not wait.
    Inline,
    /// In an inline read that found no connection free.
    Refused,
}

thread_local! {
    static STATE: Cell<State> = const { Cell::new(State::Outside) };
}

/// Runs `read` as an inline read on this thread: its value, or `None` when the store found no
/// connection free (the value, an error, is dropped: run the read elsewhere).
pub(crate) fn attempt<T>(read: impl FnOnce() -> T) -> Option<T> {
    /// Restores the state even if `read` panics.
    struct Restore(State);
    impl Drop for Restore {
        fn drop(&mut self) {
            STATE.with(|state| state.set(self.0));
        }
    }
    let restore = Restore(STATE.with(|state| state.replace(State::Inline)));
    let value = read();
    let refused = STATE.with(Cell::get) == State::Refused;
    drop(restore);
    (!refused).then_some(value)
}

/// Whether a store may wait for a connection on this thread (false inside [`attempt`]).
pub(crate) fn may_wait() -> bool {
    STATE.with(Cell::get) == State::Outside
}

/// Tells [`attempt`] that the store found no connection free, so the read must run elsewhere.
pub(crate) fn no_connection_free() {
    STATE.with(|state| {
        if state.get() == State::Inline {
            state.set(State::Refused);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_that_found_no_connection_free_is_refused_and_the_thread_may_wait_again() {
        assert!(may_wait());
        assert_eq!(attempt(may_wait), Some(false));
        assert_eq!(
            attempt(|| {
                no_connection_free();
                "an error"
            }),
            None
        );
        assert!(may_wait(), "outside an inline read again");
        no_connection_free();
        assert!(may_wait(), "outside an inline read, nothing is refused");
    }
}
