//! The admission rules of live updates (ADR 0022): which `resources/subscribe` and
//! `subscriptions/listen` requests the hub takes, and the Portuguese error naming the rule or
//! bound a refused one broke. The bounds themselves are counted under the hub's lock
//! ([`SubscriptionHub::subscribe`], [`SubscriptionHub::admit_stream`]).

use std::sync::Arc;

use rmcp::model::{ServerCapabilities, SubscriptionFilter};
use rmcp::service::SubscriptionContext;
use rmcp::{ErrorData as McpError, Peer, RoleServer};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::access::caller::Caller;
use crate::contract::uris::ResourceUri;
use crate::live::hub::{Refusal, SubscriptionHub};
use crate::live::mailbox::{self, DrainEnd};
use crate::outcomes;

impl SubscriptionHub {
    /// `resources/subscribe` from 2025-era session `session` of `caller`: refused on a transport
    /// without sessions (`legacy_subscriptions` off), for a URI this server does not have, and
    /// beyond a bound.
    pub(crate) fn resources_subscribe(
        self: &Arc<Self>,
        legacy_subscriptions: bool,
        session: u64,
        peer: Peer<RoleServer>,
        caller: &Caller,
        http_session: Option<String>,
        uri: &str,
    ) -> Result<(), McpError> {
        if !legacy_subscriptions {
            return Err(McpError::invalid_request(
                "Este servidor roda sem sessões HTTP, então não mantém resources/subscribe. \
                 Use subscriptions/listen (revisão 2026-07-28) ou um servidor com sessões (SESSION_MODE=stateful).",
                None,
            ));
        }
        // Only resources this server has can change; anything else would be held for nothing.
        if ResourceUri::parse(uri).is_none() {
            return Err(outcomes::resource_not_found(uri));
        }
        self.subscribe(session, peer, caller, http_session, uri)
            .map_err(|refusal| live_update_refusal(refusal, "resources/subscribe"))
    }

    /// What rmcp acknowledges of a listen request's `requested` filter, before `listen` runs:
    /// what this server's `capabilities` support, or nothing for a filter [`Self::listen`] will
    /// refuse (it then ends the request with the error that names the reason).
    pub(crate) fn accept_listen_filter(
        &self,
        requested: &SubscriptionFilter,
        capabilities: &ServerCapabilities,
    ) -> SubscriptionFilter {
        // Counted from here (rmcp acknowledges before calling `listen`), so a shutdown that
        // starts in between still waits for this stream to run and end cleanly.
        self.stream_accepted();
        // A filter `listen` will refuse is acknowledged as accepting nothing (nor echoed back).
        if listen_filter_error(requested, self.limits().subscriptions_per_listener).is_some() {
            return SubscriptionFilter::default();
        }
        requested.supported_by(capabilities)
    }

    /// A 2026-07-28 `subscriptions/listen` stream of `caller`, from its admission to its end: it
    /// ends with the request, when the process shuts down (`shutdown`), or when its client stops
    /// reading.
    pub(crate) async fn listen(
        self: &Arc<Self>,
        context: &SubscriptionContext,
        caller: &Caller,
        shutdown: &CancellationToken,
    ) -> Result<(), McpError> {
        if let Some(error) = listen_filter_error(context.requested(), self.limits().subscriptions_per_listener) {
            self.stream_refused();
            return Err(error);
        }
        let accepted = context.accepted();
        let resources = accepted.resource_subscriptions.clone().unwrap_or_default();
        let list_changed = accepted.resources_list_changed == Some(true);
        let ticket = self
            .admit_stream(caller, &resources, list_changed)
            .map_err(|refusal| live_update_refusal(refusal, "subscriptions/listen"))?;
        let sink = context.sink().clone();
        let stands = || self.stands(caller);
        // End with the request, or when the process shuts down (stdin closed, SIGTERM): rmcp waits
        // for in-flight handlers before it exits, and an open stream would otherwise hold it.
        // A stream whose client stopped reading is ended too (ADR 0022): its final result tells
        // a client that reads again to listen again.
        let end = tokio::select! {
            end = mailbox::drain(ticket.mailbox(), mailbox::Receiver::Stream(&sink), ticket.send_timeout(), &stands) => Some(end),
            () = ticket.mailbox().dropped() => Some(DrainEnd::Slow),
            () = context.cancelled() => None,
            () = shutdown.cancelled() => None,
        };
        match end {
            Some(DrainEnd::Slow) => ticket.drop_slow(),
            // Its caller changed: the sweep ends every such listener, this one included.
            Some(DrainEnd::Lapsed) => self.recheck(),
            Some(DrainEnd::Closed) | None => {}
        }
        Ok(())
    }
}

/// The longest part of a client's URI quoted back in an error.
const QUOTED_URI_CHARS: usize = 200;

/// Why a listen filter cannot be accepted whatever the caller: a URI this server does not have,
/// or more URIs than one stream may hold. `None` when the filter is acceptable.
fn listen_filter_error(filter: &SubscriptionFilter, per_listener: usize) -> Option<McpError> {
    let uris = filter.resource_subscriptions.as_deref().unwrap_or_default();
    if let Some(unknown) = uris.iter().find(|uri| ResourceUri::parse(uri).is_none()) {
        let quoted: String = unknown.chars().take(QUOTED_URI_CHARS).collect::<String>().escape_debug().to_string();
        return Some(McpError::invalid_params(
            format!(
                "Recurso desconhecido neste servidor: {quoted}. Só é possível acompanhar cursos://catalogo (e suas \
                 páginas), cursos://{{uuid}} e cursos://{{uuid}}/historico; nenhuma assinatura foi feita."
            ),
            Some(json!({ "uri": quoted })),
        ));
    }
    let distinct: std::collections::HashSet<&String> = uris.iter().collect();
    (distinct.len() > per_listener).then(|| {
        McpError::invalid_params(
            format!(
                "Um fluxo de subscriptions/listen acompanha no máximo {per_listener} recursos; este pediu {}. \
                 Acompanhe cursos://catalogo para saber de qualquer mudança.",
                distinct.len()
            ),
            None,
        )
    })
}

/// The error for a subscription or stream beyond one of the bounds of live updates (ADR 0022).
fn live_update_refusal(refusal: Refusal, method: &str) -> McpError {
    let message = match refusal {
        Refusal::PerListener(limit) => format!(
            "Esta sessão já assina {limit} recursos, o máximo; cancele alguma assinatura \
             (resources/unsubscribe) ou assine cursos://catalogo para saber de qualquer mudança."
        ),
        Refusal::StreamsPerCaller(limit) => format!(
            "Esta chave já tem {limit} fluxos de subscriptions/listen abertos, o máximo; feche algum antes de abrir outro."
        ),
        Refusal::Streams(limit) => format!(
            "O servidor já tem {limit} fluxos de subscriptions/listen abertos, o máximo; tente de novo mais tarde."
        ),
        Refusal::SubscriptionsPerCaller(limit) => format!(
            "Esta chave já acompanha {limit} recursos somando suas sessões e fluxos, o máximo; \
             acompanhe cursos://catalogo para saber de qualquer mudança."
        ),
        Refusal::Subscriptions(limit) => format!(
            "O servidor já acompanha {limit} recursos para todos os clientes, o máximo; tente de novo mais tarde \
             ou acompanhe cursos://catalogo."
        ),
    };
    tracing::info!(?refusal, method, "a live-update request was refused at a bound");
    McpError::invalid_params(message, None)
}
