//! Keyset pagination of the active catalog: [`PageCursor`], [`PageSize`] and [`CoursePage`].

use super::Course;

/// Where the next page of active courses starts: just after this position in creation order.
///
/// Positions are assigned by the store when a course is created and never reused, so a page is
/// found by an index seek whose cost does not grow with the catalog's size, and a cursor stays
/// valid across restarts and concurrent writes. Its text form is [`PageCursor::to_token`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct PageCursor(u64);

/// Why a text is not a [`PageCursor`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a page cursor")]
pub struct PageCursorError;

impl PageCursor {
    /// The cursor just after the course a store keeps at `position`.
    #[must_use]
    pub fn after_position(position: u64) -> Self {
        Self(position)
    }

    /// The store position this cursor continues after.
    #[must_use]
    pub fn position(self) -> u64 {
        self.0
    }

    /// The cursor's text form: the position in decimal.
    #[must_use]
    pub fn to_token(&self) -> String {
        self.0.to_string()
    }

    /// Reads a token made by [`PageCursor::to_token`] (plain decimal digits only).
    ///
    /// # Errors
    /// [`PageCursorError`] when the text was not made by `to_token`.
    pub fn parse_token(token: &str) -> Result<Self, PageCursorError> {
        let canonical = token == "0" || !token.starts_with('0');
        if token.is_empty() || token.len() > 19 || !canonical || !token.bytes().all(|byte| byte.is_ascii_digit()) {
            return Err(PageCursorError);
        }
        token.parse::<i64>().ok().and_then(|position| u64::try_from(position).ok()).map(Self).ok_or(PageCursorError)
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
    use super::*;

    #[test]
    fn a_cursor_round_trips_through_its_token() {
        for position in [0, 1, 101, i64::MAX.unsigned_abs()] {
            let cursor = PageCursor::after_position(position);
            assert_eq!(PageCursor::parse_token(&cursor.to_token()), Ok(cursor));
        }
    }

    #[test]
    fn a_token_that_was_not_made_by_the_catalog_is_refused() {
        for token in [
            "",
            "abc",
            "-1",
            "+1",
            " 1",
            "1.5",
            "0x10",
            "007",
            "00",
            "9223372036854775808",
            "99999999999999999999999999",
        ] {
            assert_eq!(PageCursor::parse_token(token), Err(PageCursorError), "{token:?}");
        }
    }

    #[test]
    fn a_page_size_is_clamped_to_one_to_a_hundred() {
        assert_eq!(PageSize::clamped(0).get(), 1);
        assert_eq!(PageSize::clamped(500).get(), 100);
        assert_eq!(PageSize::default().get(), 100);
    }
}
