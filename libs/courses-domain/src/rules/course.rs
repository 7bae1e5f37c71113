//! [`Course`]: the entity, and the pure rules that change it.

use time::{Duration, OffsetDateTime};

use super::{CourseId, CourseTitle, WorkloadHours};

/// How far ahead of this server's clock an instant may be and still be believed: another
/// machine's clock (an export made elsewhere, a replica) a little ahead. An imported course with a
/// later `updated_at` is refused; a stored one later than that is not used as a lower bound for
/// the next write's instant (issue 24: one row dated 2999 made every later write 2999).
pub const CLOCK_SKEW: Duration = Duration::minutes(5);

/// A course of the catalog, archived or not.
///
/// **Invariant:** every field holds a value that passed its rule; a `Course` is only made by
/// [`Course::create`], by the rules below, or by a store reading back what a rule made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Course {
    id: CourseId,
    title: CourseTitle,
    workload_hours: WorkloadHours,
    archived: bool,
    version: u64,
    created_at: OffsetDateTime,
    updated_at: OffsetDateTime,
}

/// What a caller asks for when creating a course.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewCourse {
    /// The title of the new course.
    pub title: CourseTitle,
    /// Its workload.
    pub workload_hours: WorkloadHours,
}

/// A partial update: the fields set are changed, the others are kept.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CourseChanges {
    /// A new title, if any.
    pub title: Option<CourseTitle>,
    /// A new workload, if any.
    pub workload_hours: Option<WorkloadHours>,
}

impl CourseChanges {
    /// True when no field is set: such an update is refused.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.title.is_none() && self.workload_hours.is_none()
    }
}

/// Why [`Course::imported`] refused a course another database is said to have kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ImportedCourseError {
    /// The version is 0 (a course starts at 1) or too large to store.
    #[error("version out of range: a course starts at version 1")]
    Version,
    /// `updated_at` is before `created_at`.
    #[error("updated before it was created")]
    UpdatedBeforeCreated,
    /// Archived at version 1: an archiving is a write after the creation.
    #[error("archived at version 1")]
    ArchivedAtFirstVersion,
    /// `updated_at` is later than now plus [`CLOCK_SKEW`]: no clock could have made it.
    #[error("updated in the future")]
    InTheFuture,
}

/// Why a rule refused to change a course.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ChangeRefusal {
    /// The course is archived; archived courses are read-only.
    Archived,
}

impl Course {
    /// A new active course, version 1, created and updated at `now`.
    #[must_use]
    pub fn create(new_course: NewCourse, now: OffsetDateTime) -> Self {
        let now = truncate_to_millis(now);
        Self {
            id: CourseId::generate(),
            title: new_course.title,
            workload_hours: new_course.workload_hours,
            archived: false,
            version: 1,
            created_at: now,
            updated_at: now,
        }
    }

    /// A new active course with a given identity, version 1, created and updated at `now`: a row
    /// of an import that named its id or got its deterministic one ([`CourseId::for_import`]).
    #[must_use]
    pub fn create_with_id(id: CourseId, new_course: NewCourse, now: OffsetDateTime) -> Self {
        Self { id, ..Self::create(new_course, now) }
    }

    /// A course as another database kept it (an export's line), taken as it was: its id, version
    /// and instants are kept, so that an export imported into an empty database gives the same
    /// catalog (ADR 0040). Its title, workload and id already passed their rules; what is checked
    /// here is what ties the fields together. Instants are kept at millisecond precision, as
    /// every store keeps them.
    ///
    /// # Errors
    /// [`ImportedCourseError`] naming the field whose value no rule could have made.
    pub fn imported(
        id: CourseId,
        new_course: NewCourse,
        archived: bool,
        version: u64,
        created_at: OffsetDateTime,
        updated_at: OffsetDateTime,
        now: OffsetDateTime,
    ) -> Result<Self, ImportedCourseError> {
        if version == 0 || i64::try_from(version).is_err() {
            return Err(ImportedCourseError::Version);
        }
        let (created_at, updated_at) = (truncate_to_millis(created_at), truncate_to_millis(updated_at));
        if updated_at < created_at {
            return Err(ImportedCourseError::UpdatedBeforeCreated);
        }
        if updated_at > now + CLOCK_SKEW {
            return Err(ImportedCourseError::InTheFuture);
        }
        // An archived course was written at least twice (created, then archived).
        if archived && version < 2 {
            return Err(ImportedCourseError::ArchivedAtFirstVersion);
        }
        Ok(Self {
            id,
            title: new_course.title,
            workload_hours: new_course.workload_hours,
            archived,
            version,
            created_at,
            updated_at,
        })
    }

    /// Rebuilds a course from stored fields. Only stores call this, with values a rule produced.
    #[must_use]
    pub(crate) fn from_stored(
        id: CourseId,
        title: CourseTitle,
        workload_hours: WorkloadHours,
        archived: bool,
        version: u64,
        created_at: OffsetDateTime,
        updated_at: OffsetDateTime,
    ) -> Self {
        Self { id, title, workload_hours, archived, version, created_at, updated_at }
    }

    /// The course with `changes` applied, or `Ok(None)` when they change nothing.
    pub(crate) fn with_changes(
        &self,
        changes: &CourseChanges,
        now: OffsetDateTime,
    ) -> Result<Option<CourseRevision>, ChangeRefusal> {
        if self.archived {
            return Err(ChangeRefusal::Archived);
        }
        let title = changes.title.clone().unwrap_or_else(|| self.title.clone());
        let workload_hours = changes.workload_hours.unwrap_or(self.workload_hours);
        if title == self.title && workload_hours == self.workload_hours {
            return Ok(None);
        }
        Ok(Some(CourseRevision::of(self, Self { title, workload_hours, ..self.next_revision(now) })))
    }

    /// The course archived, or `None` when it already is (archiving twice is a no-op).
    pub(crate) fn archived_at(&self, now: OffsetDateTime) -> Option<CourseRevision> {
        (!self.archived).then(|| CourseRevision::of(self, Self { archived: true, ..self.next_revision(now) }))
    }

    fn next_revision(&self, now: OffsetDateTime) -> Self {
        let now = truncate_to_millis(now);
        // Never move `updated_at` backwards when the wall clock steps back a little (NTP, another
        // process's clock); but a stored instant far ahead of the clock is the wrong one, and must
        // not drag this write (and its history entry) into its future.
        let now = if self.updated_at <= now + CLOCK_SKEW {
            now.max(self.updated_at)
        } else {
            tracing::warn!(
                course = %self.id,
                stored = %self.updated_at,
                %now,
                "a course's stored update time is ahead of this server's clock by more than the allowed skew; the write takes the clock's time"
            );
            now
        };
        Self { version: self.version + 1, updated_at: now, ..self.clone() }
    }

    /// The course's identity.
    #[must_use]
    pub fn id(&self) -> CourseId {
        self.id
    }

    /// Its title.
    #[must_use]
    pub fn title(&self) -> &CourseTitle {
        &self.title
    }

    /// Its workload.
    #[must_use]
    pub fn workload_hours(&self) -> WorkloadHours {
        self.workload_hours
    }

    /// True once archived: the course has left the catalog and can no longer be updated.
    #[must_use]
    pub fn is_archived(&self) -> bool {
        self.archived
    }

    /// Revision counter: 1 at creation, plus one for every accepted change.
    #[must_use]
    pub fn version(&self) -> u64 {
        self.version
    }

    /// When it was created (UTC, millisecond precision).
    #[must_use]
    pub fn created_at(&self) -> OffsetDateTime {
        self.created_at
    }

    /// When it last changed (UTC, millisecond precision).
    #[must_use]
    pub fn updated_at(&self) -> OffsetDateTime {
        self.updated_at
    }
}

/// A course and the revision a rule made of it: same id and creation time, the version one more.
/// What `CourseStore::replace` writes, only if the stored course is
/// still at [`expected_version`](Self::expected_version).
///
/// **Invariant:** made only by the rules that change a course (`Course::with_changes`,
/// `Course::archived_at`), so a store is never handed two unrelated courses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CourseRevision {
    before: Course,
    after: Course,
}

impl CourseRevision {
    fn of(before: &Course, after: Course) -> Self {
        debug_assert_eq!((after.id, after.version), (before.id, before.version + 1));
        Self { before: before.clone(), after }
    }

    /// The course as it was read: what the store must still hold.
    #[must_use]
    pub fn before(&self) -> &Course {
        &self.before
    }

    /// The course as the rule made it.
    #[must_use]
    pub fn after(&self) -> &Course {
        &self.after
    }

    /// The version the stored course must still have for the revision to be written (the
    /// compare-and-swap key): the version of [`before`](Self::before).
    #[must_use]
    pub fn expected_version(&self) -> u64 {
        self.before.version
    }

    /// The course before and after.
    #[must_use]
    pub fn into_parts(self) -> (Course, Course) {
        (self.before, self.after)
    }
}

/// Timestamps are kept at millisecond precision, in UTC, everywhere.
pub(crate) fn truncate_to_millis(instant: OffsetDateTime) -> OffsetDateTime {
    let instant = instant.to_offset(time::UtcOffset::UTC);
    let millis = instant.millisecond();
    instant.replace_millisecond(millis).unwrap_or(instant)
}

#[cfg(test)]
mod tests {
    use time::macros::datetime;

    use super::*;

    fn course() -> Course {
        Course::create(
            NewCourse {
                title: CourseTitle::parse("Rust").expect("valid title"),
                workload_hours: WorkloadHours::parse(10).expect("valid hours"),
            },
            datetime!(2026-11-30 12:00:00.123456 UTC),
        )
    }

    #[test]
    fn a_new_course_is_active_at_version_one_with_millisecond_timestamps() {
        let course = course();
        assert!(!course.is_archived());
        assert_eq!(course.version(), 1);
        assert_eq!(course.created_at(), datetime!(2026-11-30 12:00:00.123 UTC));
        assert_eq!(course.updated_at(), course.created_at());
    }

    #[test]
    fn a_change_bumps_the_version_and_the_update_time_but_keeps_the_identity() {
        let before = course();
        let changes = CourseChanges { workload_hours: WorkloadHours::parse(20).ok(), ..CourseChanges::default() };
        let revision =
            before.with_changes(&changes, datetime!(2026-11-30 13:00 UTC)).expect("allowed").expect("changed");
        assert_eq!((revision.before(), revision.expected_version()), (&before, 1));
        let after = revision.after();
        assert_eq!((after.id(), after.version(), after.workload_hours().get()), (before.id(), 2, 20));
        assert_eq!(after.title(), before.title());
        assert_eq!(after.created_at(), before.created_at());
        assert_eq!(after.updated_at(), datetime!(2026-11-30 13:00 UTC));
    }

    #[test]
    fn a_change_to_the_same_values_changes_nothing() {
        let before = course();
        let changes =
            CourseChanges { title: Some(before.title().clone()), workload_hours: Some(before.workload_hours()) };
        assert_eq!(before.with_changes(&changes, datetime!(2026-12-01 0:00 UTC)), Ok(None));
    }

    #[test]
    fn an_archived_course_refuses_changes() {
        let archived = course().archived_at(datetime!(2026-12-01 0:00 UTC)).expect("was active").after().clone();
        let changes = CourseChanges { workload_hours: WorkloadHours::parse(20).ok(), ..CourseChanges::default() };
        assert_eq!(archived.with_changes(&changes, datetime!(2026-12-02 0:00 UTC)), Err(ChangeRefusal::Archived));
    }

    #[test]
    fn archiving_an_archived_course_is_a_no_op() {
        let archived = course().archived_at(datetime!(2026-12-01 0:00 UTC)).expect("was active").after().clone();
        assert!(archived.is_archived());
        assert_eq!(archived.archived_at(datetime!(2026-12-02 0:00 UTC)), None);
    }

    #[test]
    fn the_update_time_never_moves_backwards_when_the_clock_steps_back_within_the_skew() {
        let before = course();
        let revision = before.archived_at(before.updated_at() - Duration::minutes(4)).expect("was active");
        let archived = revision.after();
        assert_eq!(archived.updated_at(), before.updated_at());
    }

    #[test]
    fn a_stored_instant_far_ahead_of_the_clock_does_not_move_the_next_write() {
        let now = datetime!(2026-12-04 10:00 UTC);
        let future = datetime!(2999-01-01 0:00 UTC);
        // As if stored before the import refused such rows (or by a replica with a broken clock).
        let stored = Course::from_stored(
            course().id(),
            course().title().clone(),
            course().workload_hours(),
            false,
            3,
            datetime!(2026-01-01 0:00 UTC),
            future,
        );
        let changes = CourseChanges { workload_hours: WorkloadHours::parse(20).ok(), ..CourseChanges::default() };
        let updated = stored.with_changes(&changes, now).expect("allowed").expect("a change");
        assert_eq!(updated.after().updated_at(), now, "the clock's time, not the stored one");
        let archived = stored.archived_at(now).expect("was active");
        assert_eq!(archived.after().updated_at(), now);
    }

    #[test]
    fn an_imported_course_updated_after_now_plus_the_skew_is_refused() {
        let now = datetime!(2026-12-04 10:00 UTC);
        let at = |updated| {
            Course::imported(
                course().id(),
                NewCourse { title: course().title().clone(), workload_hours: course().workload_hours() },
                false,
                2,
                datetime!(2026-01-01 0:00 UTC),
                updated,
                now,
            )
        };
        assert_eq!(at(datetime!(2999-01-01 0:00 UTC)), Err(ImportedCourseError::InTheFuture));
        assert_eq!(at(now + CLOCK_SKEW + Duration::milliseconds(1)), Err(ImportedCourseError::InTheFuture));
        assert!(at(now + CLOCK_SKEW).is_ok(), "a clock a little ahead is believed");
    }
}
