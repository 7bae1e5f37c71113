//! The binary's commands, one file each (as mini-redis's `cmd/`): [`serve`] (no command), [`keys`],
//! [`health`], [`check`], [`export`], [`import`], [`migrate`], [`backup`] and [`restore`]. Each
//! takes its own arguments and calls the libraries. Beside them, what they share: the command
//! line ([`settings`]), the start-up steps of `serve` and `check` ([`startup`]), and the progress
//! and Ctrl-C handling of the long ones ([`progress`]).

pub mod backup;
pub mod check;
pub mod export;
pub mod health;
pub mod import;
pub mod keys;
pub mod migrate;
#[cfg(test)]
mod oauth_tests;
pub mod progress;
pub mod restore;
pub mod serve;
pub mod settings;
pub mod startup;

/// stdout, reached from this function only: the generated key, `check`'s findings, `keys
/// create|list`, the commands' reports and `export --output -` write through it, and everything
/// else goes to stderr (`clippy::disallowed_methods` allows `std::io::stdout` here alone).
#[allow(clippy::disallowed_methods, reason = "the backend's one writer of stdout")]
pub(crate) fn stdout() -> std::io::StdoutLock<'static> {
    std::io::stdout().lock()
}
