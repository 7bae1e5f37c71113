//! One listener's [`Mailbox`] and its drainer (ADR 0022): a change only fills the mailbox (each
//! URI once, however many changes touched it), and the listener's own drainer sends what it
//! holds, so fan-out never waits on a client.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::ResourceUpdatedNotificationParam;
use rmcp::service::{SubscriptionSendError, SubscriptionSink};
use rmcp::{Peer, RoleServer};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::access::policy::ListsChanged;

/// What a listener has yet to be told: each URI once, however many changes touched it.
#[derive(Debug, Default)]
pub(crate) struct Mailbox {
    pending: Mutex<Pending>,
    pub(super) wake: Notify,
    /// Cancelled when the hub drops the listener (closed, or too slow).
    pub(super) dropped: CancellationToken,
}

#[derive(Debug, Default)]
struct Pending {
    uris: Vec<Arc<str>>,
    queued: HashSet<Arc<str>>,
    list_changed: bool,
    /// The operator's policy changed the tools or the prompts listed (ADR 0036).
    lists: ListsChanged,
}

/// What a drainer takes from its mailbox in one go.
#[derive(Debug)]
pub(crate) struct Batch {
    pub(crate) uris: Vec<Arc<str>>,
    pub(crate) list_changed: bool,
    pub(crate) lists: ListsChanged,
}

impl Mailbox {
    /// Queues what one change means for this listener; false when more than `max_behind` notices
    /// (distinct URIs, and the list change) wait for its drainer. What is counted is what must be
    /// delivered, not how many changes made it: a bulk write of 3,000 courses is one pending
    /// `cursos://catalogo` for a listener of the catalog, who stays (issue 24, item 6; before,
    /// every subscriber reading promptly was dropped). A listener that stops reading is dropped by
    /// its drainer's send timeout, or here once its distinct pending URIs pass the bound.
    pub(super) fn post(&self, uris: impl Iterator<Item = Arc<str>>, list_changed: bool, max_behind: usize) -> bool {
        let mut pending = self.pending.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut relevant = list_changed;
        let mut added = false;
        for uri in uris {
            relevant = true;
            if pending.queued.insert(Arc::clone(&uri)) {
                pending.uris.push(uri);
                added = true;
            }
        }
        if !relevant {
            return true;
        }
        if list_changed && !pending.list_changed {
            pending.list_changed = true;
            added = true;
        }
        let keeps_up = pending.uris.len() + usize::from(pending.list_changed) <= max_behind;
        drop(pending);
        if added {
            self.wake.notify_one();
        }
        keeps_up
    }

    /// Queues the tools' and the prompts' list-changed notices. Two flags at most, however many
    /// policy changes arrive before the drainer takes them: never puts the listener behind.
    pub(super) fn post_lists(&self, lists: ListsChanged) {
        let mut pending = self.pending.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let added = (lists.tools && !pending.lists.tools) || (lists.prompts && !pending.lists.prompts);
        pending.lists.tools |= lists.tools;
        pending.lists.prompts |= lists.prompts;
        drop(pending);
        if added {
            self.wake.notify_one();
        }
    }

    pub(crate) fn take(&self) -> Option<Batch> {
        let mut pending = self.pending.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if pending.uris.is_empty() && !pending.list_changed && pending.lists == ListsChanged::default() {
            return None;
        }
        pending.queued.clear();
        let list_changed = std::mem::take(&mut pending.list_changed);
        let lists = std::mem::take(&mut pending.lists);
        Some(Batch { uris: std::mem::take(&mut pending.uris), list_changed, lists })
    }

    /// Resolves once the hub has dropped this listener.
    pub(crate) async fn dropped(&self) {
        self.dropped.cancelled().await;
    }
}

/// Where a drainer sends: a 2025-era session's peer or a listen stream's sink.
#[derive(Debug)]
pub(crate) enum Receiver<'a> {
    Session(&'a Peer<RoleServer>),
    Stream(&'a SubscriptionSink),
}

/// How a drainer stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DrainEnd {
    /// The client did not accept a notice within the send timeout.
    Slow,
    /// The connection or stream is gone.
    Closed,
    /// The listener's caller no longer stands as it was (revoked, expired, moved, downgraded):
    /// the batch taken was not sent.
    Lapsed,
}

impl Receiver<'_> {
    /// Sends one notice; `Err` when the receiver is gone.
    async fn send(&self, notice: Notice<'_>) -> Result<(), ()> {
        match (self, notice) {
            (Self::Session(peer), Notice::Updated(uri)) => {
                peer.notify_resource_updated(ResourceUpdatedNotificationParam::new(uri)).await.map_err(|_| ())
            }
            (Self::Session(peer), Notice::ListChanged) => peer.notify_resource_list_changed().await.map_err(|_| ()),
            (Self::Session(peer), Notice::ToolsChanged) => peer.notify_tool_list_changed().await.map_err(|_| ()),
            (Self::Session(peer), Notice::PromptsChanged) => peer.notify_prompt_list_changed().await.map_err(|_| ()),
            (Self::Stream(sink), notice) => {
                let sent = match notice {
                    Notice::Updated(uri) => sink.notify_resource_updated(uri).await,
                    Notice::ListChanged => sink.notify_resource_list_changed().await,
                    Notice::ToolsChanged => sink.notify_tool_list_changed().await,
                    Notice::PromptsChanged => sink.notify_prompt_list_changed().await,
                };
                match sent {
                    Ok(()) => Ok(()),
                    // The stream's accepted filter is narrower than what it asked: skip that notice.
                    Err(SubscriptionSendError::NotificationNotAccepted(_)) => Ok(()),
                    Err(_) => Err(()),
                }
            }
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum Notice<'a> {
    Updated(&'a str),
    ListChanged,
    ToolsChanged,
    PromptsChanged,
}

/// Sends whatever `mailbox` receives to `receiver` until the receiver is gone or too slow, or
/// `stands` (asked before each batch: the listener's caller as its credential stands now) says
/// no: then nothing of the batch is sent, so no notice reaches a caller after its credential
/// changed, whenever the sweep that ends the listener runs.
/// Cancel-safe: dropping it loses at most the notices of the batch in flight.
pub(crate) async fn drain(
    mailbox: &Mailbox,
    receiver: Receiver<'_>,
    send_timeout: Duration,
    stands: &(dyn Fn() -> bool + Sync),
) -> DrainEnd {
    loop {
        let batch = loop {
            if let Some(batch) = mailbox.take() {
                break batch;
            }
            mailbox.wake.notified().await;
        };
        if !stands() {
            return DrainEnd::Lapsed;
        }
        let notices = batch
            .uris
            .iter()
            .map(|uri| Notice::Updated(uri))
            .chain(batch.list_changed.then_some(Notice::ListChanged))
            .chain(batch.lists.tools.then_some(Notice::ToolsChanged))
            .chain(batch.lists.prompts.then_some(Notice::PromptsChanged));
        for notice in notices {
            match tokio::time::timeout(send_timeout, receiver.send(notice)).await {
                Ok(Ok(())) => {}
                Ok(Err(())) => return DrainEnd::Closed,
                Err(_elapsed) => return DrainEnd::Slow,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_uri_already_waiting_in_a_mailbox_is_not_queued_twice() {
        let mailbox = Mailbox::default();
        let uri: Arc<str> = Arc::from("cursos://catalogo");
        for _ in 0..3 {
            assert!(mailbox.post(std::iter::once(Arc::clone(&uri)), true, 10));
        }
        let batch = mailbox.take().expect("a batch");
        assert_eq!(batch.uris, [uri]);
        assert!(batch.list_changed);
        assert!(mailbox.take().is_none(), "nothing left after one take");
    }

    #[test]
    fn changes_that_do_not_concern_a_listener_never_put_it_behind() {
        let mailbox = Mailbox::default();
        for _ in 0..100 {
            assert!(mailbox.post(std::iter::empty(), false, 4));
        }
        assert!(mailbox.take().is_none());
    }

    #[test]
    fn a_listener_falls_behind_on_what_it_must_be_told_not_on_how_many_changes_made_it() {
        let mailbox = Mailbox::default();
        let uri: Arc<str> = Arc::from("cursos://catalogo");
        // 3,000 changes of one URI (a bulk import, for a listener of the catalog): one notice.
        for _ in 0..3000 {
            assert!(mailbox.post(std::iter::once(Arc::clone(&uri)), true, 4));
        }
        let batch = mailbox.take().expect("pending");
        assert_eq!((batch.uris.len(), batch.list_changed), (1, true));
        // Distinct URIs beyond the bound: behind.
        for number in 0..4 {
            assert!(mailbox.post(std::iter::once(Arc::from(format!("cursos://pagina-{number}"))), false, 4));
        }
        assert!(
            !mailbox.post(std::iter::once(Arc::from("cursos://pagina-4")), false, 4),
            "a fifth notice is one too many"
        );
        let _ = mailbox.take();
        assert!(mailbox.post(std::iter::once(uri), false, 4), "taking the mailbox catches up");
    }
}
