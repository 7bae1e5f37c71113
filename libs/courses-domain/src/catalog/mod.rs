//! The service: [`Catalog`]'s operations, each with its own error type, over any
//! [`CourseStore`](crate::store::port::CourseStore), and the observers told of every write;
//! `import.rs` the import's rules (duplicates in a file, passes, a batch's outcomes: ADR 0040).
//!
//! **Architecture invariant:** the catalog knows the store only through its port: nothing here
//! (but the tests, which run every rule on both backends) names a concrete store or the SQL layer.

mod import;
mod service;
#[cfg(test)]
pub(crate) mod tests;

pub use import::{ImportPass, ImportRefusal, InFileDuplicates, RowOutcome};
pub use service::{
    ArchiveCourseError, Catalog, CatalogObserver, CourseChange, CreateCourseError, Created, GetCourseError, NotReady,
    UpdateCourseError,
};
