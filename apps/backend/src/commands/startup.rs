//! Start-up: what the binary does with its [`Settings`] before serving, the steps `serve` and
//! `check` (which does the same without serving) share (ADR 0028).
//!
//! Every error here names the setting to change and the value it saw (never a URL or a key,
//! which may hold secrets), with the cause the system gave first, on one line.

use std::path::{Path, PathBuf};

pub use courses_domain::{DatabaseSettingError, OpenedDatabase};

pub use mcp_server::setup::open_database;

use super::settings::Settings;
use crate::http::guard::{RequestGuard, is_loopback_host};
use crate::http::router::{Access, AppConfig};
use crate::keys::generated_key::{self, GeneratedKey};
use crate::keys::keyring::Keyring;
use crate::keys::keys_file::{KeyHash, KeysFileError};
use crate::oauth::config::{OAuthConfig, OAuthInputs};

/// A setting that cannot be followed: the message says which, why, and what to change.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct SettingError(pub(crate) String);

impl SettingError {
    /// The message, as printed.
    #[must_use]
    pub fn message(&self) -> &str {
        &self.0
    }
}

/// `path` made absolute against the working directory (as given when that fails).
fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_owned())
}

/// Listens on `host:port`.
///
/// # Errors
/// [`SettingError`] naming `HOST` and `PORT`, when the address is in use, not this machine's, or
/// not allowed.
pub async fn bind(host: &str, port: u16) -> Result<tokio::net::TcpListener, SettingError> {
    tokio::net::TcpListener::bind((host, port)).await.map_err(|error| {
        let hint = if error.kind() == std::io::ErrorKind::AddrInUse {
            "another process listens there: stop it, or choose another PORT"
        } else {
            "change HOST or PORT"
        };
        SettingError(format!("{error}: cannot listen on HOST={host} PORT={port}; {hint}"))
    })
}

/// Reads `KEYS_FILE` (if set) into the keyring, with the full-scope `api-key` of this hash (if
/// any): `API_KEY`'s, or the generated key's.
///
/// # Errors
/// [`SettingError`] naming `KEYS_FILE`: missing (with the command that creates it), unreadable
/// (with the system's cause) or malformed.
pub fn load_keyring(api_key: Option<KeyHash>, keys_file: Option<&Path>) -> Result<Keyring, SettingError> {
    Keyring::load_hashed(api_key, keys_file).map_err(|error| {
        let path = keys_file.map(absolute).unwrap_or_default();
        match &error {
            KeysFileError::Io { cause, .. } if cause.kind() == std::io::ErrorKind::NotFound => SettingError(format!(
                "KEYS_FILE={} does not exist: create it, with its first key, by running \
                 `mcp-cursos-backend keys create --name <name> --scope escrita` with the same KEYS_FILE",
                path.display()
            )),
            KeysFileError::Io { cause, .. } => SettingError(unreadable_keys_file(cause, &path)),
            KeysFileError::Line { .. } => SettingError(format!("{error}: invalid KEYS_FILE={}", path.display())),
        }
    })
}

/// Where the key generated when no key is configured is kept (ADR 0048): beside the SQLite
/// database of `DATABASE_PATH`; `None` with `DATABASE_URL` (PostgreSQL: no data folder, so a new
/// key is generated at every start there, with a warning).
#[must_use]
pub fn generated_key_path(settings: &Settings) -> Option<PathBuf> {
    let on_postgres = settings.database_url.as_deref().is_some_and(|url| !url.is_empty());
    (!on_postgres).then(|| generated_key::path_beside(&absolute(&settings.database_path)))
}

/// The generated key kept at `path`, if its file is there.
///
/// # Errors
/// [`SettingError`] naming the file and what to do (delete it, or set `API_KEY` or `KEYS_FILE`)
/// when it is not a regular file, cannot be read or does not parse; never quoting it.
pub fn read_generated_key(path: &Path) -> Result<Option<GeneratedKey>, SettingError> {
    generated_key::read(path).map_err(|error| SettingError(error.to_string()))
}

/// The message for a keys file that exists but cannot be read: what the system said, the file,
/// and what to change. Not "invalid": nothing in it was read (issue 25).
fn unreadable_keys_file(cause: &std::io::Error, path: &Path) -> String {
    let change = if path.is_dir() {
        "that is a folder: point KEYS_FILE at the keys file in it (such as <folder>/keys), which \
         `mcp-cursos-backend keys create --name <name> --scope escrita` creates"
    } else if cause.kind() == std::io::ErrorKind::PermissionDenied {
        "let the user this server runs as read it (and enter its folders), or point KEYS_FILE at a file it can read"
    } else {
        "point KEYS_FILE at a keys file this user can read"
    };
    format!("{cause}: cannot read KEYS_FILE={}; {change}", path.display())
}

/// Reads `POLICY_FILE` (if set): the policy to start with, and the file to follow.
///
/// # Errors
/// [`SettingError`] naming `POLICY_FILE`: missing, unreadable, or a line that is not a rule
/// (with its number).
pub fn load_policy(
    policy_file: Option<&Path>,
) -> Result<Option<(mcp_server::PolicyFile, mcp_server::Policy)>, SettingError> {
    let Some(path) = policy_file else {
        return Ok(None);
    };
    mcp_server::PolicyFile::load(path)
        .map(Some)
        .map_err(|error| SettingError(format!("{error}: invalid POLICY_FILE={}", absolute(path).display())))
}

/// The request guard of `ALLOWED_HOSTS` and `ALLOWED_ORIGINS`.
///
/// # Errors
/// [`SettingError`] naming `ALLOWED_HOSTS` when an entry is not a host.
pub fn request_guard(settings: &Settings) -> Result<RequestGuard, SettingError> {
    Ok(RequestGuard::loopback()
        .with_hosts(settings.allowed_hosts.iter().map(String::as_str))
        .map_err(|error| SettingError(format!("{error}: invalid ALLOWED_HOSTS")))?
        .with_origins(settings.allowed_origins.iter().map(String::as_str)))
}

/// The router's configuration: `access` and the `guard` of [`request_guard`], with the limits,
/// session mode and metrics of `settings`. What the binary serves, and what the router's tests
/// build, so a setting reaches the router the same way in both.
#[must_use]
pub fn app_config(settings: &Settings, access: Access, guard: RequestGuard) -> AppConfig {
    AppConfig {
        access,
        rate_limit: settings.rate_limit,
        guard,
        session_mode: settings.session_mode,
        session_idle_timeout: std::time::Duration::from_secs(settings.session_idle_timeout),
        metrics: settings.metrics,
        max_sessions_per_key: settings.max_sessions_per_key,
    }
}

/// The OAuth settings (`OAUTH_*`), checked: `None` when OAuth is off.
///
/// # Errors
/// [`SettingError`] naming the setting (the secret is never echoed); also NO_AUTH with
/// OAUTH_ISSUER.
pub fn oauth_config(settings: &Settings) -> Result<Option<OAuthConfig>, SettingError> {
    let inputs = OAuthInputs {
        issuer: settings.oauth_issuer.as_deref(),
        resource: settings.oauth_resource.as_deref(),
        read_scope: settings.oauth_read_scope.as_deref(),
        write_scope: settings.oauth_write_scope.as_deref(),
        catalog_claim: settings.oauth_catalog_claim.as_deref(),
        catalog: settings.oauth_catalog.as_deref(),
        introspection_client_id: settings.oauth_introspection_client_id.as_deref(),
        introspection_client_secret: settings.oauth_introspection_client_secret.as_ref().map(|secret| secret.expose()),
        leeway_seconds: settings.oauth_leeway_seconds,
        jwks_fetches_per_minute: settings.oauth_jwks_fetches_per_minute,
    };
    let config = OAuthConfig::from_inputs(&inputs).map_err(|error| SettingError(error.to_string()))?;
    if config.is_some() && settings.no_auth {
        return Err(SettingError("NO_AUTH and OAUTH_ISSUER are both set: give only one".to_owned()));
    }
    Ok(config)
}

/// `NO_AUTH` only on a loopback `HOST`.
///
/// # Errors
/// [`SettingError`] naming both.
pub fn check_no_auth(settings: &Settings) -> Result<(), SettingError> {
    if settings.no_auth && !is_loopback_host(&settings.host) {
        return Err(SettingError(format!(
            "NO_AUTH is only allowed on a loopback HOST (127.0.0.1, ::1 or localhost), not HOST={}",
            settings.host
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_keys_file_that_is_a_folder_is_called_unreadable_with_the_system_s_cause_and_what_to_do() {
        let folder = tempfile::tempdir().expect("temp dir");
        let message = load_keyring(None, Some(folder.path())).expect_err("a folder is no keys file").0;
        assert!(
            message.starts_with("not a regular file") && message.contains("cannot read KEYS_FILE="),
            "the cause first, then the setting: {message}"
        );
        assert!(message.contains(&folder.path().display().to_string()), "{message}");
        assert!(message.contains("point KEYS_FILE at the keys file"), "{message}");
        assert!(!message.contains("invalid"), "nothing was read, so nothing is invalid: {message}");
    }

    #[test]
    fn a_keys_file_without_read_permission_says_who_must_be_able_to_read_it() {
        let cause = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        let message = unreadable_keys_file(&cause, Path::new("/etc/mcp-cursos/keys"));
        assert!(message.contains("cannot read KEYS_FILE=/etc/mcp-cursos/keys"), "{message}");
        assert!(message.contains("let the user this server runs as read it"), "{message}");
    }
}
