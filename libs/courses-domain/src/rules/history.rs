//! A course's history: [`Provenance`] (who asked for a write, and how) and [`HistoryEntry`] (one
//! accepted write, recorded in the same transaction as the change itself).

use time::OffsetDateTime;

use super::{Course, PageCursor};

/// Who asked for a write and how. The catalog records it with every accepted write.
///
/// The domain keeps these as opaque text: the server library decides what an author, a tool and
/// the arguments look like (a key's name or `stdio`, an MCP tool name, the call's JSON).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Provenance {
    author: String,
    tool: String,
    arguments: String,
    evidence: Option<Evidence>,
}

impl Provenance {
    /// The longest author, tool or arguments text kept; longer ones are cut (on a character
    /// boundary). The server bounds its arguments well below this.
    pub const MAX_BYTES: usize = 64 * 1024;

    /// A write asked for by `author` through `tool` with `arguments`.
    #[must_use]
    pub fn new(author: impl Into<String>, tool: impl Into<String>, arguments: impl Into<String>) -> Self {
        Self {
            author: bounded(author.into()),
            tool: bounded(tool.into()),
            arguments: bounded(arguments.into()),
            evidence: None,
        }
    }

    /// The same write, with the evidence of how it was asked for.
    #[must_use]
    pub fn with_evidence(mut self, evidence: Evidence) -> Self {
        self.evidence = Some(evidence);
        self
    }

    /// The evidence recorded with the write; `None` for an entry written before evidence was
    /// recorded (never invented when read back).
    #[must_use]
    pub fn evidence(&self) -> Option<&Evidence> {
        self.evidence.as_ref()
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

/// The evidence of how a write was asked for: the protocol revision and the client the request
/// declared, the server's capability surface the caller was offered (a hash), and, for an
/// archiving, its [`ApprovalReceipt`].
///
/// Opaque bounded text, like [`Provenance`]: the server library decides what a revision, a
/// client's name or a surface hash look like. What a client did not declare is `None`, never
/// invented.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Evidence {
    protocol_revision: Option<String>,
    client_name: Option<String>,
    client_version: Option<String>,
    surface_hash: String,
    approval: Option<ApprovalReceipt>,
}

impl Evidence {
    /// The longest revision, client name or version, or surface hash kept; longer ones are cut.
    pub const MAX_FIELD_BYTES: usize = 256;

    /// A write asked for under `protocol_revision` by the client `client_name`/`client_version`
    /// (each `None` when the request declared none), offered the surface `surface_hash`.
    #[must_use]
    pub fn new(
        protocol_revision: Option<String>,
        client_name: Option<String>,
        client_version: Option<String>,
        surface_hash: impl Into<String>,
    ) -> Self {
        let field = |text: String| bounded_to(text, Self::MAX_FIELD_BYTES);
        Self {
            protocol_revision: protocol_revision.map(field),
            client_name: client_name.map(field),
            client_version: client_version.map(field),
            surface_hash: field(surface_hash.into()),
            approval: None,
        }
    }

    /// The same evidence, with the approval receipt of an archiving.
    #[must_use]
    pub fn with_approval(mut self, approval: ApprovalReceipt) -> Self {
        self.approval = Some(approval);
        self
    }

    /// The protocol revision of the request, if it declared one.
    #[must_use]
    pub fn protocol_revision(&self) -> Option<&str> {
        self.protocol_revision.as_deref()
    }

    /// The client's declared name, if it declared one.
    #[must_use]
    pub fn client_name(&self) -> Option<&str> {
        self.client_name.as_deref()
    }

    /// The client's declared version, if it declared one.
    #[must_use]
    pub fn client_version(&self) -> Option<&str> {
        self.client_version.as_deref()
    }

    /// The hash of the capability surface (tools, prompts, resources) the caller was offered.
    #[must_use]
    pub fn surface_hash(&self) -> &str {
        &self.surface_hash
    }

    /// The approval receipt, for an archiving; `None` for other writes.
    #[must_use]
    pub fn approval(&self) -> Option<&ApprovalReceipt> {
        self.approval.as_ref()
    }
}

/// How an archiving was approved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovalReceipt {
    /// The user was asked and answered yes.
    Asked {
        /// The question shown, as the server worded it (bounded by [`Provenance::MAX_BYTES`]).
        question: String,
        /// The course's version the question showed (the one archived).
        shown_version: u64,
        /// The answer as the client sent it (opaque text, bounded by [`Provenance::MAX_BYTES`]).
        answer: String,
        /// When the server received the answer (UTC, millisecond precision).
        answered_at: OffsetDateTime,
    },
    /// No one was asked: the client could not ask and the operator allowed archiving without a
    /// confirmation (`UNCONFIRMED_ARCHIVE=allow`).
    NotAsked,
}

impl ApprovalReceipt {
    /// The user was asked `question` about `shown_version` and answered `answer` at `answered_at`.
    #[must_use]
    pub fn asked(
        question: impl Into<String>,
        shown_version: u64,
        answer: impl Into<String>,
        answered_at: OffsetDateTime,
    ) -> Self {
        Self::Asked {
            question: bounded(question.into()),
            shown_version,
            answer: bounded(answer.into()),
            answered_at: super::truncate_to_millis(answered_at),
        }
    }
}

fn bounded(text: String) -> String {
    bounded_to(text, Provenance::MAX_BYTES)
}

fn bounded_to(mut text: String, maximum: usize) -> String {
    if text.len() > maximum {
        let mut end = maximum;
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
