//! Asking the user to confirm an archiving (irreversible) before it happens.
//!
//! - 2025-era connections that declared `elicitation`: a form elicitation, answered within
//!   [`ANSWER_TIMEOUT`].
//! - 2026-07-28 requests whose `_meta` capabilities include `elicitation`: an `input_required`
//!   result; the client asks its user and retries the call with the answer in `inputResponses`
//!   and the `requestState` this server sealed with the question.
//! - Anything else cannot confirm: [`UnconfirmedArchive`] decides.
//!
//! An answer counts only when it answers a question this server asked (ADR 0027): on 2026-07-28
//! the retry must carry a `requestState` sealed by [`ConfirmationSeal`] (HMAC-SHA-256, bound to
//! who was asked ([`AskedOf`]: the credential's principal, its catalog and the HTTP session, if
//! any) and the course, valid for [`ANSWER_TIMEOUT`]); an answer without one, or with a forged,
//! expired or someone else's, is ignored, as if none had been sent. A question is answered once
//! ([`crate::access::spent`], ADR 0044): declined or cancelled, it cannot later be answered yes.
//! And a confirmation covers the version the user was shown: [`Confirmation::Confirmed`] carries
//! it, and the archiving is refused if the course changed in between.
//!
//! Confirmation protects the user from a model's mistake; it is not authorization (the caller's
//! scope is, checked before any tool runs). A client may answer "accept" without asking anyone,
//! as it may call the tool at all: the server trusts the client to show the question (ADR 0017).

use std::sync::Arc;
use std::time::{Duration, Instant};

use courses_domain::{ApprovalReceipt, Course, OffsetDateTime};
use rmcp::model::{
    ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema, InputRequest,
    InputRequests, InputRequiredResult, ProtocolVersion, RequestStateCodec, SealOptions,
};
use rmcp::service::{ElicitationError, ElicitationMode, RequestContext};
use rmcp::{RoleServer, schemars};
use serde::Deserialize;

use crate::access::caller::Caller;
use crate::access::spent::{NotSpent, SpentAnswers};
use crate::contract::ui;
use crate::options::{ServerOptions, UnconfirmedArchive};

/// How long a 2025-era client has to answer the confirmation before the archiving is dropped.
pub(crate) const ANSWER_TIMEOUT: Duration = Duration::from_secs(300);

/// The key of the confirmation in a 2026-07-28 `inputRequests` / `inputResponses` map.
pub(crate) const INPUT_KEY: &str = "confirmacao";

// The schema's title and description are shown to the user by some hosts: Portuguese, like the
// question (a doc comment here would become an English description).
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[schemars(title = "Confirmar arquivamento", description = "Arquivar tira o curso do catálogo, para sempre.")]
pub(crate) struct ArchiveConfirmation {
    /// Marque para arquivar o curso. Não há como desarquivar.
    pub(crate) confirmar: bool,
}

rmcp::elicit_safe!(ArchiveConfirmation);

/// Seals the `requestState` of a 2026-07-28 confirmation question, so that only an answer to a
/// question this server asked (this process, or a replica given the same secret) is accepted.
/// Without a secret (the system gave no randomness) no question can be asked on 2026-07-28:
/// such clients are treated as unable to confirm (fail closed).
#[derive(Clone)]
pub(crate) struct ConfirmationSeal {
    codec: Option<RequestStateCodec>,
    spent: Arc<SpentAnswers>,
}

/// Who a question was asked of: an answer counts only from the same credential holder, in the
/// same catalog, through the same HTTP session (when the question was asked in one).
#[derive(Debug, Clone, Copy)]
pub(crate) struct AskedOf<'a> {
    /// The caller as authenticated for the request that asked.
    pub(crate) caller: &'a Caller,
    /// The `Mcp-Session-Id` of that request, if any.
    pub(crate) session: Option<&'a str>,
}

/// A sealed question, opened: the version it showed and its nonce (spent by its answer).
#[derive(Debug, PartialEq, Eq)]
struct Opened {
    version: u64,
    nonce: String,
}

impl std::fmt::Debug for ConfirmationSeal {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("ConfirmationSeal(<redacted>)")
    }
}

/// A confirmation secret shorter than [`RequestStateCodec::MIN_KEY_LENGTH`] (32 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the confirmation secret must have at least {minimum} bytes (it has {actual})")]
pub struct ConfirmationSecretTooShort {
    /// The bytes required.
    pub minimum: usize,
    /// The bytes given.
    pub actual: usize,
}

impl ConfirmationSeal {
    /// A seal with a fresh random secret: questions are answerable in this process only.
    pub(crate) fn random() -> Self {
        let mut secret = [0_u8; 32];
        let codec = getrandom::fill(&mut secret)
            .map_err(|error| error.to_string())
            .and_then(|()| RequestStateCodec::try_new(secret.to_vec()).map_err(|error| error.to_string()));
        match codec {
            Ok(codec) => Self::of(Some(codec)),
            Err(error) => {
                tracing::error!(%error, "no confirmation secret: 2026-07-28 clients cannot confirm an archiving");
                Self::of(None)
            }
        }
    }

    /// A seal with the operator's secret, shared by every replica behind one address.
    ///
    /// # Errors
    /// [`ConfirmationSecretTooShort`] below 32 bytes.
    pub(crate) fn with_secret(secret: &[u8]) -> Result<Self, ConfirmationSecretTooShort> {
        RequestStateCodec::try_new(secret.to_vec()).map(|codec| Self::of(Some(codec))).map_err(|_| {
            ConfirmationSecretTooShort { minimum: RequestStateCodec::MIN_KEY_LENGTH, actual: secret.len() }
        })
    }

    fn of(codec: Option<RequestStateCodec>) -> Self {
        Self { codec, spent: Arc::new(SpentAnswers::new(ANSWER_TIMEOUT)) }
    }

    /// The state of a question about archiving `course` as shown, asked of `asked` through
    /// `tool`: the version shown and a fresh nonce, sealed.
    fn seal(&self, tool: &str, asked: AskedOf<'_>, course: &Course) -> Option<String> {
        let codec = self.codec.as_ref()?;
        let mut nonce = [0_u8; 16];
        if let Err(error) = getrandom::fill(&mut nonce) {
            tracing::error!(%error, "no randomness for a confirmation question: none is asked");
            return None;
        }
        let nonce: String = nonce.iter().map(|byte| format!("{byte:02x}")).collect();
        let bound = bound_to(tool, asked, course);
        let options = SealOptions::new().associated_data(&bound).ttl(ANSWER_TIMEOUT);
        Some(codec.seal_with(format!("{}:{nonce}", course.version()).as_bytes(), &options))
    }

    /// The version of `course` the user was shown and the question's nonce, if `state` is a
    /// question this server asked `asked` about this course through `tool`, unexpired.
    fn open(&self, tool: &str, asked: AskedOf<'_>, course: &Course, state: &str) -> Option<Opened> {
        let opened = self.codec.as_ref()?.open_with(state, &bound_to(tool, asked, course)).ok()?;
        let (version, nonce) = std::str::from_utf8(&opened).ok()?.split_once(':')?;
        Some(Opened { version: version.parse().ok()?, nonce: nonce.to_owned() })
    }

    /// Spends the opened question: `Err` with the refusal (Portuguese) when it was answered
    /// before (or no answer can be remembered now).
    fn spend(&self, opened: &Opened, course: &Course) -> Result<(), String> {
        self.spent.spend(&opened.nonce, Instant::now()).map_err(|not_spent| {
            let title = crate::contract::wire::quoted(course.title().as_str());
            tracing::info!(course = %course.id(), ?not_spent, "an archiving answer to a question already answered was refused");
            match not_spent {
                NotSpent::AlreadyAnswered => format!(
                    "Esta pergunta sobre arquivar o curso {title} já foi respondida (uma resposta recusada ou \
                     cancelada não pode virar sim depois); nada foi alterado. Peça a pergunta de novo."
                ),
                NotSpent::Full => format!(
                    "O servidor não pode registrar mais respostas de confirmação agora; o curso {title} não foi \
                     arquivado e nada foi alterado. Tente de novo em alguns minutos."
                ),
            }
        })
    }
}

/// What a sealed question is bound to: the tool, who was asked (principal, catalog, session)
/// and the course (not its version, which is in the sealed payload: a renamed course still opens
/// the state, then fails the version). The tool keeps the two paths apart: a question the app
/// asked cannot answer the tool's, nor the reverse.
fn bound_to(tool: &str, asked: AskedOf<'_>, course: &Course) -> Vec<u8> {
    format!(
        "{tool}\u{0}{}\u{0}{}\u{0}{}\u{0}{}",
        asked.caller.principal().as_str(),
        asked.caller.catalog(),
        asked.session.unwrap_or(""),
        course.id()
    )
    .into_bytes()
}

/// The tool whose 2026-07-28 questions [`confirm_archive`] seals.
const ARCHIVE_TOOL: &str = "arquivar_curso";

/// What to do with the archiving.
#[derive(Debug)]
pub(crate) enum Confirmation {
    /// Go ahead, archiving only this version of the course (the one the user was shown).
    Confirmed {
        /// The course's version when the question was asked.
        version: u64,
        /// How it was approved, recorded with the archiving (ADR 0037).
        receipt: ApprovalReceipt,
    },
    /// 2026-07-28: answer with this `input_required` result; the client retries with the answer.
    Ask(InputRequiredResult),
    /// Do nothing; tell the model this (Portuguese).
    Refused(String),
}

fn question(course: &Course) -> String {
    format!(
        "Arquivar o curso {} ({})? Ele sai do catálogo e não poderá ser alterado nem desarquivado.",
        crate::contract::wire::quoted(course.title().as_str()),
        course.id()
    )
}

/// Go ahead with `version` of `course`: the receipt records the [`question`], the `answer` and when it came.
fn go_ahead(course: &Course, version: u64, answer: &serde_json::Value) -> Confirmation {
    let receipt = ApprovalReceipt::asked(question(course), version, recorded_answer(answer), OffsetDateTime::now_utc());
    Confirmation::Confirmed { version, receipt }
}

/// The most of an answer's JSON a receipt keeps: a yes is a few dozen bytes; a client may send
/// 64 KiB of anything with it, and every history read would carry it.
pub(crate) const MAX_ANSWER_BYTES: usize = 2048;

/// The answer as the receipt records it: its JSON when at most [`MAX_ANSWER_BYTES`], otherwise
/// still JSON, saying it was cut: `{"cortada": true, "bytes": <its size>, "inicio": "<its first
/// bytes, as text>"}` (issue 24: it was cut at 64 KiB in the middle of a token).
fn recorded_answer(answer: &serde_json::Value) -> String {
    let text = answer.to_string();
    if text.len() <= MAX_ANSWER_BYTES {
        return text;
    }
    // The start is quoted as a JSON string, whose escapes may double it: half the room.
    let mut end = MAX_ANSWER_BYTES / 4;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    serde_json::json!({ "cortada": true, "bytes": text.len(), "inicio": &text[..end] }).to_string()
}

fn not_confirmed(course: &Course) -> Confirmation {
    Confirmation::Refused(format!(
        "O usuário não confirmou o arquivamento do curso {}; nada foi alterado.",
        crate::contract::wire::quoted(course.title().as_str())
    ))
}

/// What a 2026-07-28 retry brought back: the answers and the sealed state of the question.
#[derive(Debug, Default)]
pub(crate) struct Answer {
    /// `inputResponses`.
    pub(crate) responses: Option<rmcp::model::InputResponses>,
    /// `requestState`, echoed by the client (untrusted until opened).
    pub(crate) request_state: Option<String>,
}

/// Asks (or reads the answer to) the confirmation of archiving `course`, as `caller`.
pub(crate) async fn confirm_archive(
    options: &ServerOptions,
    seal: &ConfirmationSeal,
    asked: AskedOf<'_>,
    course: &Course,
    answer: Answer,
    context: &RequestContext<RoleServer>,
) -> Confirmation {
    let modern = context.protocol_version().is_some_and(|version| version >= ProtocolVersion::V_2026_07_28);
    if modern {
        if let Some(response) = answer.responses.as_ref().and_then(|responses| responses.get(INPUT_KEY)) {
            let shown = answer.request_state.as_deref().and_then(|state| seal.open(ARCHIVE_TOOL, asked, course, state));
            match shown {
                Some(opened) => {
                    if let Err(refused) = seal.spend(&opened, course) {
                        return Confirmation::Refused(refused);
                    }
                    return read_answer(response, course, opened.version);
                }
                // Not an answer to a question this server asked (no state, forged, expired, for
                // another caller or course): ignored, as if the client had sent none.
                None => tracing::info!(
                    course = %course.id(),
                    "an archiving confirmation without a valid requestState was ignored"
                ),
            }
        }
        let can_ask = context.client_capabilities().is_some_and(|capabilities| capabilities.elicitation.is_some());
        if can_ask {
            return match ask_modern(seal, asked, course) {
                Some(input_required) => Confirmation::Ask(input_required),
                None => cannot_confirm(options, course),
            };
        }
        return cannot_confirm(options, course);
    }
    let can_ask =
        options.legacy_subscriptions && context.peer.supported_elicitation_modes().contains(&ElicitationMode::Form);
    if !can_ask {
        return cannot_confirm(options, course);
    }
    // The wait for the user's answer, as a child span of the request's when telemetry is on (issue
    // 27, ADR 0051): a server-to-client request per the MCP conventions; the question's text is not
    // recorded (it quotes the title).
    let waiting = tracing::trace_span!(
        target: "mcp_cursos::span",
        "mcp.client.request",
        otel.name = "elicitation/create",
        otel.kind = "client",
        mcp.method.name = "elicitation/create",
    );
    let asked = context.peer.elicit_with_timeout::<ArchiveConfirmation>(question(course), Some(ANSWER_TIMEOUT));
    match tracing::Instrument::instrument(asked, waiting).await {
        Ok(Some(ArchiveConfirmation { confirmar: true })) => {
            go_ahead(course, course.version(), &serde_json::json!({"action": "accept", "content": {"confirmar": true}}))
        }
        Ok(_) | Err(ElicitationError::UserDeclined | ElicitationError::UserCancelled | ElicitationError::NoContent) => {
            not_confirmed(course)
        }
        Err(error) => {
            tracing::warn!(%error, "the archiving confirmation failed");
            Confirmation::Refused(format!(
                "Não foi possível obter a confirmação do usuário para arquivar o curso {}; nada foi alterado.",
                crate::contract::wire::quoted(course.title().as_str())
            ))
        }
    }
}

/// The user's answer to a question this server asked about `version` of `course`.
///
/// The receipt's question is the one [`question`] words for `course` now: the archiving goes
/// ahead only if `course` is still at `version`, the version the question showed, so the text
/// is the one shown.
fn read_answer(response: &serde_json::Value, course: &Course, version: u64) -> Confirmation {
    match serde_json::from_value::<ElicitResult>(response.clone()) {
        Ok(result) if accepted(&result) => go_ahead(course, version, response),
        Ok(_) => not_confirmed(course),
        Err(_) => Confirmation::Refused(
            "A resposta de confirmação (inputResponses.confirmacao) não é uma resposta de elicitação válida; \
             nada foi alterado."
                .to_owned(),
        ),
    }
}

fn accepted(result: &ElicitResult) -> bool {
    result.action == ElicitationAction::Accept
        && result.content.as_ref().and_then(|content| content.get("confirmar")).and_then(serde_json::Value::as_bool)
            == Some(true)
}

fn ask_modern(seal: &ConfirmationSeal, asked: AskedOf<'_>, course: &Course) -> Option<InputRequiredResult> {
    let schema = match ElicitationSchema::from_type::<ArchiveConfirmation>() {
        Ok(schema) => schema,
        Err(error) => {
            tracing::error!(%error, "cannot build the archiving confirmation schema");
            return None;
        }
    };
    let mut requests = InputRequests::new();
    requests.insert(
        INPUT_KEY.to_owned(),
        InputRequest::Elicitation(ElicitRequest::new(ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: question(course),
            requested_schema: schema,
        })),
    );
    // The retry carries the arguments again and is checked again from scratch; the sealed state
    // proves the question was asked here, of this caller, and names the version it showed.
    Some(InputRequiredResult::new(Some(requests), Some(seal.seal(ARCHIVE_TOOL, asked, course)?)))
}

/// The question the app shows its user before archiving `course` (ADR 0039): the same words as
/// the tool's, and the sealed state the app sends back with the answer. `None` when no question
/// can be sealed (no secret): the app then cannot archive (fail closed).
pub(crate) fn interface_question(
    seal: &ConfirmationSeal,
    asked: AskedOf<'_>,
    course: &Course,
) -> Option<(String, String)> {
    Some((question(course), seal.seal(ui::ARCHIVE_TOOL, asked, course)?))
}

/// The user's answer to a question the app showed (ADR 0039). It counts only with the state this
/// server sealed for this caller and course through the app's tool, unexpired; the archiving then
/// covers the version that question showed. Anything else archives nothing.
pub(crate) fn interface_answer(
    seal: &ConfirmationSeal,
    asked: AskedOf<'_>,
    course: &Course,
    state: &str,
    confirmed: bool,
) -> Confirmation {
    let Some(opened) = seal.open(ui::ARCHIVE_TOOL, asked, course, state) else {
        tracing::info!(course = %course.id(), "an archiving answer from the app without a valid question was refused");
        return Confirmation::Refused(format!(
            "A confirmação não responde a uma pergunta deste servidor sobre o curso {} feita a esta credencial \
             nesta sessão (ou a pergunta expirou); nada foi alterado. Peça a pergunta de novo.",
            crate::contract::wire::quoted(course.title().as_str())
        ));
    };
    if let Err(refused) = seal.spend(&opened, course) {
        return Confirmation::Refused(refused);
    }
    if !confirmed {
        return not_confirmed(course);
    }
    go_ahead(course, opened.version, &serde_json::json!({"interface": ui::APP_URI, "confirmar": true}))
}

fn cannot_confirm(options: &ServerOptions, course: &Course) -> Confirmation {
    match options.unconfirmed_archive {
        UnconfirmedArchive::Allow => {
            Confirmation::Confirmed { version: course.version(), receipt: ApprovalReceipt::NotAsked }
        }
        UnconfirmedArchive::Refuse => Confirmation::Refused(format!(
            "Arquivar o curso {} exige a confirmação do usuário, e este cliente não oferece confirmação \
             (elicitation); nada foi alterado. Peça ao usuário que arquive por um cliente com confirmação, ou o \
             administrador do servidor pode permitir com UNCONFIRMED_ARCHIVE=allow.",
            crate::contract::wire::quoted(course.title().as_str())
        )),
    }
}

#[cfg(test)]
mod tests {
    use courses_domain::{CourseTitle, NewCourse, WorkloadHours};
    use time::OffsetDateTime;

    use super::*;

    #[test]
    fn a_long_answer_is_recorded_as_json_that_says_it_was_cut() {
        let small = serde_json::json!({"action": "accept", "content": {"confirmar": true}});
        assert_eq!(recorded_answer(&small), small.to_string());
        let huge =
            serde_json::json!({"action": "accept", "content": {"confirmar": true, "lixo": "\"é\\".repeat(20_000)}});
        let recorded = recorded_answer(&huge);
        assert!(recorded.len() <= MAX_ANSWER_BYTES, "{}", recorded.len());
        let parsed: serde_json::Value = serde_json::from_str(&recorded).expect("still JSON");
        assert_eq!(parsed["cortada"], true);
        assert_eq!(parsed["bytes"], huge.to_string().len());
        assert!(huge.to_string().starts_with(parsed["inicio"].as_str().expect("text")));
    }

    fn course(title: &str) -> Course {
        let new_course = NewCourse {
            title: CourseTitle::parse(title).expect("title"),
            workload_hours: WorkloadHours::parse(10).expect("hours"),
        };
        Course::create(new_course, OffsetDateTime::now_utc())
    }

    fn asked(caller: &Caller) -> AskedOf<'_> {
        AskedOf { caller, session: Some("s1") }
    }

    fn version(opened: Option<Opened>) -> Option<u64> {
        opened.map(|opened| opened.version)
    }

    #[test]
    fn a_sealed_question_opens_to_the_version_shown_for_the_same_principal_catalog_session_and_course_only() {
        use crate::access::caller::{Principal, Scope};
        let seal = ConfirmationSeal::random();
        let rust = course("Rust");
        let ana = Caller::new("ana", Scope::Write);
        let state = seal.seal(ARCHIVE_TOOL, asked(&ana), &rust).expect("sealed");
        assert_eq!(version(seal.open(ARCHIVE_TOOL, asked(&ana), &rust, &state)), Some(rust.version()));
        let bruno = Caller::new("bruno", Scope::Write);
        assert_eq!(seal.open(ARCHIVE_TOOL, asked(&bruno), &rust, &state), None, "another caller");
        let other_holder = Caller::new("ana", Scope::Write).with_principal(Principal::new("token:x"));
        assert_eq!(seal.open(ARCHIVE_TOOL, asked(&other_holder), &rust, &state), None, "another principal");
        let moved =
            Caller::new("ana", Scope::Write).in_catalog(courses_domain::CatalogName::parse("outro").expect("name"));
        assert_eq!(seal.open(ARCHIVE_TOOL, asked(&moved), &rust, &state), None, "another catalog");
        let elsewhere = AskedOf { caller: &ana, session: Some("s2") };
        assert_eq!(seal.open(ARCHIVE_TOOL, elsewhere, &rust, &state), None, "another session");
        let sessionless = AskedOf { caller: &ana, session: None };
        assert_eq!(seal.open(ARCHIVE_TOOL, sessionless, &rust, &state), None, "no session");
        assert_eq!(seal.open(ARCHIVE_TOOL, asked(&ana), &course("Go"), &state), None, "another course");
        assert_eq!(seal.open(ui::ARCHIVE_TOOL, asked(&ana), &rust, &state), None, "the app's path");
        assert_eq!(
            ConfirmationSeal::random().open(ARCHIVE_TOOL, asked(&ana), &rust, &state),
            None,
            "another process's secret"
        );
        let mut tampered = state;
        tampered.push('A');
        assert_eq!(seal.open(ARCHIVE_TOOL, asked(&ana), &rust, &tampered), None, "tampered");
        let forged = format!("arquivar:{}", rust.id());
        assert_eq!(seal.open(ARCHIVE_TOOL, asked(&ana), &rust, &forged), None, "forged");
    }

    #[test]
    fn an_app_question_answered_no_cannot_be_answered_yes_after() {
        use crate::access::caller::Scope;
        let seal = ConfirmationSeal::random();
        let rust = course("Rust");
        let ana = Caller::new("ana", Scope::Write);
        let (_, state) = interface_question(&seal, asked(&ana), &rust).expect("a question");
        assert!(matches!(interface_answer(&seal, asked(&ana), &rust, &state, false), Confirmation::Refused(_)));
        match interface_answer(&seal, asked(&ana), &rust, &state, true) {
            Confirmation::Refused(message) => assert!(message.contains("já foi respondida"), "{message}"),
            other => panic!("a declined question answered yes: {other:?}"),
        }
        let (_, fresh) = interface_question(&seal, asked(&ana), &rust).expect("a question");
        assert_ne!(fresh, state, "each question has its own nonce");
        assert!(matches!(interface_answer(&seal, asked(&ana), &rust, &fresh, true), Confirmation::Confirmed { .. }));
    }

    #[test]
    fn replicas_given_the_same_secret_open_each_others_questions_and_short_secrets_are_refused() {
        use crate::access::caller::Scope;
        let secret = [7_u8; 32];
        let first = ConfirmationSeal::with_secret(&secret).expect("secret");
        let second = ConfirmationSeal::with_secret(&secret).expect("secret");
        let rust = course("Rust");
        let ana = Caller::new("ana", Scope::Write);
        let state = first.seal(ARCHIVE_TOOL, asked(&ana), &rust).expect("sealed");
        assert_eq!(version(second.open(ARCHIVE_TOOL, asked(&ana), &rust, &state)), Some(rust.version()));
        assert_eq!(
            ConfirmationSeal::with_secret(&[7_u8; 31]).err(),
            Some(ConfirmationSecretTooShort { minimum: 32, actual: 31 })
        );
    }
}
