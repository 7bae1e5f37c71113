//! [`start`]: the one way to turn an app's settings into a running [`ServerState`], used by both
//! apps and by the tests, so that what a test drives is wired as the binaries wire it.
//!
//! `start` builds the state ([`ServerState::with_live_update_limits`]), puts the caller's catalog,
//! the confirmation secret and the operator's policy in place, starts rereading the policy file
//! every `reload_interval` until the state shuts down, and follows the changes other processes
//! commit to the same database ([`ServerState::follow_other_processes`]). Keep the [`Running`] alive
//! as long as the server serves: it holds the followers.
//!
//! Logging stays with the apps: `start` logs nothing, so every line an app prints keeps its
//! target (the app's); [`Running::policy_summary`] is what the apps log as
//! "operator's policy loaded (POLICY_FILE)".

use std::time::Duration;

use courses_domain::{Catalog, CatalogName, ChangeFollower};

use crate::container::Container;

use crate::access::confirmation::ConfirmationSecretTooShort;
use crate::access::policy::Policy;
use crate::live::hub::LiveUpdateLimits;
use crate::options::ServerOptions;
use crate::policy_file::PolicyFile;
use crate::state::ServerState;

/// What an app chose for its server, from its settings. [`Setup::new`] gives the defaults.
pub struct Setup {
    /// The behaviour the app chose ([`ServerOptions`]).
    pub options: ServerOptions,
    /// The catalog of callers without HTTP (the stdio app's `--catalog`; default
    /// [`CatalogName::default_catalog`]).
    pub local_catalog: CatalogName,
    /// `CONFIRMATION_SECRET`: seals archiving confirmations so that any replica given the same
    /// secret accepts an answer (at least 32 bytes). `None`: a random secret per process.
    pub confirmation_secret: Option<Vec<u8>>,
    /// The operator's policy at start and the file to keep rereading (`POLICY_FILE`, as
    /// [`PolicyFile::load`] read it). `None`: everything enabled, nothing reread.
    pub policy: Option<(PolicyFile, Policy)>,
    /// How often the policy file is reread (default
    /// [`RELOAD_INTERVAL`](crate::reloaded_file::RELOAD_INTERVAL)).
    pub reload_interval: Duration,
    /// The bounds on live updates (default [`LiveUpdateLimits::default`]; tests use small ones).
    pub live_update_limits: LiveUpdateLimits,
    /// Follow the changes other processes commit to the same database (default true).
    pub follow_other_processes: bool,
    /// What a caller may do now, asked at the moment of an effect (the backend's keyring).
    /// `None` (default): every caller stands unchanged until its expiry.
    pub authority: Option<std::sync::Arc<dyn crate::Authority>>,
    /// The catalogs the app's credentials can put callers in, for the warning about a policy
    /// catalog no one uses (default: only [`Self::local_catalog`]).
    pub callers_catalogs: crate::options::CallersCatalogs,
}

impl Setup {
    /// `options`, with every other field at its default.
    #[must_use]
    pub fn new(options: ServerOptions) -> Self {
        Self {
            options,
            local_catalog: CatalogName::default_catalog(),
            confirmation_secret: None,
            policy: None,
            reload_interval: crate::reloaded_file::RELOAD_INTERVAL,
            live_update_limits: LiveUpdateLimits::default(),
            follow_other_processes: true,
            authority: None,
            callers_catalogs: crate::options::CallersCatalogs::default(),
        }
    }
}

impl std::fmt::Debug for Setup {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the secret.
        let (options, catalog) = (&self.options, &self.local_catalog);
        formatter
            .debug_struct("Setup")
            .field("options", options)
            .field("local_catalog", catalog)
            .finish_non_exhaustive()
    }
}

/// Why [`start`] could not build the server. Its text is what the operator sees; the cause
/// follows as the error's source.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// The confirmation secret is shorter than 32 bytes.
    #[error("invalid CONFIRMATION_SECRET (generate one with `openssl rand -hex 32`)")]
    ConfirmationSecret(#[source] ConfirmationSecretTooShort),
}

/// A server state in service, and what must live as long as it does.
#[must_use = "dropping it stops following the other processes' changes"]
#[derive(Debug)]
pub struct Running {
    state: ServerState,
    policy_summary: Option<String>,
    /// Kept alive: dropping a follower stops it.
    _followers: Option<ChangeFollower>,
}

impl Running {
    /// The process-wide state every connection's [`CursosServer`](crate::CursosServer) is built over.
    #[must_use]
    pub fn state(&self) -> &ServerState {
        &self.state
    }

    /// [`Policy::summary`] of the policy the server started with, when a policy file was given:
    /// what the apps log as "operator's policy loaded (POLICY_FILE)".
    #[must_use]
    pub fn policy_summary(&self) -> Option<&str> {
        self.policy_summary.as_deref()
    }
}

/// How often [`start`] rechecks every live-update listener's caller
/// ([`ServerState::recheck_listeners`]): an expired caller's streams end within it. A keys-file
/// change is rechecked at once after its reload (the backend's keyring), within the file's
/// reread interval ([`crate::reloaded_file::RELOAD_INTERVAL`]).
pub const RECHECK_INTERVAL: Duration = Duration::from_millis(250);

/// How long a thread of the runtime's blocking pool waits for more work before it ends (tokio's
/// default: 10 s). Each write waits for the store on one of those threads, so 50 connections of
/// creates start about 60; kept 10 s, they held 3.5–3.7 MB of stacks and thread caches after the
/// writes had stopped (`bench/threads_after_writes.sh`, ADR 0062). With 1 s a burst's threads end
/// 1 s after its last write, as jemalloc returns its freed pages (ADR 0049).
pub const BLOCKING_THREAD_KEEP_ALIVE: Duration = Duration::from_secs(1);

/// The runtime both apps serve on: tokio's multi-threaded one, its drivers on, its blocking pool's
/// idle threads kept [`BLOCKING_THREAD_KEEP_ALIVE`].
///
/// # Errors
/// The system's, when the runtime's threads or drivers cannot be started.
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    builder().build()
}

/// [`runtime`], with `on_park` run by each of its workers as it runs out of work (just before it
/// parks) and `on_unpark` as it wakes: the backend gives its allocator's thread caches back there
/// (ADR 0065).
///
/// # Errors
/// As [`runtime`].
pub fn runtime_with_worker_hooks(on_park: fn(), on_unpark: fn()) -> std::io::Result<tokio::runtime::Runtime> {
    builder().on_thread_park(on_park).on_thread_unpark(on_unpark).build()
}

fn builder() -> tokio::runtime::Builder {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder.thread_keep_alive(BLOCKING_THREAD_KEEP_ALIVE).enable_all();
    builder
}

/// Builds the server state `setup` describes over `catalog`, and starts what runs beside it:
/// the policy file's rereading (until [`ServerState::shutdown_token`] is cancelled) and, with
/// [`Setup::follow_other_processes`], the followers of other processes' changes.
///
/// # Errors
/// [`SetupError::ConfirmationSecret`] when the secret is shorter than 32 bytes; nothing was
/// started then.
///
/// # Panics
/// Outside a Tokio runtime (the rereading and the followers run on it).
pub fn start(catalog: Catalog, setup: Setup) -> Result<Running, SetupError> {
    let state = ServerState::with_live_update_limits(catalog, setup.options, setup.live_update_limits)
        .with_local_catalog(setup.local_catalog)
        .with_callers_catalogs(setup.callers_catalogs);
    let state = match setup.authority {
        Some(authority) => state.with_authority(authority),
        None => state,
    };
    let state = match &setup.confirmation_secret {
        Some(secret) => state.with_confirmation_secret(secret).map_err(SetupError::ConfirmationSecret)?,
        None => state,
    };
    let (state, policy_summary) = match setup.policy {
        Some((policy_file, policy)) => {
            let summary = policy.summary();
            crate::policy_file::warn_of_unused_catalogs(&state, &policy);
            let state = state.with_policy(policy);
            policy_file.watch(&state, setup.reload_interval);
            (state, Some(summary))
        }
        None => (state, None),
    };
    // Callers that lapse while nothing else happens (a token's expiry) lose their streams too.
    state.recheck_listeners_every(RECHECK_INTERVAL);
    // Processes sharing the database (PostgreSQL replicas, apps on one SQLite file) hear of each other's changes.
    let followers = if setup.follow_other_processes { state.follow_other_processes() } else { None };
    Ok(Running { state, policy_summary, _followers: followers })
}

/// [`courses_domain::open_database`] with the settings both apps name it by: `DATABASE_URL`,
/// else `DATABASE_PATH` (ADR 0028). The domain does not know the apps' setting names.
///
/// # Errors
/// [`DatabaseSettingError`](courses_domain::DatabaseSettingError) naming the setting to change.
pub fn open_database(
    url: Option<&str>,
    path: &std::path::Path,
) -> Result<courses_domain::OpenedDatabase, courses_domain::DatabaseSettingError> {
    let names = courses_domain::DatabaseSettingNames { url: "DATABASE_URL", path: "DATABASE_PATH" };
    courses_domain::open_database(url, path, names).map_err(|error| with_container_hint(error, Container::detect()))
}

/// `error` with a hint when it is a PostgreSQL server on a loopback host that could not be
/// reached from inside `container`: there, `127.0.0.1` is the container itself (issue 25).
#[must_use]
pub fn with_container_hint(
    error: courses_domain::DatabaseSettingError,
    container: Option<Container>,
) -> courses_domain::DatabaseSettingError {
    match (error.unreached_loopback_host().map(str::to_owned), container) {
        (Some(host), Some(container)) => error.with_hint(&format!(
            "this app runs in a container, where {host} is the container itself, not the machine it runs on: \
             in DATABASE_URL name PostgreSQL's own container or compose service (such as `db`), or the \
             machine as {machine}",
            machine = container.host_machine_name()
        )),
        _ => error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A PostgreSQL URL on a loopback port nobody listens on (the opening tries for about 2 s).
    fn unreachable_loopback_error() -> courses_domain::DatabaseSettingError {
        let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("address").port();
        let url = format!("postgres://app:senha@127.0.0.1:{port}/cursos");
        let names = courses_domain::DatabaseSettingNames { url: "DATABASE_URL", path: "DATABASE_PATH" };
        courses_domain::open_database(Some(&url), std::path::Path::new("unused.db"), names).expect_err("nobody listens")
    }

    #[test]
    fn a_loopback_database_host_unreached_from_a_container_gets_the_hint_to_name_the_machine() {
        let error = unreachable_loopback_error();
        let without = error.to_string();
        assert!(!without.contains("container"), "{without}");
        let podman = with_container_hint(error, Some(Container::Podman)).to_string();
        assert!(podman.starts_with(&without), "the cause and the setting first: {podman}");
        assert!(podman.contains("127.0.0.1 is the container itself"), "{podman}");
        assert!(podman.contains("host.containers.internal"), "{podman}");
        assert!(!podman.contains("senha"), "{podman}");
        let docker = with_container_hint(unreachable_loopback_error(), Some(Container::Docker)).to_string();
        assert!(docker.contains("host.docker.internal"), "{docker}");
        let outside = unreachable_loopback_error();
        let unchanged = outside.to_string();
        assert_eq!(with_container_hint(outside, None).to_string(), unchanged, "no container, no hint");
    }
}
