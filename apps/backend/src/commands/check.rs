//! `mcp-cursos-backend check`: everything the server would do with its settings before serving,
//! without serving (ADR 0028); one finding per setting on stdout, exit 0 only when none fails.

use std::io::Write;

use super::startup::open_database;
use courses_domain::DatabaseSettingError;

use super::settings::Settings;
use super::startup::{
    SettingError, bind, check_no_auth, generated_key_path, load_keyring, load_policy, oauth_config, read_generated_key,
    request_guard,
};
use crate::http::guard::is_loopback_host;
use crate::keys::api_key::ApiKey;
use crate::keys::keys_file::KeyHash;
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
        let api_key = api_key.as_ref().map(|key| KeyHash::of(key.expose().as_bytes()));
        findings.push(finding(
            load_keyring(api_key, settings.keys_file.as_deref())
                .map(|keyring| format!("KEYS_FILE ({} keys)", keyring.len())),
        ));
    } else if api_key.is_none() && settings.api_key.is_none() && !settings.no_auth && !oauth_on {
        findings.push(generated_key_finding(generated_key_path(settings).as_deref()));
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

/// With no key configured: what a start would do with the generated key's file at `kept_in`
/// (`None`: PostgreSQL, a new key at every start). Reads the file, never creates it.
fn generated_key_finding(kept_in: Option<&std::path::Path>) -> Finding {
    let Some(path) = kept_in else {
        return Finding::Warning(
            "neither API_KEY nor KEYS_FILE is set, and with DATABASE_URL there is no data folder to keep a \
             generated key in: a new key is generated at every start; set API_KEY or KEYS_FILE"
                .to_owned(),
        );
    };
    match read_generated_key(path) {
        Ok(Some(generated)) => Finding::Ok(format!(
            "neither API_KEY nor KEYS_FILE is set: the key generated on {} is in use (its SHA-256 is kept in {})",
            generated.created_text(),
            path.display()
        )),
        Ok(None) => Finding::Ok(format!(
            "neither API_KEY nor KEYS_FILE is set: the first start generates a key, prints it once and keeps its \
             SHA-256 in {}",
            path.display()
        )),
        Err(error) => Finding::Error(error.0),
    }
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
    fn without_a_key_check_says_what_a_start_would_do_with_the_generated_key_s_file() {
        assert!(matches!(generated_key_finding(None), Finding::Warning(text) if text.contains("every start")));
        let folder = tempfile::tempdir().expect("temp dir");
        let path = folder.path().join("generated-key");
        let first = generated_key_finding(Some(&path));
        assert!(matches!(&first, Finding::Ok(text) if text.contains("the first start generates a key")), "{first}");
        assert!(!path.exists(), "check never creates it");
        std::fs::write(
            &path,
            "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08 2026-12-04T16:50:00Z\n",
        )
        .expect("write");
        let kept = generated_key_finding(Some(&path));
        assert!(matches!(&kept, Finding::Ok(text) if text.contains("generated on 2026-12-04T16:50:00Z")), "{kept}");
        std::fs::write(&path, "mcp_colada-aqui\n").expect("write");
        let refused = generated_key_finding(Some(&path));
        assert!(refused.fails() && refused.to_string().contains(&path.display().to_string()), "{refused}");
        assert!(!refused.to_string().contains("colada"), "never quoted: {refused}");
    }

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
