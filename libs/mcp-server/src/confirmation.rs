//! Asking the user to confirm an archiving (irreversible) before it happens.
//!
//! - 2025-era connections that declared `elicitation`: a form elicitation, answered within
//!   [`ANSWER_TIMEOUT`].
//! - 2026-07-28 requests whose `_meta` capabilities include `elicitation`: an `input_required`
//!   result; the client asks its user and retries the call with the answer in `inputResponses`.
//! - Anything else cannot confirm: [`UnconfirmedArchive`] decides.
//!
//! Confirmation protects the user from a model's mistake; it is not authorization (the caller's
//! scope is, checked before any tool runs). A client may answer "accept" without asking anyone,
//! as it may call the tool at all: the server trusts the client to show the question (ADR 0017).

use std::time::Duration;

use courses_domain::Course;
use rmcp::model::{
    ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema, InputRequest,
    InputRequests, InputRequiredResult, ProtocolVersion,
};
use rmcp::service::{ElicitationError, ElicitationMode, RequestContext};
use rmcp::{RoleServer, schemars};
use serde::Deserialize;

use crate::state::{ServerOptions, UnconfirmedArchive};

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

/// What to do with the archiving.
#[derive(Debug)]
pub(crate) enum Confirmation {
    /// Go ahead.
    Confirmed,
    /// 2026-07-28: answer with this `input_required` result; the client retries with the answer.
    Ask(InputRequiredResult),
    /// Do nothing; tell the model this (Portuguese).
    Refused(String),
}

fn question(course: &Course) -> String {
    format!(
        "Arquivar o curso \"{}\" ({})? Ele sai do catálogo e não poderá ser alterado nem desarquivado.",
        course.title().as_str(),
        course.id()
    )
}

fn not_confirmed(course: &Course) -> Confirmation {
    Confirmation::Refused(format!(
        "O usuário não confirmou o arquivamento do curso \"{}\"; nada foi alterado.",
        course.title().as_str()
    ))
}

/// Asks (or reads the answer to) the confirmation of archiving `course`.
pub(crate) async fn confirm_archive(
    options: &ServerOptions,
    course: &Course,
    responses: Option<rmcp::model::InputResponses>,
    context: &RequestContext<RoleServer>,
) -> Confirmation {
    let modern = context.protocol_version().is_some_and(|version| version >= ProtocolVersion::V_2026_07_28);
    if modern {
        if let Some(answer) = responses.as_ref().and_then(|responses| responses.get(INPUT_KEY)) {
            return match serde_json::from_value::<ElicitResult>(answer.clone()) {
                Ok(result) if accepted(&result) => Confirmation::Confirmed,
                Ok(_) => not_confirmed(course),
                Err(_) => Confirmation::Refused(
                    "A resposta de confirmação (inputResponses.confirmacao) não é uma resposta de elicitação válida; \
                     nada foi alterado."
                        .to_owned(),
                ),
            };
        }
        let can_ask = context.client_capabilities().is_some_and(|capabilities| capabilities.elicitation.is_some());
        if can_ask {
            return match ask_modern(course) {
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
    match context.peer.elicit_with_timeout::<ArchiveConfirmation>(question(course), Some(ANSWER_TIMEOUT)).await {
        Ok(Some(ArchiveConfirmation { confirmar: true })) => Confirmation::Confirmed,
        Ok(_) | Err(ElicitationError::UserDeclined | ElicitationError::UserCancelled | ElicitationError::NoContent) => {
            not_confirmed(course)
        }
        Err(error) => {
            tracing::warn!(%error, "the archiving confirmation failed");
            Confirmation::Refused(format!(
                "Não foi possível obter a confirmação do usuário para arquivar o curso \"{}\"; nada foi alterado.",
                course.title().as_str()
            ))
        }
    }
}

fn accepted(result: &ElicitResult) -> bool {
    result.action == ElicitationAction::Accept
        && result.content.as_ref().and_then(|content| content.get("confirmar")).and_then(serde_json::Value::as_bool)
            == Some(true)
}

fn ask_modern(course: &Course) -> Option<InputRequiredResult> {
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
    // The retry carries the arguments again and is checked again from scratch: the state only
    // names what was asked (the server trusts nothing in it).
    Some(InputRequiredResult::new(Some(requests), Some(format!("arquivar:{}", course.id()))))
}

fn cannot_confirm(options: &ServerOptions, course: &Course) -> Confirmation {
    match options.unconfirmed_archive {
        UnconfirmedArchive::Allow => Confirmation::Confirmed,
        UnconfirmedArchive::Refuse => Confirmation::Refused(format!(
            "Arquivar o curso \"{}\" exige a confirmação do usuário, e este cliente não oferece confirmação \
             (elicitation); nada foi alterado. Peça ao usuário que arquive por um cliente com confirmação, ou o \
             administrador do servidor pode permitir com UNCONFIRMED_ARCHIVE=allow.",
            course.title().as_str()
        )),
    }
}
