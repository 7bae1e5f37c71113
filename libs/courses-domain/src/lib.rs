//! The course catalog's domain: its rules and its persistence.
//!
//! - Newtypes that parse at the boundary: [`CourseId`], [`CourseTitle`], [`WorkloadHours`].
//!   A value of one of these types already passed its rule.
//! - [`CatalogName`]: which tenant's catalog an operation is in (ADR 0035).
//! - The entity [`Course`] and the operations of the [`Catalog`], each with its own error type.
//! - The persistence seam [`CourseStore`], its default implementation [`SqliteStore`], and
//!   [`PostgresStore`] for a shared PostgreSQL database.
//!
//! The folders are the layers, each importing only those before it: `rules/` (the types) ←
//! `store/` (the port, then the shared SQL layer, then each backend, then the copy between
//! stores) and `catalog/` (the service, over the port only) ← `open.rs` (a catalog on the store
//! the apps' settings choose). This file is only the crate's face.
//!
//! **Architecture invariant:** this crate knows nothing of MCP, JSON-RPC, HTTP or serialization.
//! Its types derive neither `Serialize` nor `JsonSchema`; the server library converts them by hand.

#![deny(missing_docs)]

mod catalog;
mod open;
mod rules;
mod store;

#[cfg(any(test, feature = "test-support"))]
#[doc(hidden)]
pub mod testing;

pub use catalog::{
    ArchiveCourseError, Catalog, CatalogObserver, CourseChange, CreateCourseError, Created, GetCourseError, ImportPass,
    ImportRefusal, InFileDuplicates, NotReady, RowOutcome, UpdateCourseError,
};
pub use open::{DatabaseSettingError, DatabaseSettingNames, OpenedDatabase, open_database};
pub use rules::{
    ApprovalReceipt, CLOCK_SKEW, CatalogName, CatalogNameError, Course, CourseChanges, CourseId, CourseIdError,
    CoursePage, CourseRevision, CourseTitle, CourseTitleError, CreationFingerprint, Evidence, HistoryEntry,
    HistoryPage, IdempotencyKey, IdempotencyKeyError, ImportedCourseError, NewCourse, PageCursor, PageCursorError,
    PageSize, Provenance, TitleSearchKey, WorkloadHours, WorkloadHoursError, code_point, comparison_key_of,
};
pub use store::copy::{Endpoint, MigrateError, MigrationReport, NonEmptyTarget, migrate};
pub use store::port::{
    BulkImport, ChangeFollower, CourseStore, ExportEnd, ExportSink, IdempotentInsert, ImportOutcome, MigrationPhase,
    MigrationProgress, PendingRead, PoolStatus, RemoteChange, Replaced, StoreError, Unwritable, WriteError,
};
pub use store::postgres::{CHANGES_CHANNEL, FOLLOW_POLL, OpenPostgresStoreError, PostgresStore};
pub use store::sqlite::backup::{
    BackupError, BackupReport, RestoreError, RestoreReport, backup_sqlite, restore_sqlite,
};
pub use store::sqlite::follow::SQLITE_FOLLOW_POLL;
pub use store::sqlite::{OpenStoreError, SqliteStore};
pub use time::OffsetDateTime;
