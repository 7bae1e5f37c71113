//! Keyset pagination of the active catalog: [`PageCursor`], [`PageSize`] and [`CoursePage`].

use time::OffsetDateTime;

use crate::{Course, CourseId};

/// Where the next page of active courses starts: just after this (creation time, id) position.
///
/// Its text form ([`PageCursor::to_token`]) is opaque to clients and stable across restarts. A
/// page is found by an index seek, so its cost does not grow with the catalog's size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageCursor {
    pub(crate) created_at: OffsetDateTime,
    pub(crate) id: CourseId,
}

/// Why a text is not a [`PageCursor`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a page cursor")]
pub struct PageCursorError;

impl PageCursor {
    /// The position just after `course`.
    #[must_use]
    pub fn after(course: &Course) -> Self {
        Self {
            created_at: course.created_at(),
            id: course.id(),
        }
    }

    /// The cursor's text form: `<unix milliseconds>.<course id>`.
    #[must_use]
    pub fn to_token(&self) -> String {
        let millis = self.created_at.unix_timestamp_nanos() / 1_000_000;
        format!("{millis}.{}", self.id)
    }

    /// Reads a token made by [`PageCursor::to_token`].
    ///
    /// # Errors
    /// [`PageCursorError`] when the text was not made by `to_token`.
    pub fn parse_token(token: &str) -> Result<Self, PageCursorError> {
        let (millis, id) = token.split_once('.').ok_or(PageCursorError)?;
        if millis.is_empty()
            || !millis
                .bytes()
                .all(|byte| byte.is_ascii_digit() || byte == b'-')
        {
            return Err(PageCursorError);
        }
        let millis: i128 = millis.parse().map_err(|_| PageCursorError)?;
        let created_at = OffsetDateTime::from_unix_timestamp_nanos(millis * 1_000_000)
            .map_err(|_| PageCursorError)?;
        let id = CourseId::parse(id).map_err(|_| PageCursorError)?;
        Ok(Self { created_at, id })
    }
}

/// How many courses a page holds: 1 to [`PageSize::MAX`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageSize(u16);

impl PageSize {
    /// The most courses one page holds.
    pub const MAX: u16 = 100;

    /// A page size, clamped to `1..=MAX`.
    #[must_use]
    pub fn clamped(size: u16) -> Self {
        Self(size.clamp(1, Self::MAX))
    }

    /// The number of courses.
    #[must_use]
    pub fn get(self) -> u16 {
        self.0
    }
}

impl Default for PageSize {
    fn default() -> Self {
        Self(Self::MAX)
    }
}

/// One page of active courses, oldest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoursePage {
    /// The courses of this page, oldest first.
    pub courses: Vec<Course>,
    /// Where the next page starts, or `None` when this page is the last.
    pub next: Option<PageCursor>,
}

#[cfg(test)]
mod tests {
    use time::macros::datetime;

    use super::*;

    #[test]
    fn a_cursor_round_trips_through_its_token() {
        let cursor = PageCursor {
            created_at: datetime!(2026-11-30 12:00:00.123 UTC),
            id: CourseId::generate(),
        };
        assert_eq!(PageCursor::parse_token(&cursor.to_token()), Ok(cursor));
    }

    #[test]
    fn a_token_that_was_not_made_by_the_catalog_is_refused() {
        for token in [
            "",
            ".",
            "abc",
            "12",
            "12.",
            "x.1b4e28ba-2fa1-41d2-883f-0016d3cca427",
            "1.not-an-id",
            "99999999999999999999999999.1b4e28ba-2fa1-41d2-883f-0016d3cca427",
        ] {
            assert_eq!(
                PageCursor::parse_token(token),
                Err(PageCursorError),
                "{token:?}"
            );
        }
    }

    #[test]
    fn a_page_size_is_clamped_to_one_to_a_hundred() {
        assert_eq!(PageSize::clamped(0).get(), 1);
        assert_eq!(PageSize::clamped(500).get(), 100);
        assert_eq!(PageSize::default().get(), 100);
    }
}
