//! The JSON text of the courses read lately ([`CourseTexts`]): a read of `cursos://{uuid}` whose
//! course is the one a recent read serialized reuses that text instead of building and
//! serializing its [`CourseJson`] again (about 5k of a read's 167k instructions, bench/RESULTS.md).
//!
//! The text is a function of the [`Course`] value alone, and an entry is used only when the
//! course just read from the store **equals** the one it was made from (every field, not only the
//! id and version), so the cache can never answer with anything but what serializing would give:
//! it holds no rule and decides nothing about currency, which stays the store's (ADR 0034).

use std::collections::HashMap;
use std::sync::Mutex;

use courses_domain::{Course, CourseId};

use crate::contract::wire::CourseJson;

/// How many courses' texts are kept: past it, the cache starts over (bounded, about 2 MB at most).
pub(crate) const CAPACITY: usize = 4096;

/// Process-wide, shared by every session and request (`ServerState`).
#[derive(Debug, Default)]
pub(crate) struct CourseTexts {
    entries: Mutex<HashMap<CourseId, (Course, String)>>,
}

impl CourseTexts {
    /// `course` as the JSON text of its [`CourseJson`].
    ///
    /// # Errors
    /// Serialization's (none for this type, in practice).
    pub(crate) fn text_of(&self, course: &Course) -> serde_json::Result<String> {
        let lock = || self.entries.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((cached, text)) = lock().get(&course.id())
            && cached == course
        {
            return Ok(text.clone());
        }
        let text = serde_json::to_string(&CourseJson::from_course(course))?;
        let mut entries = lock();
        if entries.len() >= CAPACITY && !entries.contains_key(&course.id()) {
            entries.clear();
        }
        entries.insert(course.id(), (course.clone(), text.clone()));
        Ok(text)
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.lock().unwrap_or_else(std::sync::PoisonError::into_inner).len()
    }
}

#[cfg(test)]
mod tests {
    use courses_domain::{CourseTitle, NewCourse, WorkloadHours};
    use time::macros::datetime;

    use super::*;

    fn course(title: &str) -> Course {
        Course::create(
            NewCourse {
                title: CourseTitle::parse(title).expect("title"),
                workload_hours: WorkloadHours::parse(10).expect("hours"),
            },
            datetime!(2026-12-01 12:00:00.5 UTC),
        )
    }

    fn serialized(course: &Course) -> String {
        serde_json::to_string(&CourseJson::from_course(course)).expect("serialized")
    }

    #[test]
    fn a_course_read_again_gets_the_same_text_and_a_changed_one_its_new_text() {
        let texts = CourseTexts::default();
        let first = course("Rust");
        assert_eq!(texts.text_of(&first).expect("text"), serialized(&first));
        assert_eq!(texts.text_of(&first).expect("text"), serialized(&first), "from the cache");
        assert_eq!(texts.len(), 1);

        // Same id and version, another title (a database replaced under a running server): the
        // entry is not used, since it was made from another value.
        let renamed = Course::imported(
            first.id(),
            NewCourse {
                title: CourseTitle::parse("Rust avançado").expect("title"),
                workload_hours: first.workload_hours(),
            },
            first.is_archived(),
            first.version(),
            first.created_at(),
            first.updated_at(),
            first.updated_at(),
        )
        .expect("course");
        let text = texts.text_of(&renamed).expect("text");
        assert_eq!(text, serialized(&renamed));
        assert!(text.contains("Rust avançado"), "{text}");
        assert_eq!(texts.len(), 1, "one entry per course");
    }

    #[test]
    fn the_cache_never_holds_more_than_its_capacity() {
        let texts = CourseTexts::default();
        for n in 0..=CAPACITY {
            texts.text_of(&course(&format!("Curso {n}"))).expect("text");
            assert!(texts.len() <= CAPACITY);
        }
        assert_eq!(texts.len(), 1, "it started over at the capacity");
    }
}
