//! [`PolicyFile`]: the operator's policy file (`POLICY_FILE`, ADR 0036) as a running server
//! follows it: read at start, reread on a timer, each valid new text put in force in the
//! [`ServerState`]. The rules themselves are [`Policy`]'s (`access::policy`, pure).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use courses_domain::CatalogName;

use crate::access::policy::{ListsChanged, Policy, PolicyError};
use crate::options::CallersCatalogs;
use crate::reloaded_file::{self, ReloadedFile, Reread};
use crate::state::ServerState;

/// The policy file (`POLICY_FILE`) a running server follows: reread every
/// [`reloaded_file::RELOAD_INTERVAL`]; a new valid text is put in force, and an unreadable, empty
/// or invalid one keeps the policy in force and is logged once.
#[derive(Debug, Clone)]
pub struct PolicyFile {
    file: Arc<ReloadedFile>,
}

/// Warns (once per policy put in force) of each catalog the policy has rules for that no
/// credential names and that holds no active course: its rules apply to no one. Runs on the Tokio
/// runtime, if there is one (the counts are reads).
pub(crate) fn warn_of_unused_catalogs(state: &ServerState, policy: &Policy) {
    let names: Vec<String> = policy.catalog_names().map(str::to_owned).collect();
    if names.is_empty() {
        return;
    }
    let named = match state.callers_catalogs() {
        CallersCatalogs::Any => return,
        CallersCatalogs::Known(named) => named(),
    };
    let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
    let state = state.clone();
    runtime.spawn(async move {
        for name in names {
            let Ok(catalog) = CatalogName::parse(&name) else { continue };
            if catalog == state.local_catalog || named.contains(&catalog) {
                continue;
            }
            if let Ok(0) = state.catalog().scoped(&catalog).count_active().await {
                tracing::warn!(
                    catalog = %catalog,
                    "the policy file has rules for a catalog that no key names and that has no active course: they apply to no one (a typo?)"
                );
            }
        }
    });
}

/// What [`PolicyFile::reload`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PolicyReload {
    /// The text did not change.
    Unchanged,
    /// The new policy is in force; the lists some caller sees changed as said.
    Replaced(ListsChanged),
    /// The file is unusable: the previous policy stays in force.
    KeptPrevious,
}

/// Why the policy file cannot be used at start.
#[derive(Debug, thiserror::Error)]
pub enum PolicyFileError {
    /// It cannot be read (missing, unreadable, not UTF-8, too large).
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// A line is not a rule.
    #[error("{0}")]
    Invalid(#[from] PolicyError),
    /// Zero bytes: on a reread this is a file being written (kept out), so at start it is not a
    /// policy either (one meaning, issue 24 item 9).
    #[error("the file is empty; to switch everything on, write a comment line such as `# tudo ativo`")]
    Empty,
}

impl PolicyFile {
    /// Reads and parses the policy file at `path`, at start.
    ///
    /// # Errors
    /// [`PolicyFileError`]: at start a bad file is an error (on reload it only keeps the policy in
    /// force).
    pub fn load(path: &Path) -> Result<(Self, Policy), PolicyFileError> {
        let (file, text) = ReloadedFile::open(path)?;
        if text.is_empty() {
            return Err(PolicyFileError::Empty);
        }
        let policy = Policy::parse(&text)?;
        Ok((Self { file: Arc::new(file) }, policy))
    }

    /// Rereads the file (blocking I/O) and puts its policy in force in `state` when the text
    /// changed and is valid. Logs what it did.
    pub fn reload(&self, state: &ServerState) -> PolicyReload {
        let path = self.file.path().display();
        let text = match self.file.reread() {
            Reread::Unchanged => return PolicyReload::Unchanged,
            Reread::Changed(text) => text,
            Reread::Empty => {
                tracing::warn!(%path, "the policy file is empty (being written?); keeping the policy in force. Leave a comment line to enable everything");
                return PolicyReload::KeptPrevious;
            }
            Reread::Unreadable(error) => {
                tracing::warn!(%path, %error, "cannot read the policy file; keeping the policy in force");
                return PolicyReload::KeptPrevious;
            }
        };
        match Policy::parse(&text) {
            Ok(policy) => {
                let summary = policy.summary();
                warn_of_unused_catalogs(state, &policy);
                let changed = state.set_policy(policy);
                tracing::info!(%path, policy = %summary, tools_changed = changed.tools, prompts_changed = changed.prompts, "policy file reloaded");
                PolicyReload::Replaced(changed)
            }
            Err(error) => {
                tracing::warn!(%path, %error, "the policy file is not valid; keeping the policy in force");
                PolicyReload::KeptPrevious
            }
        }
    }

    /// Calls [`Self::reload`] every `interval` until `state` shuts down. Call it from the Tokio
    /// runtime.
    pub fn watch(&self, state: &ServerState, interval: Duration) -> tokio::task::JoinHandle<()> {
        let (file, watched_state) = (self.clone(), state.clone());
        reloaded_file::every(interval, state.shutdown_token(), "policy", move || {
            file.reload(&watched_state);
        })
    }
}
