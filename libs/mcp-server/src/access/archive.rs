//! Archiving a course (irreversible), the one use-case behind `arquivar_curso` and the app's
//! `interface_arquivar_curso` (ADR 0017, 0027, 0039):
//!
//! 1. read the course (an unknown id is refused);
//! 2. a no-op (already archived) or a refusal (a `versao` other than the current one) is
//!    answered at once: nothing is asked, nothing is written, no evidence is computed;
//! 3. the user confirms ([`AskedBy`]: the client asks, or the app shows the server's question);
//! 4. only the version the user was shown is archived, with the approval's receipt;
//! 5. a change in between refuses, and the course is read again to say what it is now.

use courses_domain::{ApprovalReceipt, ArchiveCourseError, Catalog, Course, CourseId, GetCourseError, Provenance};
use rmcp::RoleServer;
use rmcp::model::{CallToolResponse, CallToolResult};
use rmcp::service::RequestContext;

use crate::access::caller::Caller;
use crate::access::confirmation::{self, Answer, Confirmation, ConfirmationSeal};
use crate::contract::ui;
use crate::contract::wire::{ArchiveQuestionJson, CourseJson};
use crate::options::ServerOptions;
use crate::outcomes;

/// The tool whose no-ops and refusals are recorded under its name.
const ARCHIVE_TOOL: &str = "arquivar_curso";

/// How the user is asked to confirm.
#[derive(Debug)]
pub(crate) enum AskedBy<'a> {
    /// `arquivar_curso`: the client asks its user (2025-era elicitation, 2026-07-28
    /// `input_required`), or [`ServerOptions::unconfirmed_archive`] decides.
    Client { options: &'a ServerOptions, answer: Answer, context: &'a RequestContext<RoleServer> },
    /// `interface_arquivar_curso`: the app shows the server's question; `answer` is the sealed
    /// question and the user's answer, or `None` to get the question.
    App { answer: Option<(String, bool)> },
}

impl AskedBy<'_> {
    fn tool(&self) -> &'static str {
        match self {
            Self::Client { .. } => ARCHIVE_TOOL,
            Self::App { .. } => ui::ARCHIVE_TOOL,
        }
    }

    /// The version the user was shown and the receipt of the approval, or what to answer instead.
    async fn confirm(
        self,
        seal: &ConfirmationSeal,
        caller: &Caller,
        course: &Course,
    ) -> Result<(u64, ApprovalReceipt), CallToolResponse> {
        let confirmation = match self {
            Self::Client { options, answer, context } => {
                confirmation::confirm_archive(options, seal, caller.name(), course, answer, context).await
            }
            Self::App { answer: None } => return Err(question(seal, caller, course).into()),
            Self::App { answer: Some((state, confirmed)) } => {
                match confirmation::interface_answer(seal, caller.name(), course, &state, confirmed) {
                    Confirmation::Ask(_) => return Err(outcomes::refused(outcomes::INTERNAL_TOOL_ERROR).into()),
                    other => other,
                }
            }
        };
        match confirmation {
            Confirmation::Confirmed { version, receipt } => Ok((version, receipt)),
            Confirmation::Ask(input_required) => Err(input_required.into()),
            Confirmation::Refused(message) => Err(outcomes::refused(&message).into()),
        }
    }
}

/// The question the app shows before archiving `course` (nothing changes), or a refusal when no
/// question can be sealed.
fn question(seal: &ConfirmationSeal, caller: &Caller, course: &Course) -> CallToolResult {
    let Some((pergunta, estado_pergunta)) = confirmation::interface_question(seal, caller.name(), course) else {
        return outcomes::refused(outcomes::INTERNAL_TOOL_ERROR);
    };
    let question = ArchiveQuestionJson { pergunta, estado_pergunta, curso: CourseJson::from_course(course) };
    match serde_json::to_string(&question) {
        Ok(json) => outcomes::read_only(&json),
        Err(error) => outcomes::internal_tool_error(&error),
    }
}

/// Archives course `id` of `catalog` for `caller`, if at `expected_version` (when given), once
/// the user confirmed as `asked_by` says. `provenance` records the write with its receipt: it is
/// built only for a real archiving, after the confirmation (the evidence costs a surface hash).
pub(crate) async fn archive(
    catalog: &Catalog,
    caller: &Caller,
    seal: &ConfirmationSeal,
    (id, expected_version): (CourseId, Option<u64>),
    asked_by: AskedBy<'_>,
    provenance: impl FnOnce(&'static str, ApprovalReceipt) -> Provenance,
) -> CallToolResponse {
    let course = match catalog.get(id).await {
        Ok(course) => course,
        Err(GetCourseError::NotFound { id }) => {
            return outcomes::archived(Err(ArchiveCourseError::NotFound { id })).into();
        }
        Err(GetCourseError::Store(error)) => return outcomes::archived(Err(error.into())).into(),
    };
    let tool = asked_by.tool();
    let stale = expected_version.is_some_and(|expected| expected != course.version());
    if course.is_archived() || stale {
        // A no-op or a refusal: nothing is written, so no evidence is computed.
        let provenance = Provenance::new(caller.name(), tool, "");
        return outcomes::archived(catalog.archive_if(id, expected_version, provenance).await).into();
    }
    let (shown_version, receipt) = match asked_by.confirm(seal, caller, &course).await {
        Ok(confirmed) => confirmed,
        Err(answer) => return answer,
    };
    // Only the version the user was shown is archived: a change since refuses.
    let outcome = catalog.archive_if(id, Some(shown_version), provenance(tool, receipt)).await;
    if let Err(ArchiveCourseError::StaleVersion { .. }) = outcome {
        let current = catalog.get(id).await.ok();
        return outcomes::changed_since_confirmation(&course, current.as_ref()).into();
    }
    outcomes::archived(outcome).into()
}
