//! A course's history: [`Provenance`] (who asked for a write, and how) and [`HistoryEntry`] (one
//! accepted write, recorded in the same transaction as the change itself).

use time::OffsetDateTime;

use crate::{Course, PageCursor};

/// Who asked for a write and how. The catalog records it with every accepted write.
///
/// The domain keeps these as opaque text: the server library decides what an author, a tool and
/// the arguments look like (a key's name or `stdio`, an MCP tool name, the call's JSON).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Provenance {
    author: String,
    tool: String,
    arguments: String,
}

impl Provenance {
    /// The longest author, tool or arguments text kept; longer ones are cut (on a character
    /// boundary). The server bounds its arguments well below this.
    pub const MAX_BYTES: usize = 64 * 1024;

    /// A write asked for by `author` through `tool` with `arguments`.
    #[must_use]
    pub fn new(author: impl Into<String>, tool: impl Into<String>, arguments: impl Into<String>) -> Self {
        Self { author: bounded(author.into()), tool: bounded(tool.into()), arguments: bounded(arguments.into()) }
    }

    /// Who: an API key's name, or `stdio`.
    #[must_use]
    pub fn author(&self) -> &str {
        &self.author
    }

    /// Through which operation (the MCP tool's name).
    #[must_use]
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// With which arguments, as the caller sent them (JSON text).
    #[must_use]
    pub fn arguments(&self) -> &str {
        &self.arguments
    }
}

fn bounded(mut text: String) -> String {
    if text.len() > Provenance::MAX_BYTES {
        let mut end = Provenance::MAX_BYTES;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    text
}

/// One accepted write of a course: who, when, how, and the course before and after.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryEntry {
    /// When the write was accepted (the course's `updated_at` after it).
    pub recorded_at: OffsetDateTime,
    /// Who asked, through what, with which arguments.
    pub provenance: Provenance,
    /// The course before the write; `None` for its creation.
    pub before: Option<Course>,
    /// The course as the write left it.
    pub after: Course,
}

/// One page of a course's history, newest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryPage {
    /// The entries of this page, newest first.
    pub entries: Vec<HistoryEntry>,
    /// Where the next (older) page starts, or `None` when this page is the last.
    pub next: Option<PageCursor>,
}
