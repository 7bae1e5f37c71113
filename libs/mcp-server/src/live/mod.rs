//! Live updates (ADR 0022): who listens to what, the bounds on what they may hold, and telling
//! them when the catalog or the operator's policy changes.

pub(crate) mod admission;
pub(crate) mod hub;
pub(crate) mod mailbox;
