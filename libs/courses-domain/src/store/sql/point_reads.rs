//! [`PointReads`]: reads of one course by id that arrive together are answered together, by one
//! statement (`id = ANY($1)`) on one connection, on a thread of their own (issue 26, ADR 0054 and
//! ADR 0061).
//!
//! A store behind a network (PostgreSQL) pays a round trip, a pooled connection and the server's
//! per-statement work for every read of `cursos://{uuid}`; at 50 connections that, not the rows,
//! is the cost. Here one thread, the *reader*, runs every point-read statement: it takes the
//! reads queued (up to [`MOST_AT_ONCE`]), runs one statement for them, answers each, and takes
//! the next queue. A read alone is a statement of its own; reads that arrive while a statement
//! runs are the next one's.
//!
//! A read is queued and answered through a channel, so its caller holds no thread while it waits:
//! an async caller ([`PointReads::find_later`]) awaits its answer on the runtime, a blocking
//! caller ([`PointReads::find`], the writes' own reads) blocks on it.
//!
//! **Every answer is current when it is given.** A read waits only for a statement that *starts*
//! after it was queued (the reader takes the queue, then runs its statement), and PostgreSQL's
//! READ COMMITTED takes each statement's snapshot when it starts: whatever was committed
//! (acknowledged) before the read arrived is in its answer, as with a statement of its own.
//!
//! **No read waits for ever.** The reader runs as long as the [`PointReads`] (the store) lives;
//! a statement that fails or panics fails its own reads (each with the cause) and the reader goes
//! on with the next; when the store is dropped, the reader answers what is queued, then stops.

use std::collections::{HashMap, VecDeque};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc::{self, SyncSender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

use crate::rules::{CatalogName, Course, CourseId};
use crate::store::port::{PendingRead, StoreError, unanswered_read};

/// How many reads one statement answers, at most.
pub(crate) const MOST_AT_ONCE: usize = 64;

/// The statement the reader runs: the courses with these ids, whatever their catalogs, each with
/// its catalog's name.
pub(crate) type ReadEach = Box<dyn Fn(&[CourseId]) -> Result<Vec<(String, Course)>, StoreError> + Send>;

/// The answer to one read.
type Answer = Result<Option<Course>, StoreError>;

/// The reads of one store and their reader thread (see the module's documentation).
#[derive(Debug)]
pub(crate) struct PointReads {
    shared: Arc<Shared>,
    reader: Option<JoinHandle<()>>,
}

#[derive(Debug, Default)]
struct Shared {
    queue: Mutex<Queue>,
    /// Told when a read is queued, or when the store is dropped.
    arrived: Condvar,
}

#[derive(Debug, Default)]
struct Queue {
    /// Reads waiting for the reader to take them.
    waiting: VecDeque<Read>,
    /// Whether the reader is waiting for a read (so a read that arrives wakes it).
    idle: bool,
    /// Set when the store is dropped: the reader answers what is queued and stops.
    stop: bool,
}

/// One read of a course by id, and where its answer goes.
#[derive(Debug)]
struct Read {
    catalog: CatalogName,
    id: CourseId,
    reply: Reply,
}

/// Where a read's answer goes: a thread blocked on it, or a task awaiting it.
#[derive(Debug)]
enum Reply {
    Thread(SyncSender<Answer>),
    Task(tokio::sync::oneshot::Sender<Answer>),
}

impl Reply {
    fn send(self, answer: Answer) {
        // A caller that stopped waiting (a cancelled request) needs no answer.
        let _ = match self {
            Self::Thread(sender) => sender.send(answer).map_err(drop),
            Self::Task(sender) => sender.send(answer).map_err(drop),
        };
    }
}

impl PointReads {
    /// Starts the reader thread, which answers every read with `read_each`.
    ///
    /// # Errors
    /// The system's, when it cannot start a thread.
    pub(crate) fn start(read_each: ReadEach) -> std::io::Result<Self> {
        let shared = Arc::new(Shared::default());
        let reader = std::thread::Builder::new().name("pg-point-reads".to_owned()).spawn({
            let shared = Arc::clone(&shared);
            move || shared.serve(&read_each)
        })?;
        Ok(Self { shared, reader: Some(reader) })
    }

    /// The course `id` of `catalog`, read with the others that arrive meanwhile. **Blocking**: for
    /// a caller that may block (a write's own read, on the blocking pool).
    ///
    /// # Errors
    /// The statement's (every read of it gets it); a read whose statement panicked.
    pub(crate) fn find(&self, catalog: &CatalogName, id: CourseId) -> Answer {
        let (reply, answer) = mpsc::sync_channel(1);
        self.queue(Read { catalog: catalog.clone(), id, reply: Reply::Thread(reply) });
        answer.recv().unwrap_or_else(|mpsc::RecvError| Err(unanswered_read()))
    }

    /// Queues a read of the course `id` of `catalog` and returns at once: its answer is awaited
    /// without holding a thread.
    pub(crate) fn find_later(&self, catalog: &CatalogName, id: CourseId) -> PendingRead {
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.queue(Read { catalog: catalog.clone(), id, reply: Reply::Task(reply) });
        PendingRead::new(answer)
    }

    fn queue(&self, read: Read) {
        let mut queue = self.shared.lock();
        queue.waiting.push_back(read);
        if queue.idle {
            queue.idle = false;
            self.shared.arrived.notify_one();
        }
    }
}

impl Drop for PointReads {
    fn drop(&mut self) {
        self.shared.lock().stop = true;
        self.shared.arrived.notify_one();
        if let Some(reader) = self.reader.take() {
            // The reader catches its statements' panics: it ends by answering the queue.
            let _ = reader.join();
        }
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        // The queue holds no invariant a panic could break halfway (pushes and drains only).
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The reader's loop: the queue's reads, up to [`MOST_AT_ONCE`] at a time, each batch one
    /// statement, until the store is dropped and nothing is queued.
    fn serve(&self, read_each: &ReadEach) {
        loop {
            let batch: Vec<Read> = {
                let mut queue = self.lock();
                while queue.waiting.is_empty() && !queue.stop {
                    queue.idle = true;
                    queue = self.arrived.wait(queue).unwrap_or_else(PoisonError::into_inner);
                }
                if queue.waiting.is_empty() {
                    return;
                }
                let most = queue.waiting.len().min(MOST_AT_ONCE);
                queue.waiting.drain(..most).collect()
            };
            answer(batch, read_each);
        }
    }
}

/// Runs one statement for `batch` and answers each read with its own course of its own catalog;
/// a statement that fails or panics fails each read of the batch, with the cause.
fn answer(batch: Vec<Read>, read_each: &ReadEach) {
    let mut ids: Vec<CourseId> = batch.iter().map(|read| read.id).collect();
    ids.sort_unstable();
    ids.dedup();
    match catch_unwind(AssertUnwindSafe(|| read_each(&ids))) {
        Ok(Ok(found)) => {
            let mut by_id: HashMap<CourseId, Vec<(String, Course)>> = HashMap::with_capacity(found.len());
            for (catalog, course) in found {
                by_id.entry(course.id()).or_default().push((catalog, course));
            }
            for read in batch {
                let course = by_id
                    .get(&read.id)
                    .and_then(|courses| courses.iter().find(|(catalog, _)| catalog == read.catalog.as_str()))
                    .map(|(_, course)| course.clone());
                read.reply.send(Ok(course));
            }
        }
        Ok(Err(error)) => {
            let error = Arc::new(error);
            for read in batch {
                let shared = SharedCause(Arc::clone(&error));
                read.reply.send(Err(StoreError::new("cannot read a course", shared)));
            }
        }
        Err(_panic) => {
            tracing::error!("a point-read statement panicked; its reads failed, the next are served");
            for read in batch {
                read.reply.send(Err(unanswered_read()));
            }
        }
    }
}

/// One failure of a statement, as the cause of each of its reads' errors.
#[derive(Debug)]
struct SharedCause(Arc<StoreError>);

impl std::fmt::Display for SharedCause {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(formatter)
    }
}

impl std::error::Error for SharedCause {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        std::error::Error::source(&*self.0)
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;

    fn new_course(title: &str, hours: i64) -> Course {
        Course::create(crate::testing::new_course(title, hours), time::OffsetDateTime::now_utc())
    }

    /// A liveness bound for an answer, never a measure of speed.
    const ANSWER_WITHIN: Duration = Duration::from_secs(10);

    /// The statements run, in order, each with the ids it was given; the first waits until the
    /// test opens its gate.
    #[derive(Default)]
    struct Statements {
        calls: Mutex<Vec<Vec<CourseId>>>,
        open: Mutex<bool>,
        opened: Condvar,
    }

    impl Statements {
        fn run(&self, ids: &[CourseId], courses: &[(String, Course)]) -> Vec<(String, Course)> {
            let first = {
                let mut calls = self.calls.lock().expect("calls");
                calls.push(ids.to_vec());
                calls.len() == 1
            };
            if first {
                let mut open = self.open.lock().expect("gate");
                while !*open {
                    open = self.opened.wait(open).expect("gate");
                }
            }
            courses.iter().filter(|(_, course)| ids.contains(&course.id())).cloned().collect()
        }

        fn open(&self) {
            *self.open.lock().expect("gate") = true;
            self.opened.notify_all();
        }

        fn count(&self) -> usize {
            self.calls.lock().expect("calls").len()
        }
    }

    fn poll_until(what: &str, condition: impl Fn() -> bool) {
        let deadline = Instant::now() + ANSWER_WITHIN;
        while !condition() {
            assert!(Instant::now() < deadline, "{what} never happened");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    fn catalog(name: &str) -> CatalogName {
        CatalogName::parse(name).expect("a catalog name")
    }

    fn waiting(reads: &PointReads) -> usize {
        reads.shared.lock().waiting.len()
    }

    /// Point reads whose statement is `statements.run` over `courses`.
    fn reads_over(statements: &Arc<Statements>, courses: &Arc<Vec<(String, Course)>>) -> Arc<PointReads> {
        let (statements, courses) = (Arc::clone(statements), Arc::clone(courses));
        Arc::new(PointReads::start(Box::new(move |ids| Ok(statements.run(ids, &courses)))).expect("a reader"))
    }

    /// One stored course, and a first read of it whose statement is held at its gate.
    struct Held {
        main: CatalogName,
        course: Course,
        statements: Arc<Statements>,
        reads: Arc<PointReads>,
        first: PendingRead,
    }

    fn held_first_read() -> Held {
        let main = catalog("principal");
        let course = new_course("Curso", 10);
        let courses = Arc::new(vec![(main.as_str().to_owned(), course.clone())]);
        let statements = Arc::new(Statements::default());
        let reads = reads_over(&statements, &courses);
        let first = reads.find_later(&main, course.id());
        poll_until("the first statement", || statements.count() == 1);
        Held { main, course, statements, reads, first }
    }

    fn read_on_a_thread(
        reads: &Arc<PointReads>,
        wanted: (CatalogName, CourseId),
    ) -> std::thread::JoinHandle<Result<Option<Course>, String>> {
        let reads = Arc::clone(reads);
        std::thread::spawn(move || reads.find(&wanted.0, wanted.1).map_err(|error| format!("{error:#}")))
    }

    #[test]
    fn reads_that_arrive_during_a_statement_are_answered_together_each_with_its_own_course() {
        let main = catalog("principal");
        let other = catalog("outro");
        let mine: Vec<Course> = (0..8).map(|number| new_course(&format!("Curso {number}"), 10)).collect();
        let theirs = new_course("Curso de outro catálogo", 10);
        let mut stored: Vec<(String, Course)> =
            mine.iter().map(|course| (main.as_str().to_owned(), course.clone())).collect();
        stored.push((other.as_str().to_owned(), theirs.clone()));
        let courses = Arc::new(stored);
        let statements = Arc::new(Statements::default());
        let reads = reads_over(&statements, &courses);

        // A read alone is a statement of its own, held at its gate.
        let first = read_on_a_thread(&reads, (main.clone(), mine[0].id()));
        poll_until("the first statement", || statements.count() == 1);
        assert_eq!(statements.calls.lock().expect("calls")[0], vec![mine[0].id()]);

        // Twenty more wait, blocking and async alike: repeated ids, a course of another catalog
        // asked in the wrong one.
        let asked: Vec<(CatalogName, CourseId)> = (0..20)
            .map(|number| match number % 5 {
                4 => (main.clone(), theirs.id()),
                3 => (other.clone(), theirs.id()),
                _ => (main.clone(), mine[number % 8].id()),
            })
            .collect();
        let (blocking, later) = asked.split_at(10);
        let blocked: Vec<_> = blocking.iter().map(|wanted| read_on_a_thread(&reads, wanted.clone())).collect();
        let pending: Vec<PendingRead> = later.iter().map(|(catalog, id)| reads.find_later(catalog, *id)).collect();
        poll_until("twenty reads queued", || waiting(&reads) == 20);
        assert_eq!(statements.count(), 1, "a queued read runs no statement");

        // The statement ends: the whole queue in the next one.
        statements.open();
        let runtime = tokio::runtime::Builder::new_current_thread().build().expect("a runtime");
        let mut answers: Vec<Result<Option<Course>, String>> =
            blocked.into_iter().map(|read| read.join().expect("a queued read")).collect();
        answers.extend(
            pending.into_iter().map(|read| runtime.block_on(read.answer()).map_err(|error| format!("{error:#}"))),
        );
        assert_eq!(statements.count(), 2, "the twenty were answered by one statement");
        let mut expected_ids: Vec<CourseId> = asked.iter().map(|(_, id)| *id).collect();
        expected_ids.sort_unstable();
        expected_ids.dedup();
        assert_eq!(statements.calls.lock().expect("calls")[1], expected_ids, "each id once");
        for ((wanted_catalog, id), answer) in asked.iter().zip(answers) {
            let answer = answer.expect("answered");
            if *wanted_catalog == main && *id == theirs.id() {
                assert_eq!(answer, None, "a course of another catalog is not found in this one");
            } else {
                assert_eq!(answer.map(|course| course.id()), Some(*id), "its own course");
            }
        }
        assert_eq!(
            first.join().expect("the first read").expect("answered").map(|course| course.id()),
            Some(mine[0].id())
        );
    }

    #[test]
    fn at_most_one_batch_of_reads_per_statement() {
        let Held { main, course, statements, reads, first } = held_first_read();
        let queued: Vec<PendingRead> = (0..MOST_AT_ONCE + 1).map(|_| reads.find_later(&main, course.id())).collect();
        statements.open();
        let runtime = tokio::runtime::Builder::new_current_thread().build().expect("a runtime");
        for read in std::iter::once(first).chain(queued) {
            assert_eq!(runtime.block_on(read.answer()).expect("answered"), Some(course.clone()));
        }
        assert_eq!(statements.count(), 3, "the first, then {MOST_AT_ONCE} reads, then the last one");
    }

    #[test]
    fn a_failed_statement_fails_only_its_own_reads_with_the_cause() {
        let main = catalog("principal");
        let course = new_course("Curso", 10);
        let stored = vec![(main.as_str().to_owned(), course.clone())];
        let fail = Arc::new(std::sync::atomic::AtomicBool::new(true));
        let reads = PointReads::start(Box::new({
            let fail = Arc::clone(&fail);
            move |_| {
                if fail.swap(false, std::sync::atomic::Ordering::SeqCst) {
                    Err(StoreError::new("cannot read courses", std::io::Error::other("conexão perdida")))
                } else {
                    Ok(stored.clone())
                }
            }
        }))
        .expect("a reader");
        let failed = reads.find(&main, course.id()).expect_err("the statement failed");
        let chain = format!("{failed:#}");
        let mut source = std::error::Error::source(&failed);
        let mut causes = Vec::new();
        while let Some(cause) = source {
            causes.push(cause.to_string());
            source = cause.source();
        }
        assert!(causes.iter().any(|cause| cause.contains("conexão perdida")), "the cause is kept: {chain} {causes:?}");

        let found = reads.find(&main, course.id()).expect("the next read is served");
        assert_eq!(found, Some(course));
    }

    #[test]
    fn a_statement_that_panics_fails_its_reads_and_the_next_are_still_answered() {
        let main = catalog("principal");
        let course = new_course("Curso", 10);
        let courses = Arc::new(vec![(main.as_str().to_owned(), course.clone())]);
        let statements = Arc::new(Statements::default());
        let reads = Arc::new(
            PointReads::start(Box::new({
                let (statements, courses) = (Arc::clone(&statements), Arc::clone(&courses));
                move |ids| {
                    let found = statements.run(ids, &courses);
                    assert!(statements.count() > 1, "a bug in the first statement");
                    Ok(found)
                }
            }))
            .expect("a reader"),
        );
        let panicking = read_on_a_thread(&reads, (main.clone(), course.id()));
        poll_until("the first statement", || statements.count() == 1);
        let queued: Vec<_> = (0..5).map(|_| read_on_a_thread(&reads, (main.clone(), course.id()))).collect();
        poll_until("five reads queued", || waiting(&reads) == 5);
        statements.open();
        let failed = panicking.join().expect("no reading thread panicked").expect_err("its statement panicked");
        assert!(failed.contains("without an answer"), "{failed}");
        for read in queued {
            let answer = read.join().expect("no reading thread panicked").expect("answered");
            assert_eq!(answer.map(|course| course.id()), Some(course.id()));
        }
    }

    #[test]
    fn dropping_the_reads_answers_what_is_queued_and_stops_the_reader() {
        let Held { main, course, statements, reads, first } = held_first_read();
        let queued = reads.find_later(&main, course.id());
        let dropping = std::thread::spawn(move || drop(reads));
        statements.open();
        dropping.join().expect("dropped");
        assert_eq!(Arc::strong_count(&statements), 1, "the reader and its statement are gone");
        let runtime = tokio::runtime::Builder::new_current_thread().build().expect("a runtime");
        for read in [first, queued] {
            assert_eq!(runtime.block_on(read.answer()).expect("answered"), Some(course.clone()));
        }
    }
}
