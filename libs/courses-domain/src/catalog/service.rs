//! [`Catalog`]: the operations of the course catalog, with one error type per operation.

use std::sync::Arc;

use time::OffsetDateTime;

use crate::rules::{
    CatalogName, ChangeRefusal, Course, CourseChanges, CourseId, CoursePage, CourseTitle, CreationFingerprint,
    HistoryPage, IdempotencyKey, NewCourse, PageCursor, PageSize, Provenance, TitleSearchKey,
};
use crate::store::port::{
    BulkImport, ChangeFollower, CourseStore, ExportEnd, ExportSink, IdempotentInsert, ImportOutcome, PoolStatus,
    RemoteChange, Replaced, StoreError, Unwritable, WriteError, inline_read,
};

/// How many times an update retries when another writer changed the course in between.
const MAX_REVISION_ATTEMPTS: usize = 16;

/// One course catalog: every rule of the domain, over a [`CourseStore`], in the catalog named
/// [`Catalog::name`] (ADR 0035). A store holds several catalogs; [`Catalog::scoped`] gives the view
/// of another one over the same store and observers. Every operation reaches the store with this
/// catalog's name, and sees nothing of another catalog.
///
/// Cheap to clone (it holds `Arc`s). Writes and searches run the store's blocking work on Tokio's
/// blocking pool, so callers on the async runtime never wait for a write or the network; bounded
/// reads of a local store run inline ([`CourseStore::reads_inline`]).
#[derive(Debug, Clone)]
pub struct Catalog {
    name: CatalogName,
    store: Arc<dyn CourseStore>,
    observers: Arc<[Arc<dyn CatalogObserver>]>,
}

/// An accepted write that changed a course. No-op writes (archiving twice, updating to the same
/// values) produce none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CourseChange {
    /// A course was created (it is active).
    Created(Course),
    /// An active course's title or workload changed.
    Updated {
        /// The course before the change.
        before: Course,
        /// The course after the change.
        after: Course,
    },
    /// A course was archived: it left the catalog.
    Archived(Course),
}

impl CourseChange {
    /// The course as it is now.
    #[must_use]
    pub fn course(&self) -> &Course {
        match self {
            Self::Created(course) | Self::Archived(course) | Self::Updated { after: course, .. } => course,
        }
    }

    /// True when the set of active courses or one of their titles changed (what a listing shows).
    #[must_use]
    pub fn changes_listing(&self) -> bool {
        match self {
            Self::Created(_) | Self::Archived(_) => true,
            Self::Updated { before, after } => before.title() != after.title(),
        }
    }
}

/// What [`Catalog::create_idempotent`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Created {
    /// The course created by this call or by the first call with the same key.
    pub course: Course,
    /// True when an earlier call with the same key created it: nothing was written now.
    pub replayed: bool,
}

/// Told of every [`CourseChange`] once it is stored: subscriptions, caches and metrics hook in here,
/// so the domain does not know about them.
pub trait CatalogObserver: Send + Sync + std::fmt::Debug + 'static {
    /// Called after the change to a course of `catalog` is durable, on the async task that made
    /// it. Must not block. An observer that tells anyone of it tells only that catalog's (ADR 0035).
    fn course_changed(&self, catalog: &CatalogName, change: &CourseChange);
}

/// Why [`Catalog::create`] refused.
#[derive(Debug, thiserror::Error)]
pub enum CreateCourseError {
    /// An active course already has this title (compared case-insensitively, whitespace collapsed).
    #[error("an active course is already titled {title:?}")]
    DuplicateTitle {
        /// The title that was asked for.
        title: CourseTitle,
    },
    /// The idempotency key was used before with other arguments.
    #[error("the idempotency key {key} was used with other arguments")]
    IdempotencyKeyReused {
        /// The key.
        key: IdempotencyKey,
    },
    /// The store cannot make writes durable now; retrying will not help until an operator acts.
    /// Nothing was written.
    #[error(transparent)]
    Unwritable(Unwritable),
    /// The storage failed; nothing was written.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The storage failed while making the creation durable: the course may or may not be stored
    /// (ADR 0020). A retry with the same idempotency key, or the same title, cannot create it twice.
    #[error("whether the course was created is unknown")]
    OutcomeUnknown(#[source] StoreError),
}

/// Why [`Catalog::update`] refused.
#[derive(Debug, thiserror::Error)]
pub enum UpdateCourseError {
    /// No field to change was given.
    #[error("nothing to update")]
    NothingToUpdate,
    /// No course has this id.
    #[error("no course with id {id}")]
    NotFound {
        /// The id that was asked for.
        id: CourseId,
    },
    /// The course is archived, and archived courses cannot be updated.
    #[error("course {id} is archived")]
    Archived {
        /// The archived course's id.
        id: CourseId,
    },
    /// Another active course already has the new title.
    #[error("an active course is already titled {title:?}")]
    DuplicateTitle {
        /// The title that was asked for.
        title: CourseTitle,
    },
    /// The caller expected another version: the course changed since it was read.
    #[error("course {id} is at version {current}, not {expected}")]
    StaleVersion {
        /// The course.
        id: CourseId,
        /// The version the caller expected.
        expected: u64,
        /// The version the course is at.
        current: u64,
    },
    /// The store cannot make writes durable now; retrying will not help until an operator acts.
    /// Nothing was written.
    #[error(transparent)]
    Unwritable(Unwritable),
    /// The storage failed (or the course kept changing under us); nothing was written.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The storage failed while making the update durable: it may or may not be stored (ADR 0020).
    #[error("whether course {id} was updated is unknown")]
    OutcomeUnknown {
        /// The course.
        id: CourseId,
        /// The failure.
        #[source]
        source: StoreError,
    },
}

/// Why [`Catalog::archive`] refused.
#[derive(Debug, thiserror::Error)]
pub enum ArchiveCourseError {
    /// No course has this id.
    #[error("no course with id {id}")]
    NotFound {
        /// The id that was asked for.
        id: CourseId,
    },
    /// The caller expected another version: the course changed since it was read.
    #[error("course {id} is at version {current}, not {expected}")]
    StaleVersion {
        /// The course.
        id: CourseId,
        /// The version the caller expected.
        expected: u64,
        /// The version the course is at.
        current: u64,
    },
    /// The store cannot make writes durable now; retrying will not help until an operator acts.
    /// Nothing was written.
    #[error(transparent)]
    Unwritable(Unwritable),
    /// The storage failed; nothing was written.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The storage failed while making the archiving durable: it may or may not be stored (ADR 0020).
    #[error("whether course {id} was archived is unknown")]
    OutcomeUnknown {
        /// The course.
        id: CourseId,
        /// The failure.
        #[source]
        source: StoreError,
    },
}

/// Why [`Catalog::readiness`] says the catalog is not ready.
#[derive(Debug, thiserror::Error)]
pub enum NotReady {
    /// Writes cannot be made durable (ADR 0026), or the store's writer stopped
    /// ([`Unwritable::WriterStopped`]).
    #[error(transparent)]
    Unwritable(Unwritable),
    /// The store did not answer a read.
    #[error(transparent)]
    Store(StoreError),
}

/// Why [`Catalog::get`] found nothing.
#[derive(Debug, thiserror::Error)]
pub enum GetCourseError {
    /// No course has this id.
    #[error("no course with id {id}")]
    NotFound {
        /// The id that was asked for.
        id: CourseId,
    },
    /// The storage failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl Catalog {
    /// The default catalog ([`CatalogName::default_catalog`]) over `store`; [`Catalog::scoped`]
    /// gives the others.
    pub fn new(store: impl CourseStore) -> Self {
        Self { name: CatalogName::default_catalog(), store: Arc::new(store), observers: Arc::new([]) }
    }

    /// The catalog named `name` over the same store, told to the same observers.
    #[must_use]
    pub fn scoped(&self, name: &CatalogName) -> Self {
        Self { name: name.clone(), store: Arc::clone(&self.store), observers: Arc::clone(&self.observers) }
    }

    /// Which catalog this is.
    #[must_use]
    pub fn name(&self) -> &CatalogName {
        &self.name
    }

    /// The same catalog, also telling `observer` of every change.
    #[must_use]
    pub fn with_observer(self, observer: Arc<dyn CatalogObserver>) -> Self {
        let mut observers = self.observers.to_vec();
        observers.push(observer);
        Self { name: self.name, store: self.store, observers: observers.into() }
    }

    fn announce(&self, change: &CourseChange) {
        for observer in self.observers.iter() {
            observer.course_changed(&self.name, change);
        }
    }

    /// Up to `limit` active courses matching what a user typed (id or title, see
    /// [`CourseStore::search_active`]), best matches first; the oldest courses when nothing was typed.
    ///
    /// # Errors
    /// [`StoreError`] when the storage fails.
    pub async fn suggest(&self, typed: &str, limit: usize) -> Result<Vec<Course>, StoreError> {
        let key = TitleSearchKey::of_typed(typed);
        let catalog = self.name.clone();
        self.blocking(Statement::SELECT_COURSES, move |store| match key {
            None => Ok(store.active_page(&catalog, None, limit)?.into_iter().map(|(course, _)| course).collect()),
            Some(key) => store.search_active(&catalog, &key, limit),
        })
        .await?
    }

    /// Creates an active course, recording `provenance` in its history.
    ///
    /// # Errors
    /// [`CreateCourseError::DuplicateTitle`] when an active course has the same title; nothing is written.
    pub async fn create(&self, new_course: NewCourse, provenance: Provenance) -> Result<Course, CreateCourseError> {
        let title = new_course.title.clone();
        let course = Course::create(new_course, OffsetDateTime::now_utc());
        let catalog = self.name.clone();
        let created = self
            .blocking(Statement::INSERT_COURSES, move |store| match store.insert(&catalog, &course, &provenance) {
                Ok(()) => Ok(course),
                Err(WriteError::DuplicateTitle) => Err(CreateCourseError::DuplicateTitle { title }),
                Err(WriteError::Unwritable(reason)) => Err(CreateCourseError::Unwritable(reason)),
                Err(WriteError::Store(error)) => Err(error.into()),
                Err(WriteError::OutcomeUnknown(error)) => Err(CreateCourseError::OutcomeUnknown(error)),
            })
            .await??;
        self.announce(&CourseChange::Created(created.clone()));
        Ok(created)
    }

    /// Creates an active course once per `key`: a retry with the same key and the same request
    /// returns the course the first call created (as it is now) and writes nothing.
    ///
    /// # Errors
    /// [`CreateCourseError::IdempotencyKeyReused`] when the key was used for another request;
    /// [`CreateCourseError::DuplicateTitle`] as for [`Catalog::create`] (the key stays unused).
    pub async fn create_idempotent(
        &self,
        new_course: NewCourse,
        key: IdempotencyKey,
        provenance: Provenance,
    ) -> Result<Created, CreateCourseError> {
        let title = new_course.title.clone();
        let fingerprint = CreationFingerprint::of(&new_course);
        let course = Course::create(new_course, OffsetDateTime::now_utc());
        let catalog = self.name.clone();
        let created = self
            .blocking(Statement::INSERT_COURSES, move |store| -> Result<Created, CreateCourseError> {
                match store.insert_idempotent(&catalog, &course, &key, &fingerprint, &provenance) {
                    Ok(IdempotentInsert::Inserted) => Ok(Created { course, replayed: false }),
                    Ok(IdempotentInsert::Replayed(original)) => Ok(Created { course: original, replayed: true }),
                    Ok(IdempotentInsert::KeyReused) => Err(CreateCourseError::IdempotencyKeyReused { key }),
                    Err(WriteError::DuplicateTitle) => Err(CreateCourseError::DuplicateTitle { title }),
                    Err(WriteError::Unwritable(reason)) => Err(CreateCourseError::Unwritable(reason)),
                    Err(WriteError::Store(error)) => Err(error.into()),
                    Err(WriteError::OutcomeUnknown(error)) => Err(CreateCourseError::OutcomeUnknown(error)),
                }
            })
            .await??;
        if !created.replayed {
            self.announce(&CourseChange::Created(created.course.clone()));
        }
        Ok(created)
    }

    /// Changes the given fields of an active course. Changing nothing (same values) is a success
    /// that writes nothing.
    ///
    /// # Errors
    /// [`UpdateCourseError`] naming the rule that refused; nothing is written (except after
    /// [`UpdateCourseError::OutcomeUnknown`], where that is unknown).
    pub async fn update(
        &self,
        id: CourseId,
        changes: CourseChanges,
        provenance: Provenance,
    ) -> Result<Course, UpdateCourseError> {
        self.update_if(id, changes, None, provenance).await
    }

    /// [`Catalog::update`], only if the course is still at `expected_version` (when given):
    /// optimistic concurrency for callers that read the course first.
    ///
    /// # Errors
    /// [`UpdateCourseError::StaleVersion`] when the course is at another version; nothing is written.
    pub async fn update_if(
        &self,
        id: CourseId,
        changes: CourseChanges,
        expected_version: Option<u64>,
        provenance: Provenance,
    ) -> Result<Course, UpdateCourseError> {
        if changes.is_empty() {
            return Err(UpdateCourseError::NothingToUpdate);
        }
        let catalog = self.name.clone();
        let (course, change) = self
            .blocking(
                Statement::UPDATE_COURSES,
                move |store| -> Result<(Course, Option<CourseChange>), UpdateCourseError> {
                    for _ in 0..MAX_REVISION_ATTEMPTS {
                        let current = store.find(&catalog, id)?.ok_or(UpdateCourseError::NotFound { id })?;
                        if let Some(expected) = expected_version.filter(|expected| *expected != current.version()) {
                            return Err(UpdateCourseError::StaleVersion { id, expected, current: current.version() });
                        }
                        let revision = match current.with_changes(&changes, OffsetDateTime::now_utc()) {
                            Err(ChangeRefusal::Archived) => return Err(UpdateCourseError::Archived { id }),
                            Ok(None) => return Ok((current, None)),
                            Ok(Some(revision)) => revision,
                        };
                        match store.replace(&catalog, &revision, &provenance) {
                            Ok(Replaced::Done) => {
                                let (before, after) = revision.into_parts();
                                return Ok((after.clone(), Some(CourseChange::Updated { before, after })));
                            }
                            Ok(Replaced::Stale) => {}
                            Err(WriteError::DuplicateTitle) => {
                                return Err(UpdateCourseError::DuplicateTitle {
                                    title: revision.after().title().clone(),
                                });
                            }
                            Err(WriteError::Unwritable(reason)) => return Err(UpdateCourseError::Unwritable(reason)),
                            Err(WriteError::Store(error)) => return Err(error.into()),
                            Err(WriteError::OutcomeUnknown(source)) => {
                                return Err(UpdateCourseError::OutcomeUnknown { id, source });
                            }
                        }
                    }
                    Err(StoreError::message("the course kept changing during an update").into())
                },
            )
            .await??;
        if let Some(change) = change {
            self.announce(&change);
        }
        Ok(course)
    }

    /// Archives a course. Archiving an archived course is a success that changes nothing.
    ///
    /// # Errors
    /// [`ArchiveCourseError::NotFound`] when no course has this id.
    pub async fn archive(&self, id: CourseId, provenance: Provenance) -> Result<Course, ArchiveCourseError> {
        self.archive_if(id, None, provenance).await
    }

    /// [`Catalog::archive`], only if the course is still at `expected_version` (when given).
    ///
    /// # Errors
    /// [`ArchiveCourseError::StaleVersion`] when the course is at another version; nothing changes.
    pub async fn archive_if(
        &self,
        id: CourseId,
        expected_version: Option<u64>,
        provenance: Provenance,
    ) -> Result<Course, ArchiveCourseError> {
        let catalog = self.name.clone();
        let (course, changed) = self
            .blocking(Statement::UPDATE_COURSES, move |store| -> Result<(Course, bool), ArchiveCourseError> {
                for _ in 0..MAX_REVISION_ATTEMPTS {
                    let current = store.find(&catalog, id)?.ok_or(ArchiveCourseError::NotFound { id })?;
                    if let Some(expected) = expected_version.filter(|expected| *expected != current.version()) {
                        return Err(ArchiveCourseError::StaleVersion { id, expected, current: current.version() });
                    }
                    let Some(revision) = current.archived_at(OffsetDateTime::now_utc()) else {
                        return Ok((current, false));
                    };
                    match store.replace(&catalog, &revision, &provenance) {
                        Ok(Replaced::Done) => return Ok((revision.into_parts().1, true)),
                        Ok(Replaced::Stale) => {}
                        // Archiving only ever leaves the unique index; a duplicate here is a broken store.
                        Err(WriteError::DuplicateTitle) => {
                            return Err(StoreError::message("archiving reported a duplicate title").into());
                        }
                        Err(WriteError::Unwritable(reason)) => return Err(ArchiveCourseError::Unwritable(reason)),
                        Err(WriteError::Store(error)) => return Err(error.into()),
                        Err(WriteError::OutcomeUnknown(source)) => {
                            return Err(ArchiveCourseError::OutcomeUnknown { id, source });
                        }
                    }
                }
                Err(StoreError::message("the course kept changing during archiving").into())
            })
            .await??;
        if changed {
            self.announce(&CourseChange::Archived(course.clone()));
        }
        Ok(course)
    }

    /// The course with this id, archived ones included.
    ///
    /// # Errors
    /// [`GetCourseError::NotFound`] when no course has this id.
    pub async fn get(&self, id: CourseId) -> Result<Course, GetCourseError> {
        if let Some(pending) = self.store.find_later(&self.name, id) {
            // Queued on the store's own reader (PostgreSQL, ADR 0061): no thread waits for it.
            use tracing::Instrument as _;
            let span = Statement::SELECT_COURSES.span(self.store.system_name());
            return pending.answer().instrument(span).await?.ok_or(GetCourseError::NotFound { id });
        }
        let catalog = self.name.clone();
        self.read(Statement::SELECT_COURSES, move |store| {
            store.find(&catalog, id)?.ok_or(GetCourseError::NotFound { id })
        })
        .await?
    }

    /// A page of a course's history (every accepted write, with who made it and how), newest
    /// first, starting after `after` (from the newest when `None`). Archived courses have one too.
    ///
    /// # Errors
    /// [`GetCourseError::NotFound`] when no course has this id.
    pub async fn history(
        &self,
        id: CourseId,
        after: Option<PageCursor>,
        size: PageSize,
    ) -> Result<HistoryPage, GetCourseError> {
        let catalog = self.name.clone();
        self.read(Statement::SELECT_HISTORY, move |store| {
            let course = store.find(&catalog, id)?.ok_or(GetCourseError::NotFound { id })?;
            let (entries, next) =
                split_page(store.history_page(&catalog, &course, after, usize::from(size.get()) + 1)?, size);
            Ok(HistoryPage { entries, next })
        })
        .await?
    }

    /// A page of active courses, oldest first, starting after `after` (from the start when `None`).
    ///
    /// # Errors
    /// [`StoreError`] when the storage fails.
    pub async fn active_page(&self, after: Option<PageCursor>, size: PageSize) -> Result<CoursePage, StoreError> {
        let catalog = self.name.clone();
        self.read(Statement::SELECT_COURSES, move |store| {
            let (courses, next) = split_page(store.active_page(&catalog, after, usize::from(size.get()) + 1)?, size);
            Ok(CoursePage { courses, next })
        })
        .await?
    }

    /// Whether the catalog can serve reads and make writes durable now (the backend's `/ready`):
    /// the store must be writable ([`CourseStore::writable`]) and answer a read.
    ///
    /// # Errors
    /// [`NotReady`] naming the reason.
    pub async fn readiness(&self) -> Result<(), NotReady> {
        let catalog = self.name.clone();
        // No span: a probe is no request's child, and a root span per probe would be noise.
        self.blocking_in(tracing::Span::none(), move |store| {
            store.writable().map_err(NotReady::Unwritable)?;
            store.count_active(&catalog).map(|_| ()).map_err(NotReady::Store)
        })
        .await
        .map_err(NotReady::Store)?
    }

    /// Follows the changes other processes commit to the same database (see
    /// [`CourseStore::follow_changes`]): `on_change` hears of each, never of this catalog's own
    /// (its observers do). `None` when the store cannot be shared. Stops when the follower is dropped.
    #[must_use]
    pub fn follow_changes(&self, on_change: impl Fn(RemoteChange) + Send + 'static) -> Option<ChangeFollower> {
        self.store.follow_changes(Box::new(on_change))
    }

    /// Stores a batch of imported courses in one transaction ([`CourseStore::import_batch`],
    /// ADR 0040), telling this catalog's observers of each course created. **Blocking**: for the
    /// operator commands, which call it from a thread that may block (never an async worker).
    ///
    /// # Errors
    /// [`WriteError`]: nothing of the batch was written (unless [`WriteError::OutcomeUnknown`]).
    pub fn import_batch(
        &self,
        courses: &[Course],
        provenance: &Provenance,
        dry_run: bool,
    ) -> Result<Vec<ImportOutcome>, WriteError> {
        let outcomes = self.store.import_batch(&self.name, courses, provenance, dry_run)?;
        if !dry_run {
            for (course, outcome) in courses.iter().zip(&outcomes) {
                if *outcome == ImportOutcome::Inserted && !course.is_archived() {
                    self.announce(&CourseChange::Created(course.clone()));
                }
            }
        }
        Ok(outcomes)
    }

    /// An import into this catalog of a database that holds no course yet, as ONE transaction
    /// ([`CourseStore::begin_bulk_import`], ADR 0057), or `None`: then batch by batch,
    /// [`Catalog::import_rows`]. Its rows are not announced to this catalog's observers (the
    /// `import` command has none; a server on the file learns of them from the file, ADR 0030).
    /// **Blocking**, as [`Catalog::import_batch`].
    ///
    /// # Errors
    /// [`WriteError`] when the database cannot be opened, locked or read.
    pub fn begin_bulk_import(&self, provenance: &Provenance) -> Result<Option<Box<dyn BulkImport + '_>>, WriteError> {
        self.store.begin_bulk_import(&self.name, provenance)
    }

    /// Sends the whole catalog to `sink` from one snapshot ([`CourseStore::export`], ADR 0040).
    /// **Blocking**, as [`Catalog::import_batch`].
    ///
    /// # Errors
    /// [`StoreError`] when the storage fails.
    pub fn export(
        &self,
        with_history: bool,
        page_size: usize,
        sink: &mut dyn ExportSink,
    ) -> Result<ExportEnd, StoreError> {
        self.store.export(&self.name, with_history, page_size, sink)
    }

    /// How busy the store's connection pool is (for metrics; does not touch the database).
    #[must_use]
    pub fn pool_status(&self) -> PoolStatus {
        self.store.pool_status()
    }

    /// How many courses are active.
    ///
    /// # Errors
    /// [`StoreError`] when the storage fails.
    pub async fn count_active(&self) -> Result<u64, StoreError> {
        let catalog = self.name.clone();
        self.read(Statement::SELECT_COURSES, move |store| store.count_active(&catalog)).await?
    }

    /// Runs a bounded read: on this thread when the store's reads are local and short
    /// ([`CourseStore::reads_inline`], ADR 0021) and it has a connection free now, else on the
    /// blocking pool. Never waits for a connection on this thread ([`inline_read`]). In the span
    /// of `statement` (issue 27).
    async fn read<T, F>(&self, statement: Statement, work: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: Fn(&dyn CourseStore) -> T + Send + 'static,
    {
        let span = statement.span(self.store.system_name());
        if self.store.reads_inline() {
            let _in_span = span.enter();
            if let Some(value) = inline_read::attempt(|| work(self.store.as_ref())) {
                return Ok(value);
            }
            tracing::debug!("no database connection free for an inline read: reading on the blocking pool");
        }
        self.blocking_in(span, work).await
    }

    /// Runs `work` on the blocking pool, in the span of `statement` (issue 27).
    async fn blocking<T, F>(&self, statement: Statement, work: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&dyn CourseStore) -> T + Send + 'static,
    {
        self.blocking_in(statement.span(self.store.system_name()), work).await
    }

    async fn blocking_in<T, F>(&self, span: tracing::Span, work: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&dyn CourseStore) -> T + Send + 'static,
    {
        use tracing::Instrument as _;
        let store = Arc::clone(&self.store);
        tokio::task::spawn_blocking(move || work(store.as_ref()))
            .instrument(span)
            .await
            .map_err(|join_error| StoreError::new("the store task did not finish", join_error))
    }
}

/// What a store call does, for its OpenTelemetry span (issue 27): the statement's kind and its
/// table, named per the database conventions (`{db.operation.name} {db.collection.name}`); never
/// a value, a title or an id. The spans have the target `mcp_cursos::span` and level TRACE: only
/// the OpenTelemetry layer records them (never the log lines), and only when telemetry is on.
#[derive(Debug, Clone, Copy)]
struct Statement {
    name: &'static str,
    operation: &'static str,
    collection: &'static str,
}

impl Statement {
    const SELECT_COURSES: Self = Self { name: "SELECT courses", operation: "SELECT", collection: "courses" };
    const SELECT_HISTORY: Self =
        Self { name: "SELECT course_history", operation: "SELECT", collection: "course_history" };
    const INSERT_COURSES: Self = Self { name: "INSERT courses", operation: "INSERT", collection: "courses" };
    const UPDATE_COURSES: Self = Self { name: "UPDATE courses", operation: "UPDATE", collection: "courses" };

    fn span(self, system: &'static str) -> tracing::Span {
        tracing::trace_span!(
            target: "mcp_cursos::span",
            "db",
            otel.name = self.name,
            otel.kind = "client",
            db.system.name = system,
            db.operation.name = self.operation,
            db.collection.name = self.collection,
        )
    }
}

/// A page from `size + 1` rows a store read: the extra row tells whether a next page exists
/// without a second query; the cursor of the page's last row continues it.
fn split_page<T>(mut rows: Vec<(T, PageCursor)>, size: PageSize) -> (Vec<T>, Option<PageCursor>) {
    let size = usize::from(size.get());
    let next = if rows.len() > size {
        rows.truncate(size);
        rows.last().map(|(_, cursor)| *cursor)
    } else {
        None
    };
    (rows.into_iter().map(|(item, _)| item).collect(), next)
}
