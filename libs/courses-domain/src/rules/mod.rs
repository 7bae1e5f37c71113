//! The catalog's rules as types: the newtypes that parse at the boundary, the entity [`Course`],
//! its history and paging. Everything else in the crate builds on these.
//!
//! **Architecture invariant:** plain values and pure functions: nothing here imports the database
//! library, the async runtime, the store or the catalog (only `std`, `time`, `uuid`,
//! `unicode-normalization`, `thiserror`, and each other through this module).

mod catalog_name;
mod course;
mod course_id;
mod course_title;
mod history;
mod idempotency_key;
mod page;
mod workload_hours;

pub use catalog_name::{CatalogName, CatalogNameError};
pub use course::{CLOCK_SKEW, Course, CourseChanges, CourseRevision, ImportedCourseError, NewCourse};
pub(crate) use course::{ChangeRefusal, truncate_to_millis};
pub use course_id::{CourseId, CourseIdError};
pub(crate) use course_title::{COMPARISON_KEY_RULE, Rekey, StoredKey, plan_rekey, transient_key};
pub use course_title::{CourseTitle, CourseTitleError, TitleSearchKey, code_point, comparison_key_of};
pub use history::{ApprovalReceipt, Evidence, HistoryEntry, HistoryPage, Provenance};
pub use idempotency_key::{CreationFingerprint, IdempotencyKey, IdempotencyKeyError};
pub use page::{CoursePage, PageCursor, PageCursorError, PageSize};
pub use workload_hours::{WorkloadHours, WorkloadHoursError};
