//! Start-up: what the binary does with its [`Settings`] before serving, and the `check` command
//! that does the same without serving (ADR 0028).
//!
//! Every error here names the setting to change and the value it saw (never a URL or a key,
//! which may hold secrets), with the cause the system gave first, on one line.

use std::path::{Path, PathBuf};

pub use courses_domain::{DatabaseSettingError, OpenedDatabase};

/// [`courses_domain::open_database`], its errors naming `DATABASE_URL` and `DATABASE_PATH`.
///
/// # Errors
/// [`DatabaseSettingError`] naming the setting to change.
pub fn open_database(url: Option<&str>, path: &Path) -> Result<OpenedDatabase, DatabaseSettingError> {
    let names = courses_domain::DatabaseSettingNames { url: "DATABASE_URL", path: "DATABASE_PATH" };
    courses_domain::open_database(url, path, names)
}

use crate::{Access, ApiKey, AppConfig, Keyring, KeysFileError, RequestGuard, Settings};

/// A setting that cannot be followed: the message says which, why, and what to change.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct SettingError(String);

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

/// Reads `KEYS_FILE` (if set) into the keyring, with `API_KEY` (if any).
///
/// # Errors
/// [`SettingError`] naming `KEYS_FILE`: missing (with the command that creates it), unreadable or
/// malformed.
pub fn load_keyring(api_key: Option<&ApiKey>, keys_file: Option<&Path>) -> Result<Keyring, SettingError> {
    Keyring::load(api_key, keys_file).map_err(|error| {
        let path = keys_file.map(absolute).unwrap_or_default();
        match &error {
            KeysFileError::Io { cause, .. } if cause.kind() == std::io::ErrorKind::NotFound => SettingError(format!(
                "KEYS_FILE={} does not exist: create it, with its first key, by running \
                 `mcp-cursos-backend keys create --name <name> --scope escrita` with the same KEYS_FILE",
                path.display()
            )),
            _ => SettingError(format!("{error}: invalid KEYS_FILE={}", path.display())),
        }
    })
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

/// `NO_AUTH` only on a loopback `HOST`.
///
/// # Errors
/// [`SettingError`] naming both.
pub fn check_no_auth(settings: &Settings) -> Result<(), SettingError> {
    if settings.no_auth && !crate::is_loopback_host(&settings.host) {
        return Err(SettingError(format!(
            "NO_AUTH is only allowed on a loopback HOST (127.0.0.1, ::1 or localhost), not HOST={}",
            settings.host
        )));
    }
    Ok(())
}

/// One line of `check`'s report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finding {
    /// The setting works.
    Ok(String),
    /// Works, but probably not as meant: reported, does not fail the check.
    Warning(String),
    /// The server would not start, or not work, with it.
    Error(String),
}

impl Finding {
    /// True for [`Finding::Error`].
    #[must_use]
    pub fn fails(&self) -> bool {
        matches!(self, Self::Error(_))
    }
}

impl std::fmt::Display for Finding {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Ok(text) => write!(formatter, "ok: {text}"),
            Self::Warning(text) => write!(formatter, "warning: {text}"),
            Self::Error(text) => write!(formatter, "error: {text}"),
        }
    }
}

fn finding(result: Result<String, SettingError>) -> Finding {
    match result {
        Ok(text) => Finding::Ok(text),
        Err(error) => Finding::Error(error.0),
    }
}

/// `mcp-cursos-backend check`: everything the server would do with `settings` before serving,
/// without serving. The database is opened as at start, so pending migrations are applied; the
/// port is bound and released at once. One finding per setting checked.
pub async fn check(settings: &Settings) -> Vec<Finding> {
    let mut findings = Vec::new();
    findings.push(finding(check_no_auth(settings).map(|()| {
        if settings.no_auth { "NO_AUTH on a loopback HOST".to_owned() } else { "authentication required".to_owned() }
    })));
    findings.push(finding(request_guard(settings).map(|_| {
        format!(
            "ALLOWED_HOSTS ({} besides loopback), ALLOWED_ORIGINS ({})",
            settings.allowed_hosts.len(),
            settings.allowed_origins.len()
        )
    })));
    if !crate::is_loopback_host(&settings.host) && settings.allowed_hosts.is_empty() {
        findings.push(Finding::Warning(format!(
            "HOST={} listens beyond loopback but ALLOWED_HOSTS is empty: requests naming this machine's \
             address or name in Host are refused; list those names in ALLOWED_HOSTS",
            settings.host
        )));
    }
    let api_key = match settings.api_key.as_deref().map(ApiKey::parse).transpose() {
        Ok(key) => key,
        Err(error) => {
            findings.push(Finding::Error(format!("{error}: invalid API_KEY")));
            None
        }
    };
    if settings.keys_file.is_some() {
        findings.push(finding(
            load_keyring(api_key.as_ref(), settings.keys_file.as_deref())
                .map(|keyring| format!("KEYS_FILE ({} keys)", keyring.len())),
        ));
    } else if api_key.is_none() && !settings.no_auth {
        findings.push(Finding::Warning(
            "neither API_KEY nor KEYS_FILE is set: a new key is generated at every start".to_owned(),
        ));
    }
    if settings.policy_file.is_some() {
        findings.push(finding(load_policy(settings.policy_file.as_deref()).map(|loaded| {
            format!("POLICY_FILE ({})", loaded.map(|(_, policy)| policy.summary()).unwrap_or_default())
        })));
    }
    findings.push(finding(bind(&settings.host, settings.port).await.map(|listener| {
        let address =
            listener.local_addr().map_or_else(|_| format!("{}:{}", settings.host, settings.port), |a| a.to_string());
        format!("HOST and PORT: {address} is free")
    })));
    let (database_url, database_path) = (settings.database_url.clone(), settings.database_path.clone());
    let opened = tokio::task::spawn_blocking(move || open_database(database_url.as_deref(), &database_path))
        .await
        .unwrap_or_else(|error| Err(DatabaseSettingError::stopped(&error)));
    match opened {
        Ok(opened) => {
            findings.push(Finding::Ok(format!("database {} opened and migrated", opened.description)));
            if let Some(secret) = &settings.confirmation_secret {
                let options = mcp_server::ServerOptions {
                    resource_tools: settings.resource_tools,
                    legacy_subscriptions: true,
                    unconfirmed_archive: settings.unconfirmed_archive,
                };
                findings.push(finding(
                    mcp_server::ServerState::new(opened.catalog, options)
                        .with_confirmation_secret(secret.as_bytes())
                        .map(|_| "CONFIRMATION_SECRET".to_owned())
                        .map_err(|error| SettingError(format!("{error}: invalid CONFIRMATION_SECRET"))),
                ));
            }
        }
        Err(error) => findings.push(Finding::Error(error.to_string())),
    }
    findings
}
