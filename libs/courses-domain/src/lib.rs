//! The course catalog's domain: its rules and its persistence.
//!
//! - Newtypes that parse at the boundary: [`CourseId`], [`CourseTitle`], [`WorkloadHours`].
//!   A value of one of these types already passed its rule.
//! - [`CatalogName`]: which tenant's catalog an operation is in (ADR 0035).
//! - The entity [`Course`] and the operations of the [`Catalog`], each with its own error type.
//! - The persistence seam [`CourseStore`], its default implementation [`SqliteStore`], and
//!   [`PostgresStore`] for a shared PostgreSQL database.
//!
//! **Architecture invariant:** this crate knows nothing of MCP, JSON-RPC, HTTP or serialization.
//! Its types derive neither `Serialize` nor `JsonSchema`; the server library converts them by hand.

#![deny(missing_docs)]

mod catalog;
mod database_settings;
mod inline_read;
mod migration;
mod postgres;
mod rules;
mod sql_store;
mod sqlite;
mod sqlite_backup;
mod sqlite_file;
mod sqlite_follow;
mod sqlite_read_cache;
mod sqlite_writer;
mod store;

#[cfg(test)]
mod catalog_tests;
#[cfg(test)]
mod sqlite_failure_tests;
#[cfg(any(test, feature = "test-support"))]
#[doc(hidden)]
pub mod testing;

pub use catalog::{
    ArchiveCourseError, Catalog, CatalogObserver, CourseChange, CreateCourseError, Created, GetCourseError, NotReady,
    UpdateCourseError,
};
pub use database_settings::{DatabaseSettingError, OpenedDatabase, open_database};
pub use migration::{
    Endpoint, MigrateError, MigrationPhase, MigrationProgress, MigrationReport, NonEmptyTarget, migrate,
};
pub use postgres::{CHANGES_CHANNEL, FOLLOW_POLL, OpenPostgresStoreError, PostgresStore};
pub use rules::{ApprovalReceipt, Evidence, HistoryEntry, HistoryPage, Provenance};
pub use rules::{CatalogName, CatalogNameError};
pub use rules::{Course, CourseChanges, CourseRevision, ImportedCourseError, NewCourse};
pub use rules::{CourseId, CourseIdError};
pub use rules::{CoursePage, PageCursor, PageCursorError, PageSize};
pub use rules::{CourseTitle, CourseTitleError, TitleSearchKey, code_point, comparison_key_of};
pub use rules::{CreationFingerprint, IdempotencyKey, IdempotencyKeyError};
pub use rules::{WorkloadHours, WorkloadHoursError};
pub use sqlite::{OpenStoreError, SqliteStore};
pub use sqlite_backup::{BackupError, BackupReport, RestoreError, RestoreReport, backup_sqlite, restore_sqlite};
pub use sqlite_follow::SQLITE_FOLLOW_POLL;
pub use store::{
    ChangeFollower, CourseStore, ExportEnd, ExportSink, IdempotentInsert, ImportOutcome, PoolStatus, RemoteChange,
    Replaced, StoreError, Unwritable, WriteError,
};
pub use time::OffsetDateTime;
