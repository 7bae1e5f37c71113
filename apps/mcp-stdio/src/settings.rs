//! The stdio app's settings (flags and environment variables), and what they mean for the server.

use std::path::PathBuf;

use clap::{CommandFactory, FromArgMatches, Parser};
use courses_domain::CatalogName;
use mcp_server::{Policy, PolicyFile, ServerOptions, UnconfirmedArchive};

/// mcp-cursos over stdio: JSON-RPC on stdin/stdout, logs on stderr.
#[derive(Debug, Parser)]
#[command(name = "mcp-cursos-stdio", version, about, long_about = None, next_line_help = true)]
pub struct Settings {
    #[command(subcommand)]
    pub command: Option<StdioCommand>,

    /// SQLite database file; default: cursos.db in the user's data folder.
    ///
    /// Created with its folder and migrated at start. Default: cursos.db in the per-user data folder (Linux: $XDG_DATA_HOME/mcp-cursos, else ~/.local/share/mcp-cursos;
    /// macOS: ~/Library/Application Support/mcp-cursos; Windows: %APPDATA%\mcp-cursos), whatever
    /// the working directory an editor, npx or uvx starts the app in.
    #[arg(long, env = "DATABASE_PATH")]
    pub database_path: Option<PathBuf>,

    /// PostgreSQL connection URI, instead of DATABASE_PATH.
    ///
    /// `postgres://user:password@host:5432/database`, libpq syntax. When it starts with `postgres://` or `postgresql://`, the catalog is kept there (migrated at
    /// start) instead of in DATABASE_PATH.
    #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,

    /// Read-only tools mirroring the resources.
    ///
    /// `true` also exposes listar_cursos and ler_curso, for hosts that give the model tools but
    /// not resources. Off by default: duplicates confuse models.
    #[arg(long, env = "RESOURCE_TOOLS", default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true", hide_possible_values = true)]
    pub resource_tools: bool,

    /// Unconfirmed archiving: `refuse` or `allow`.
    ///
    /// What arquivar_curso does when the client cannot ask its user to confirm (no elicitation):
    /// `refuse` (default; the model is told why) or `allow` (archive without asking).
    #[arg(long, env = "UNCONFIRMED_ARCHIVE", default_value = "refuse", value_parser = UnconfirmedArchive::parse)]
    pub unconfirmed_archive: UnconfirmedArchive,

    /// The operator's policy file (ADR 0036).
    ///
    /// Lines `somente-leitura`, `desativar ferramenta
    /// <nome>`, `desativar prompt <nome>`, each optionally after `catalogo <nome>`. Reread every
    /// 500 ms: a change counts without a restart and the host is told (list_changed). Unset:
    /// everything enabled.
    #[arg(long, env = "POLICY_FILE")]
    pub policy_file: Option<PathBuf>,

    /// The one catalog this app serves.
    ///
    /// On a database that holds several (1-64 of a-z, 0-9, '-'; ADR 0035). `padrao`, the default, is where every database made before catalogs keeps its courses.
    #[arg(long, env = "CATALOG", default_value = CatalogName::DEFAULT, value_parser = parse_catalog)]
    pub catalog: CatalogName,

    /// Log lines on stderr: `text` or `json`.
    ///
    /// `text` (default), for people, or `json`: one JSON object per line, for log collectors.
    #[arg(long, env = "LOG_FORMAT", value_enum, default_value_t = LogFormat::Text, hide_possible_values = true)]
    pub log_format: LogFormat,
}

/// How log lines are written on stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line, fields at the top level.
    Json,
}

/// The commands of the binary besides serving.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum StdioCommand {
    /// Validates the configuration without serving.
    ///
    /// The database opens (and is migrated, as a start would). One line per finding on stdout; exit 0 only when none is an error.
    Check,
}

impl Settings {
    /// The settings of this process's command line and environment, where a variable set to the
    /// empty string counts as unset, for every setting (`DATABASE_URL=` is no `DATABASE_URL`), as
    /// in the backend. Exits with clap's message on a command line it cannot parse.
    #[must_use]
    pub fn from_command_line() -> Self {
        let command =
            without_variables(Self::command(), &|name| std::env::var_os(name).is_some_and(|value| value.is_empty()));
        Self::from_arg_matches(&command.get_matches()).unwrap_or_else(|error| error.exit())
    }

    /// The behaviour these settings ask of the server (stdio keeps a connection per client).
    #[must_use]
    pub fn server_options(&self) -> ServerOptions {
        ServerOptions {
            resource_tools: self.resource_tools,
            legacy_subscriptions: true,
            unconfirmed_archive: self.unconfirmed_archive,
        }
    }

    /// `DATABASE_PATH`, or the default ([`crate::default_database_path`]); `None` when unset and
    /// the platform gives no per-user data folder.
    #[must_use]
    pub fn database_path(&self) -> Option<PathBuf> {
        self.database_path.clone().or_else(crate::default_database_path)
    }

    /// `POLICY_FILE` read and parsed, if set; the error names the setting and the file.
    #[must_use]
    pub fn policy(&self) -> Option<Result<(PolicyFile, Policy), String>> {
        self.policy_file.as_deref().map(|path| {
            PolicyFile::load(path).map_err(|error| {
                let shown = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
                format!("{error}: invalid POLICY_FILE={}", shown.display())
            })
        })
    }
}

fn parse_catalog(text: &str) -> Result<CatalogName, courses_domain::CatalogNameError> {
    CatalogName::parse(text)
}

/// `command` (and its subcommands) without the environment fallback of the settings whose
/// variable `empty` says is set but empty, so that clap reads them as unset. The backend's
/// settings have the same rule.
fn without_variables(command: clap::Command, empty: &dyn Fn(&std::ffi::OsStr) -> bool) -> clap::Command {
    command
        .mut_args(|arg| match arg.get_env() {
            Some(name) if empty(name) => arg.env(None::<&'static str>),
            _ => arg,
        })
        .mut_subcommands(|subcommand| without_variables(subcommand, empty))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_variable_set_but_empty_is_not_read() {
        let command = without_variables(Settings::command(), &|name| name == "DATABASE_URL");
        let url = command.get_arguments().find(|arg| arg.get_id() == "database_url").expect("the argument");
        assert_eq!(url.get_env(), None);
        let settings = Settings::from_arg_matches(&command.get_matches_from(["mcp-cursos-stdio"])).expect("settings");
        assert_eq!(settings.database_url, None);
    }
}
