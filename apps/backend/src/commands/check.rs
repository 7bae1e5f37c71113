//! `mcp-cursos-backend check`: everything the server would do with its settings before serving,
//! without serving (ADR 0028); one finding per setting on stdout, exit 0 only when none fails.

use std::io::Write;

use super::startup::open_database;
use courses_domain::DatabaseSettingError;

use super::settings::Settings;
use super::startup::{SettingError, bind, check_no_auth, load_keyring, load_policy, oauth_config, request_guard};
use crate::http::guard::is_loopback_host;
use crate::keys::api_key::ApiKey;
use mcp_server::container::Container;

/// `check`: prints the findings of [`check`] and exits, with status 1 when one fails.
///
/// # Errors
/// stdout cannot be written.
pub async fn run(settings: &Settings) -> anyhow::Result<()> {
    let findings = check(settings).await;
    let mut stdout = super::stdout();
    for finding in &findings {
        stdout.write_all(format!("{finding}\n").as_bytes())?;
    }
    stdout.flush()?;
    std::process::exit(i32::from(findings.iter().any(Finding::fails)));
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
    if let Some(finding) = exposure_finding(settings, Container::detect()) {
        findings.push(finding);
    }
    let oauth = oauth_config(settings);
    let oauth_on = matches!(oauth, Ok(Some(_)));
    match oauth {
        Ok(None) => {}
        Ok(Some(config)) => findings.push(Finding::Ok(format!(
            "OAUTH_ISSUER {} for OAUTH_RESOURCE {} (the issuer is asked at start, not now)",
            config.issuer(),
            config.resource()
        ))),
        Err(error) => findings.push(Finding::Error(error.0)),
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
    } else if api_key.is_none() && !settings.no_auth && !oauth_on {
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

/// What `check` says of a `HOST` beyond loopback with no `ALLOWED_HOSTS`: a warning on a machine
/// of its own; in a `container`, where that `HOST` is the container's interface and a port
/// published on loopback is served as is, what it means (as `serve` says nothing at start,
/// [`exposure_warning`](crate::http::guard::exposure_warning)).
fn exposure_finding(settings: &Settings, container: Option<Container>) -> Option<Finding> {
    if is_loopback_host(&settings.host) || !settings.allowed_hosts.is_empty() {
        return None;
    }
    Some(match container {
        None => Finding::Warning(format!(
            "HOST={} listens beyond loopback but ALLOWED_HOSTS is empty: requests naming this machine's \
             address or name in Host are refused; list those names in ALLOWED_HOSTS",
            settings.host
        )),
        Some(_) => Finding::Ok(format!(
            "HOST={} in a container: clients through a port published on loopback (127.0.0.1:3000) are \
             served; a port published to other machines needs their names in ALLOWED_HOSTS",
            settings.host
        )),
    })
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[test]
    fn a_wildcard_host_without_allowed_hosts_is_a_warning_except_in_a_container() {
        let settings = Settings::try_parse_from(["mcp-cursos-backend", "--host", "0.0.0.0"]).expect("settings");
        let Some(Finding::Warning(warning)) = exposure_finding(&settings, None) else {
            panic!("a warning on a machine of its own");
        };
        assert!(warning.contains("ALLOWED_HOSTS"), "{warning}");
        let Some(Finding::Ok(note)) = exposure_finding(&settings, Some(Container::Podman)) else {
            panic!("no warning in a container");
        };
        assert!(note.contains("published to other machines needs their names in ALLOWED_HOSTS"), "{note}");
    }
}
