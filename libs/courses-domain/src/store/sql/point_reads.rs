//! [`PointReads`]: reads of one course by id that arrive together are answered together, by one
//! statement (`id = ANY($1)`) on one connection (issue 26, ADR 0054).
//!
//! A store behind a network (PostgreSQL) pays a round trip, a pooled connection and the server's
//! per-statement work for every read of `cursos://{uuid}`; at 50 connections that, not the rows,
//! is the cost. Here up to [`LEADERS`] reads at a time run a statement (each *leads*); a read that
//! arrives while all of them are busy waits in a queue, and the next leader to finish takes the
//! whole queue (up to [`MOST_AT_ONCE`] reads) into one statement. Below [`LEADERS`] reads at once
//! nothing changes: each read leads its own statement (with one leader: a read alone).
//!
//! **Every answer is current when it is given.** A read waits only for a statement that *starts*
//! after it was queued (a leader takes the queue, then runs its statement), and PostgreSQL's READ
//! COMMITTED takes each statement's snapshot when it starts: whatever was committed (acknowledged)
//! before the read arrived is in its answer, as with a statement of its own.
//!
//! No read waits for ever: while one waits, a leader is running (the number of leaders goes down
//! only when the queue is empty, under its lock), and a leader that finishes hands the lead to the
//! first read still queued, even if its statement failed or panicked ([`Lead`]'s `Drop`).

use std::collections::{HashMap, VecDeque};
use std::sync::mpsc::{self, SyncSender};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::rules::{CatalogName, Course, CourseId};
use crate::store::port::StoreError;

/// How many statements of point reads run at once, at most. Fewer than the pool's connections,
/// so that the other reads (pages, searches) and the writes still find one. One (ADR 0054,
/// "Consequences, later"): at 50 connections every read that arrives during a statement is in the
/// next, and PostgreSQL, on the same cores, runs fewer statements; measured against four and two,
/// 1.19× and 1.07× the requests and a lower p99.
pub(crate) const LEADERS: usize = 1;

/// How many reads one statement answers, at most.
pub(crate) const MOST_AT_ONCE: usize = 64;

/// The reads of one store (see the module's documentation).
#[derive(Debug, Default)]
pub(crate) struct PointReads {
    queue: Mutex<Queue>,
}

#[derive(Debug, Default)]
struct Queue {
    /// Reads waiting for a leader to take them.
    waiting: VecDeque<Read>,
    /// How many reads are leading a statement now (at most [`LEADERS`]).
    leading: usize,
}

/// One read of a course by id, and where its answer goes.
#[derive(Debug)]
struct Read {
    catalog: CatalogName,
    id: CourseId,
    turn: SyncSender<Turn>,
}

/// What a waiting read is told: its answer, or to lead the next statement (given back its read).
#[derive(Debug)]
enum Turn {
    Answer(Result<Option<Course>, StoreError>),
    Lead(Read),
}

impl PointReads {
    /// The course `id` of `catalog`, read with the others that arrive meanwhile: `read_each`
    /// reads the courses with the given ids, whatever their catalogs (each with its catalog's name),
    /// in one statement.
    ///
    /// # Errors
    /// `read_each`'s (every read of its statement gets it); a read whose statement ended without
    /// an answer (it panicked).
    pub(crate) fn find(
        &self,
        catalog: &CatalogName,
        id: CourseId,
        read_each: impl Fn(&[CourseId]) -> Result<Vec<(String, Course)>, StoreError>,
    ) -> Result<Option<Course>, StoreError> {
        let (turn, my_turn) = mpsc::sync_channel(1);
        let mine = Read { catalog: catalog.clone(), id, turn };
        let mut lead = {
            let mut queue = self.lock();
            if queue.leading < LEADERS {
                queue.leading += 1;
                Some(mine)
            } else {
                queue.waiting.push_back(mine);
                None
            }
        };
        loop {
            if let Some(mine) = lead.take() {
                self.lead(mine, &read_each);
            }
            match my_turn.recv() {
                Ok(Turn::Answer(answer)) => return answer,
                Ok(Turn::Lead(mine)) => lead = Some(mine),
                Err(mpsc::RecvError) => {
                    return Err(StoreError::message("cannot read a course: its statement ended without an answer"));
                }
            }
        }
    }

    /// Runs one statement for `mine` and the reads queued now, answers each, and hands the lead on.
    fn lead(&self, mine: Read, read_each: &impl Fn(&[CourseId]) -> Result<Vec<(String, Course)>, StoreError>) {
        let mut lead = Lead { reads: self, batch: vec![mine] };
        {
            let mut queue = self.lock();
            let more = queue.waiting.len().min(MOST_AT_ONCE - 1);
            lead.batch.extend(queue.waiting.drain(..more));
        }
        let mut ids: Vec<CourseId> = lead.batch.iter().map(|read| read.id).collect();
        ids.sort_unstable();
        ids.dedup();
        match read_each(&ids) {
            Ok(found) => {
                let mut by_id: HashMap<CourseId, Vec<(String, Course)>> = HashMap::with_capacity(found.len());
                for (catalog, course) in found {
                    by_id.entry(course.id()).or_default().push((catalog, course));
                }
                for read in lead.batch.drain(..) {
                    let course = by_id
                        .get(&read.id)
                        .and_then(|courses| courses.iter().find(|(catalog, _)| catalog == read.catalog.as_str()))
                        .map(|(_, course)| course.clone());
                    let _ = read.turn.send(Turn::Answer(Ok(course)));
                }
            }
            Err(error) => {
                let error = Arc::new(error);
                for read in lead.batch.drain(..) {
                    let shared = SharedCause(Arc::clone(&error));
                    let _ = read.turn.send(Turn::Answer(Err(StoreError::new("cannot read a course", shared))));
                }
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, Queue> {
        // The queue holds no invariant a panic could break halfway (pushes and drains only).
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A statement being led. Dropped (after its answers, or when its statement panicked: its reads'
/// senders are dropped then, so they learn it), it hands the lead to the first queued read, or
/// gives its place back when none waits.
struct Lead<'a> {
    reads: &'a PointReads,
    batch: Vec<Read>,
}

impl Drop for Lead<'_> {
    fn drop(&mut self) {
        self.batch.clear();
        let mut queue = self.reads.lock();
        match queue.waiting.pop_front() {
            Some(next) => {
                let turn = next.turn.clone();
                // The read waits on its channel, which is empty (it is told once, and it was queued).
                let _ = turn.send(Turn::Lead(next));
            }
            None => queue.leading -= 1,
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
    use std::sync::Condvar;
    use std::time::{Duration, Instant};

    use super::*;

    fn new_course(title: &str, hours: i64) -> Course {
        Course::create(crate::testing::new_course(title, hours), time::OffsetDateTime::now_utc())
    }

    /// A liveness bound for a thread's answer, never a measure of speed.
    const ANSWER_WITHIN: Duration = Duration::from_secs(10);

    /// The statements run, in order, each with the ids it was given; the first [`LEADERS`] of them
    /// wait until the test opens their gate.
    #[derive(Default)]
    struct Statements {
        calls: Mutex<Vec<Vec<CourseId>>>,
        open: Mutex<[bool; LEADERS]>,
        opened: Condvar,
    }

    impl Statements {
        fn run(&self, ids: &[CourseId], courses: &[(String, Course)]) -> Vec<(String, Course)> {
            let number = {
                let mut calls = self.calls.lock().expect("calls");
                calls.push(ids.to_vec());
                calls.len() - 1
            };
            if number < LEADERS {
                let mut open = self.open.lock().expect("gates");
                while !open[number] {
                    open = self.opened.wait(open).expect("gates");
                }
            }
            courses.iter().filter(|(_, course)| ids.contains(&course.id())).cloned().collect()
        }

        fn open(&self, number: usize) {
            self.open.lock().expect("gates")[number] = true;
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

    type Answer = Result<Option<Course>, String>;

    fn read_on_a_thread(
        reads: &Arc<PointReads>,
        statements: &Arc<Statements>,
        courses: &Arc<Vec<(String, Course)>>,
        wanted: (CatalogName, CourseId),
    ) -> std::thread::JoinHandle<Answer> {
        let (reads, statements, courses) = (Arc::clone(reads), Arc::clone(statements), Arc::clone(courses));
        std::thread::spawn(move || {
            reads
                .find(&wanted.0, wanted.1, |ids| Ok(statements.run(ids, &courses)))
                .map_err(|error| format!("{error:#}"))
        })
    }

    fn waiting(reads: &PointReads) -> usize {
        reads.lock().waiting.len()
    }

    #[test]
    fn reads_beyond_the_leaders_wait_and_are_answered_together_each_with_its_own_course() {
        let main = catalog("principal");
        let other = catalog("outro");
        let mine: Vec<Course> = (0..8).map(|number| new_course(&format!("Curso {number}"), 10)).collect();
        let theirs = new_course("Curso de outro catálogo", 10);
        let mut stored: Vec<(String, Course)> =
            mine.iter().map(|course| (main.as_str().to_owned(), course.clone())).collect();
        stored.push((other.as_str().to_owned(), theirs.clone()));
        let courses = Arc::new(stored);
        let (reads, statements) = (Arc::new(PointReads::default()), Arc::new(Statements::default()));

        // As many reads as leaders: each runs a statement of its own, held at its gate.
        let leaders: Vec<_> = (0..LEADERS)
            .map(|number| read_on_a_thread(&reads, &statements, &courses, (main.clone(), mine[number].id())))
            .collect();
        poll_until("every leader in its statement", || statements.count() == LEADERS);
        // The threads reach their statements in any order: each statement holds one read's id.
        let mut leading_ids: Vec<CourseId> = statements
            .calls
            .lock()
            .expect("calls")
            .iter()
            .inspect(|call| assert_eq!(call.len(), 1, "below the leaders' number, a read is a statement of its own"))
            .map(|call| call[0])
            .collect();
        leading_ids.sort_unstable();
        let mut expected_leaders: Vec<CourseId> = mine[..LEADERS].iter().map(Course::id).collect();
        expected_leaders.sort_unstable();
        assert_eq!(leading_ids, expected_leaders, "each leader's read in a statement of its own");

        // Twenty more wait: repeated ids, a course of another catalog asked in the wrong one.
        let asked: Vec<(CatalogName, CourseId)> = (0..20)
            .map(|number| match number % 5 {
                4 => (main.clone(), theirs.id()),
                3 => (other.clone(), theirs.id()),
                _ => (main.clone(), mine[number % 8].id()),
            })
            .collect();
        let queued: Vec<_> =
            asked.iter().map(|wanted| read_on_a_thread(&reads, &statements, &courses, wanted.clone())).collect();
        poll_until("twenty reads queued", || waiting(&reads) == 20);
        assert_eq!(statements.count(), LEADERS, "a queued read runs no statement");

        // The first leader to finish hands the lead on: the whole queue in one statement.
        statements.open(0);
        let answers: Vec<Answer> = queued.into_iter().map(|read| read.join().expect("a queued read")).collect();
        assert_eq!(statements.count(), LEADERS + 1, "the twenty were answered by one statement");
        let mut expected_ids: Vec<CourseId> = asked.iter().map(|(_, id)| *id).collect();
        expected_ids.sort_unstable();
        expected_ids.dedup();
        assert_eq!(statements.calls.lock().expect("calls")[LEADERS], expected_ids, "each id once");
        for ((wanted_catalog, id), answer) in asked.iter().zip(answers) {
            let answer = answer.expect("answered");
            if *wanted_catalog == main && *id == theirs.id() {
                assert_eq!(answer, None, "a course of another catalog is not found in this one");
            } else {
                assert_eq!(answer.map(|course| course.id()), Some(*id), "its own course");
            }
        }

        for number in (0..LEADERS).skip(1) {
            statements.open(number);
        }
        for (number, leader) in leaders.into_iter().enumerate() {
            assert_eq!(
                leader.join().expect("a leader").expect("answered").map(|course| course.id()),
                Some(mine[number].id())
            );
        }
        assert_eq!(reads.lock().leading, 0, "every place given back");
    }

    #[test]
    fn a_failed_statement_fails_only_its_own_reads_with_the_cause() {
        let reads = PointReads::default();
        let main = catalog("principal");
        let course = new_course("Curso", 10);
        let failed = reads
            .find(&main, course.id(), |_| {
                Err(StoreError::new("cannot read courses", std::io::Error::other("conexão perdida")))
            })
            .expect_err("the statement failed");
        let chain = format!("{failed:#}");
        let mut source = std::error::Error::source(&failed);
        let mut causes = Vec::new();
        while let Some(cause) = source {
            causes.push(cause.to_string());
            source = cause.source();
        }
        assert!(causes.iter().any(|cause| cause.contains("conexão perdida")), "the cause is kept: {chain} {causes:?}");

        let stored = vec![(main.as_str().to_owned(), course.clone())];
        let found = reads.find(&main, course.id(), |_| Ok(stored.clone())).expect("the next read is served");
        assert_eq!(found, Some(course));
        assert_eq!(reads.lock().leading, 0);
    }

    #[test]
    fn reads_queued_behind_a_statement_that_panics_are_still_answered() {
        let main = catalog("principal");
        let course = new_course("Curso", 10);
        let courses = Arc::new(vec![(main.as_str().to_owned(), course.clone())]);
        let (reads, statements) = (Arc::new(PointReads::default()), Arc::new(Statements::default()));
        let panicking = {
            let (reads, statements, courses) = (Arc::clone(&reads), Arc::clone(&statements), Arc::clone(&courses));
            let main = main.clone();
            std::thread::spawn(move || {
                reads.find(&main, course.id(), |ids| {
                    statements.run(ids, &courses);
                    panic!("a bug in the statement")
                })
            })
        };
        let others: Vec<_> = (0..LEADERS)
            .skip(1)
            .map(|_| read_on_a_thread(&reads, &statements, &courses, (main.clone(), courses[0].1.id())))
            .collect();
        poll_until("every leader in its statement", || statements.count() == LEADERS);
        let queued: Vec<_> = (0..5)
            .map(|_| read_on_a_thread(&reads, &statements, &courses, (main.clone(), courses[0].1.id())))
            .collect();
        poll_until("five reads queued", || waiting(&reads) == 5);

        for number in 0..LEADERS {
            statements.open(number);
        }
        assert!(panicking.join().is_err(), "the statement panicked");
        for read in others.into_iter().chain(queued) {
            let answer = read.join().expect("no other thread panicked").expect("answered");
            assert_eq!(answer.map(|course| course.id()), Some(courses[0].1.id()));
        }
        assert_eq!(reads.lock().leading, 0, "the panicking leader's place was given back or handed on");
    }
}
