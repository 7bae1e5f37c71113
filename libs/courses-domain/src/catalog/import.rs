//! The import's rules (ADR 0040), as typed refusals with no text (the server library words them):
//! which passes an import runs, the duplicates within its file, and a batch of rows through the
//! store with its retry and each row's outcome.

use std::collections::{HashMap, HashSet};
use std::hash::{DefaultHasher, Hash, Hasher};

use super::service::Catalog;
use crate::rules::{Course, CourseId, Provenance};
use crate::store::port::{ImportOutcome, WriteError};

/// Why a row the rules of its fields accept is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImportRefusal {
    /// Its active title has the comparison key of the one on this earlier line of the file.
    TitleRepeatsLine(u64),
    /// Its course (this id) is on an earlier line of the file.
    IdRepeated(CourseId),
    /// Another active course of the catalog has its title.
    TitleTaken,
    /// Its id is a course of another catalog of the same database.
    IdOfAnotherCatalog,
}

/// What became of one row of a batch ([`Catalog::import_rows`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowOutcome {
    /// Stored (by a check: would be).
    Inserted,
    /// Its course (the same id) is already in the catalog: skipped.
    AlreadyPresent,
    /// Refused, nothing of it stored.
    Refused(ImportRefusal),
}

/// One pass of an import over its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImportPass {
    /// Every row against the rules, the file and the catalog; nothing written.
    Check,
    /// The valid rows written, in batches of one transaction each.
    Write,
    /// Into a database with no course at all, the writing before any check (ADR 0059): ONE
    /// transaction ([`BulkImport`](crate::store::port::BulkImport)) whose unique indexes find the file's
    /// duplicates. It reports nothing: at the first refused row or failure it rolls back whole,
    /// and the import runs again as it would have without it ([`Check`](Self::Check), then
    /// [`Write`](Self::Write)), whose check names every problem by its line.
    FirstTry,
}

impl ImportPass {
    /// Whether an import checks every row before it writes any: always but with `partial` (one
    /// pass that writes the valid rows); a `dry_run` only checks.
    #[must_use]
    pub const fn checks_first(partial: bool, dry_run: bool) -> bool {
        !partial || dry_run
    }

    /// Whether an import into a database with no course tries [`FirstTry`](Self::FirstTry) before
    /// anything else: unless `partial` (which writes the valid rows, so it must find the refused
    /// ones as it goes) or a `dry_run` (which writes nothing).
    #[must_use]
    pub const fn tries_first(partial: bool, dry_run: bool) -> bool {
        !partial && !dry_run
    }

    /// The finder of duplicates this pass keeps: the check's, and the writing's only when no check
    /// ran before it. A file that passed its check has no duplicates to find again, and the store
    /// still refuses a title taken and skips an id present; a [`FirstTry`](Self::FirstTry) leaves
    /// them to the store's unique indexes (no table of hashes beside its page cache).
    #[must_use]
    pub fn in_file_duplicates(self, checked_first: bool) -> Option<InFileDuplicates> {
        match self {
            Self::Check => Some(InFileDuplicates::default()),
            Self::Write => (!checked_first).then(InFileDuplicates::default),
            Self::FirstTry => None,
        }
    }
}

/// Duplicates within the file, in bounded memory: a 64-bit hash of each active title's comparison
/// key with the line that had it first, and a 64-bit hash of each id (13 and 9 bytes a slot of
/// the tables, not the rows; ids without their line, as a repeated id is rarer). Two distinct
/// titles with one hash would be refused as duplicates: at a million rows, a chance of about 3 in
/// 100 million, accepted (ADR 0040). A title's hash is kept as two `u32`s: with a `u64` key its
/// slot would be aligned to 16 bytes, and at a million rows the check pass peaked over 100 MB
/// while the tables doubled (101 MB for the 1M export's dry run, 88 MB since: `bench/RESULTS.md`).
#[derive(Debug, Default)]
pub struct InFileDuplicates {
    titles: HashMap<[u32; 2], u32>,
    ids: HashSet<u64>,
}

fn hash_of(value: impl Hash) -> u64 {
    let mut hasher = DefaultHasher::new();
    value.hash(&mut hasher);
    hasher.finish()
}

/// A 64-bit hash as two halves: a key of 4-byte alignment.
const fn halves(hash: u64) -> [u32; 2] {
    #[allow(clippy::cast_possible_truncation, reason = "the two halves of the hash, on purpose")]
    [(hash >> 32) as u32, hash as u32]
}

impl InFileDuplicates {
    /// Records the course of `line`, unless an earlier line of the file has its title or its id.
    ///
    /// # Errors
    /// [`ImportRefusal::TitleRepeatsLine`] (the title first: a row without id repeating a title has
    /// the same deterministic id too, and the title is what its author can see), or
    /// [`ImportRefusal::IdRepeated`].
    pub fn check(&mut self, line: u64, course: &Course) -> Result<(), ImportRefusal> {
        let key = (!course.is_archived()).then(|| halves(hash_of(course.title().key())));
        if let Some(first) = key.and_then(|key| self.titles.get(&key)) {
            return Err(ImportRefusal::TitleRepeatsLine(u64::from(*first)));
        }
        if !self.ids.insert(hash_of(course.id())) {
            return Err(ImportRefusal::IdRepeated(course.id()));
        }
        if let Some(key) = key {
            // Past 4,294,967,295 lines the line named is that one: no file of courses gets there.
            self.titles.insert(key, u32::try_from(line).unwrap_or(u32::MAX));
        }
        Ok(())
    }
}

impl Catalog {
    /// One batch of an import through the store ([`Catalog::import_batch`]): checked (read only)
    /// or written in one transaction, each row's outcome in order. A title taken by a concurrent
    /// rename between the batch's check and its insert fails the whole batch (nothing of it
    /// written); it is tried again, three times in all, and the store's check then refuses that
    /// row as taken. **Blocking**, as [`Catalog::import_batch`].
    ///
    /// # Errors
    /// [`WriteError`]: nothing of the batch was written (unless [`WriteError::OutcomeUnknown`]).
    pub fn import_rows(
        &self,
        courses: &[Course],
        provenance: &Provenance,
        pass: ImportPass,
    ) -> Result<Vec<RowOutcome>, WriteError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            match self.import_batch(courses, provenance, pass == ImportPass::Check) {
                Err(WriteError::DuplicateTitle) if attempt < 3 => {}
                outcome => return outcome.map(|outcomes| outcomes.into_iter().map(row_outcome).collect()),
            }
        }
    }
}

const fn row_outcome(outcome: ImportOutcome) -> RowOutcome {
    match outcome {
        ImportOutcome::Inserted => RowOutcome::Inserted,
        ImportOutcome::AlreadyPresent => RowOutcome::AlreadyPresent,
        ImportOutcome::TitleTaken => RowOutcome::Refused(ImportRefusal::TitleTaken),
        ImportOutcome::IdTaken => RowOutcome::Refused(ImportRefusal::IdOfAnotherCatalog),
    }
}

#[cfg(test)]
mod tests {
    use super::{ImportRefusal, InFileDuplicates};
    use crate::rules::{Course, CourseId, CourseTitle, NewCourse, WorkloadHours};

    // Not reached end to end (which covers a title repeated): an id repeated under another title,
    // and the titles of archived courses, which may repeat.
    #[test]
    fn a_file_repeats_no_active_title_nor_any_id() {
        let now = time::OffsetDateTime::now_utc();
        let course = |id, title, archived: bool| {
            let new = NewCourse {
                title: CourseTitle::parse(title).expect("valid"),
                workload_hours: WorkloadHours::parse(1).expect("valid"),
            };
            Course::imported(id, new, archived, 1 + u64::from(archived), now, now, now).expect("valid")
        };
        let (mut seen, first) = (InFileDuplicates::default(), CourseId::generate());
        assert_eq!(seen.check(2, &course(first, "Rust", false)), Ok(()));
        assert_eq!(seen.check(3, &course(CourseId::generate(), "Rust", true)), Ok(()), "archived");
        assert_eq!(
            seen.check(4, &course(CourseId::generate(), " RUST", false)),
            Err(ImportRefusal::TitleRepeatsLine(2))
        );
        assert_eq!(seen.check(5, &course(first, "Go", false)), Err(ImportRefusal::IdRepeated(first)));
    }
}
