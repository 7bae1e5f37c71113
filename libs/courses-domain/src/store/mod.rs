//! Persistence, in layers that import one way: [`port`] (the [`CourseStore`](port::CourseStore)
//! trait every store implements, and its types) ← [`sql`] (what the SQL stores share, written once
//! for any [`SqlBackend`](sql::SqlBackend)) ← [`sqlite`] and [`postgres`] (each backend's own part)
//! ← [`copy`] (the copy between two stores).
//!
//! **Architecture invariant:** the shared SQL layer never names a backend module: what differs
//! per backend is a trait it declares and each backend implements. Nothing here imports the
//! catalog (but tests that drive a store through it).

pub(crate) mod copy;
pub(crate) mod port;
pub(crate) mod postgres;
pub(crate) mod sql;
pub(crate) mod sqlite;
