//! `mcp-cursos-backend keys create|revoke|list`: manage the keys file (KEYS_FILE or --keys-file);
//! the new key alone goes to stdout, everything else to stderr.

use std::io::Write;
use std::path::Path;

use anyhow::Context;
use clap::Subcommand;
use courses_domain::CatalogName;
use mcp_server::Scope;

use crate::keys::key_name::KeyName;
use crate::keys::keys_file::{KeysFile, create_key_and_show, revoke_key};

/// `keys create|revoke|list`.
#[derive(Debug, Clone, Subcommand)]
pub enum KeysCommand {
    /// Creates a key, prints it once on stdout (only there, only now) and appends its hash.
    Create {
        /// The key's name (1-64 of a-z, 0-9, '.', '_', '-'), recorded as who made each change.
        #[arg(long, value_parser = KeyName::parse_for_keys_file)]
        name: KeyName,
        /// `leitura` (resources, prompts, completions; no writing tool) or `escrita` (everything).
        #[arg(long, value_parser = Scope::parse)]
        scope: Scope,
        /// The one catalog the key reads and changes.
        ///
        /// 1-64 of a-z, 0-9, '-'; `padrao` by default (ADR 0035).
        #[arg(long, value_parser = CatalogName::parse, default_value = CatalogName::DEFAULT)]
        catalog: CatalogName,
    },
    /// Removes the key with this name; a running server refuses it from its next reload.
    Revoke {
        /// The key's name.
        #[arg(long, value_parser = KeyName::parse_for_keys_file)]
        name: KeyName,
    },
    /// Lists the keys' names, scopes and catalogs (never a key nor a hash).
    List,
}

/// Runs `command` on the keys file at `keys_file`.
///
/// # Errors
/// No keys file set, or the file cannot be read or rewritten.
pub fn run(command: &KeysCommand, keys_file: Option<&Path>) -> anyhow::Result<()> {
    let path = keys_file.context("set KEYS_FILE or --keys-file to the keys file to manage")?;
    let mut stdout = super::stdout();
    match command {
        KeysCommand::Create { name, scope, catalog } => {
            // Shown (and flushed) before the rename that makes it take effect: a key that cannot be
            // printed is never added.
            create_key_and_show(path, name, *scope, catalog, |key| {
                stdout.write_all(format!("{}\n", key.expose()).as_bytes())?;
                stdout.flush()
            })
            .context("cannot create the key")?;
            eprintln!(
                "Key {name} ({scope}, catalog {catalog}) added to {}. It is shown only now, above; a running server accepts it within a second.",
                path.display()
            );
        }
        KeysCommand::Revoke { name } => {
            revoke_key(path, name).context("cannot revoke the key")?;
            eprintln!("Key {name} revoked in {}; a running server refuses it within a second.", path.display());
        }
        KeysCommand::List => {
            let keys = KeysFile::read(path).context("cannot read the keys file")?;
            for entry in keys.entries() {
                stdout.write_all(format!("{} {} {}\n", entry.name, entry.scope, entry.catalog).as_bytes())?;
            }
            stdout.flush()?;
        }
    }
    Ok(())
}
