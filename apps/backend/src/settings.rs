//! [`Settings`]: the backend's configuration, from flags with the environment as fallback.

use std::path::PathBuf;

use clap::Parser;

/// mcp-cursos over Streamable HTTP (`POST /mcp`, `Authorization: Bearer <API_KEY>`).
#[derive(Debug, Clone, Parser)]
#[command(name = "mcp-cursos-backend", version, about, long_about = None)]
pub struct Settings {
    /// Address to listen on. Keep the loopback default unless a proxy or a real deployment needs more.
    #[arg(long, env = "HOST", default_value = "127.0.0.1")]
    pub host: String,

    /// TCP port to listen on (0 picks a free one).
    #[arg(long, env = "PORT", default_value_t = 3000)]
    pub port: u16,

    /// SQLite database file; created with its folder and migrated at start.
    #[arg(long, env = "DATABASE_PATH", default_value = "./data/cursos.db")]
    pub database_path: PathBuf,

    /// The key clients must send as `Authorization: Bearer <key>`. Without one, a random key is
    /// generated at start and printed once. Prefer the environment variable: flags show in `ps`.
    #[arg(long, env = "API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,

    /// Extra host names this server answers to, comma-separated (`cursos.example.com,api.example.com:8443`).
    /// Loopback (localhost, 127.0.0.1, ::1) is always allowed; any other Host gets 403.
    #[arg(long, env = "ALLOWED_HOSTS", value_delimiter = ',')]
    pub allowed_hosts: Vec<String>,

    /// Extra exact origins allowed to call from a browser, comma-separated (`https://app.example.com`).
    /// Origins whose host is an allowed host are always accepted.
    #[arg(long, env = "ALLOWED_ORIGINS", value_delimiter = ',')]
    pub allowed_origins: Vec<String>,
}
