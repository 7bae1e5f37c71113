//! Archiving a course (irreversible), the one use-case behind `arquivar_curso` and the app's
//! `interface_arquivar_curso` (ADR 0017, 0027, 0039):
//!
//! 1. read the course (an unknown id is refused);
//! 2. a no-op (already archived) or a refusal (a `versao` other than the current one) is
//!    answered at once: nothing is asked, nothing is written, no evidence is computed;
//! 3. the user confirms ([`AskedBy`]: the client asks, or the app shows the server's question);
//! 4. authority is asked again at the moment of the write ([`refusal_at_write`], ADR 0044):
//!    the caller still stands, may still write in that catalog, the operator's policy still
//!    offers the tool there and the server is not read-only; otherwise nothing is written and
//!    the refusal says what changed while the confirmation waited;
//! 5. only the version the user was shown is archived, with the approval's receipt;
//! 6. a change in between refuses, and the course is read again to say what it is now.

use courses_domain::{
    ApprovalReceipt, ArchiveCourseError, Catalog, Course, CourseId, GetCourseError, PageSize, Provenance,
};
use rmcp::RoleServer;
use rmcp::model::{CallToolResponse, CallToolResult};
use rmcp::service::RequestContext;

use crate::access::authority::Standing;
use crate::access::caller::Caller;
use crate::access::confirmation::{self, Answer, AskedOf, Confirmation, ConfirmationSeal};
use crate::access::policy::CatalogPolicy;
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
        asked: AskedOf<'_>,
        course: &Course,
    ) -> Result<(u64, ApprovalReceipt), CallToolResponse> {
        let confirmation = match self {
            Self::Client { options, answer, context } => {
                confirmation::confirm_archive(options, seal, asked, course, answer, context).await
            }
            Self::App { answer: None } => return Err(question(seal, asked, course).into()),
            Self::App { answer: Some((state, confirmed)) } => {
                match confirmation::interface_answer(seal, asked, course, &state, confirmed) {
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
fn question(seal: &ConfirmationSeal, asked: AskedOf<'_>, course: &Course) -> CallToolResult {
    let Some((pergunta, estado_pergunta)) = confirmation::interface_question(seal, asked, course) else {
        return outcomes::refused(outcomes::INTERNAL_TOOL_ERROR);
    };
    let question = ArchiveQuestionJson { pergunta, estado_pergunta, curso: CourseJson::from_course(course) };
    match serde_json::to_string(&question) {
        Ok(json) => outcomes::read_only(&json),
        Err(error) => outcomes::internal_tool_error(&error),
    }
}

/// How the caller and the operator's policy stand at the moment of the write: asked after the
/// confirmation, never before.
pub(crate) trait AtWrite: Sync {
    /// How the caller stands now.
    fn standing(&self, caller: &Caller) -> Standing;
    /// The operator's policy for `caller`'s catalog now.
    fn policy(&self, caller: &Caller) -> CatalogPolicy;
}

/// Why an archiving through `tool` that `caller` asked for may not be written now, in
/// Portuguese, or `None` when it may: `standing` is how the caller stands now, `policy` the
/// operator's policy for the caller's catalog now.
pub(crate) fn refusal_at_write(
    tool: &str,
    caller: &Caller,
    standing: &Standing,
    policy: &CatalogPolicy,
) -> Option<String> {
    let changed = match standing {
        Standing::Lapsed(lapsed) => Some(lapsed.describe().to_owned()),
        Standing::Changed(now) if now.catalog() != caller.catalog() => Some(format!(
            "a credencial passou para o catálogo {} (o curso é do catálogo {})",
            now.catalog(),
            caller.catalog()
        )),
        Standing::Changed(now) if !now.scope().can_write() => {
            Some(format!("o escopo da credencial passou a {} e não permite alterar o catálogo", now.scope()))
        }
        Standing::Changed(_) | Standing::Unchanged => None,
    };
    let changed = changed.or_else(|| {
        if policy.is_read_only() {
            Some("o servidor entrou em modo somente leitura".to_owned())
        } else if policy.allows_tool(tool) {
            None
        } else {
            Some(format!("o operador desativou a ferramenta {tool}"))
        }
    })?;
    tracing::info!(tool, caller = caller.name(), changed, "an archiving was refused at write time");
    Some(format!("O curso não foi arquivado: {changed} enquanto a confirmação esperava; nada foi alterado."))
}

/// Archives course `id` of `catalog` for the caller `asked`, if at `expected_version` (when
/// given), once the user confirmed as `asked_by` says and if `at_write` still allows it then.
/// `provenance` records the write with its receipt: it is built only for a real archiving, after
/// the confirmation (the evidence costs a surface hash).
pub(crate) async fn archive(
    catalog: &Catalog,
    asked: AskedOf<'_>,
    seal: &ConfirmationSeal,
    (id, expected_version): (CourseId, Option<u64>),
    asked_by: AskedBy<'_>,
    at_write: &dyn AtWrite,
    provenance: impl FnOnce(&'static str, ApprovalReceipt) -> Provenance,
) -> CallToolResponse {
    let caller = asked.caller;
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
    let (shown_version, receipt) = match asked_by.confirm(seal, asked, &course).await {
        Ok(confirmed) => confirmed,
        Err(answer) => return answer,
    };
    // The confirmation may have waited minutes: authority is asked again now (ADR 0044).
    if let Some(refusal) = refusal_at_write(tool, caller, &at_write.standing(caller), &at_write.policy(caller)) {
        return outcomes::refused(&refusal).into();
    }
    // Only the version the user was shown is archived: a change since refuses.
    let outcome = catalog.archive_if(id, Some(shown_version), provenance(tool, receipt)).await;
    if let Err(ArchiveCourseError::StaleVersion { .. }) = outcome {
        let current = catalog.get(id).await.ok();
        // The app's answer comes in a later call than its question: the course read by this call
        // may already be newer than the one the user was shown. The refusal names what was shown.
        let shown = if course.version() == shown_version {
            Some(course)
        } else {
            course_at_version(catalog, id, shown_version).await
        };
        return outcomes::changed_since_confirmation(id, shown_version, shown.as_ref(), current.as_ref()).into();
    }
    outcomes::archived(outcome).into()
}

/// Course `id` as it was at `version`, from the newest page of its history (where a version a
/// user was just shown is), or `None` when it is not there or cannot be read.
async fn course_at_version(catalog: &Catalog, id: CourseId, version: u64) -> Option<Course> {
    let page = catalog.history(id, None, PageSize::default()).await.ok()?;
    page.entries.into_iter().map(|entry| entry.after).find(|course| course.version() == version)
}

#[cfg(test)]
mod tests {
    use courses_domain::CatalogName;

    use super::*;
    use crate::access::authority::Lapsed;
    use crate::access::caller::Scope;
    use crate::access::policy::Policy;

    fn policy(text: &str) -> CatalogPolicy {
        Policy::parse(text).expect("policy").for_catalog("padrao")
    }

    #[test]
    fn a_caller_that_still_stands_under_an_unchanged_policy_may_write() {
        let ana = Caller::new("ana", Scope::Write);
        assert_eq!(refusal_at_write(ARCHIVE_TOOL, &ana, &Standing::Unchanged, &policy("")), None);
        let renamed_only = Standing::Changed(Caller::new("ana", Scope::Write));
        assert_eq!(refusal_at_write(ARCHIVE_TOOL, &ana, &renamed_only, &policy("")), None);
        let other_tool_off = policy("desativar ferramenta criar_curso\n");
        assert_eq!(refusal_at_write(ARCHIVE_TOOL, &ana, &Standing::Unchanged, &other_tool_off), None);
    }

    #[test]
    fn each_change_while_the_confirmation_waited_is_refused_saying_what_changed() {
        let ana = Caller::new("ana", Scope::Write);
        let everything_on = policy("");
        let moved = Caller::new("ana", Scope::Write).in_catalog(CatalogName::parse("outro").expect("name"));
        let cases = [
            (Standing::Lapsed(Lapsed::Revoked), everything_on.clone(), ARCHIVE_TOOL, "a chave foi revogada"),
            (Standing::Lapsed(Lapsed::Expired), everything_on.clone(), ARCHIVE_TOOL, "o token expirou"),
            (Standing::Changed(moved), everything_on.clone(), ARCHIVE_TOOL, "passou para o catálogo outro"),
            (
                Standing::Changed(Caller::new("ana", Scope::Read)),
                everything_on,
                ARCHIVE_TOOL,
                "o escopo da credencial passou a leitura",
            ),
            (Standing::Unchanged, policy("somente-leitura\n"), ARCHIVE_TOOL, "modo somente leitura"),
            (
                Standing::Unchanged,
                policy("desativar ferramenta arquivar_curso\n"),
                ARCHIVE_TOOL,
                "desativou a ferramenta arquivar_curso",
            ),
            // The app's archiving goes off with arquivar_curso.
            (
                Standing::Unchanged,
                policy("desativar ferramenta arquivar_curso\n"),
                ui::ARCHIVE_TOOL,
                "desativou a ferramenta interface_arquivar_curso",
            ),
        ];
        for (standing, policy, tool, says) in cases {
            let refusal = refusal_at_write(tool, &ana, &standing, &policy).unwrap_or_else(|| panic!("{says}"));
            assert!(refusal.contains(says), "{refusal}");
            assert!(refusal.ends_with("enquanto a confirmação esperava; nada foi alterado."), "{refusal}");
        }
    }
}
