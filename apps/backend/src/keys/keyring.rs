//! [`Keyring`]: the keys a running server accepts, reloaded from the keys file without a restart.
//!
//! **Reload.** [`Keyring::watch`] rereads the keys file every [`RELOAD_INTERVAL`] on the
//! blocking pool ([`mcp_server::reloaded_file`], which the policy file shares), and swaps in the
//! new set when its text changed and parses. So a key added or revoked is accepted or refused at
//! most [`RELOAD_INTERVAL`] (plus one read) after the file changed, with no restart.
//!
//! **A bad file never locks everyone out.** A file that cannot be read, does not parse, or is
//! empty (zero bytes: what an editor's truncate-then-write shows for a moment, whereas a file made
//! by `keys create` always has a header) leaves the previous set in force and logs one warning per
//! distinct problem. To revoke every key, leave the file with only comments.

use std::path::Path;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use courses_domain::CatalogName;
use mcp_server::reloaded_file::{self, ReloadedFile, Reread};
use mcp_server::{Authority, Caller, Lapsed, Principal, Scope};
use tokio_util::sync::CancellationToken;

use super::api_key::ApiKey;
use super::key_name::KeyName;
use super::keys_file::{KeyHash, KeysFile, KeysFileError};

/// How often a running server rereads its keys file (and its policy file): the longest a revoked
/// key keeps working.
pub const RELOAD_INTERVAL: Duration = reloaded_file::RELOAD_INTERVAL;

/// One accepted key: the hash to compare with and the caller it authenticates as.
#[derive(Debug)]
struct Accepted {
    hash: KeyHash,
    caller: Caller,
}

/// The keys a server accepts: `API_KEY` (named `api-key`, scope `escrita`) and those of the keys
/// file. Cheap to clone; clones share the set.
#[derive(Debug, Clone)]
pub struct Keyring {
    /// The single `API_KEY`, which never changes while running.
    fixed: Arc<Option<Accepted>>,
    /// The keys file's set, swapped whole on reload.
    from_file: Arc<RwLock<Arc<Vec<Accepted>>>>,
    /// The file and what was last seen in it.
    file: Option<Arc<ReloadedFile>>,
}

/// What [`Keyring::reload`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reload {
    /// No keys file, or its text did not change.
    Unchanged,
    /// The new set is in force.
    Replaced {
        /// Names now accepted that were not before.
        added: Vec<String>,
        /// Names no longer accepted.
        removed: Vec<String>,
    },
    /// The file is unusable: the previous set stays in force.
    KeptPrevious,
}

impl Keyring {
    /// Reads the keys file at `keys_file` (if any) and builds the keyring with it and `api_key`.
    ///
    /// # Errors
    /// [`KeysFileError`] when the file cannot be read or a line is malformed: at start, a bad
    /// file is an error (on reload, it only keeps the previous set).
    pub fn load(api_key: Option<&ApiKey>, keys_file: Option<&Path>) -> Result<Self, KeysFileError> {
        Self::load_hashed(api_key.map(|key| KeyHash::of(key.expose().as_bytes())), keys_file)
    }

    /// [`Keyring::load`] with the full-scope `api-key` given by its hash: the generated key, whose
    /// hash alone is kept (ADR 0048), or `API_KEY`'s.
    ///
    /// # Errors
    /// As [`Keyring::load`].
    pub fn load_hashed(api_key: Option<KeyHash>, keys_file: Option<&Path>) -> Result<Self, KeysFileError> {
        let fixed = api_key.map(|hash| {
            let caller = Caller::new(KeyName::API_KEY, Scope::Write).with_principal(principal_of(&hash));
            Accepted { hash, caller }
        });
        let (set, file) = match keys_file {
            Some(path) => {
                // One read for both the keys and what the watcher compares with, so a change made
                // right now is not mistaken for the text already loaded.
                let (watched, text) =
                    ReloadedFile::open(path).map_err(|cause| KeysFileError::Io { path: path.to_owned(), cause })?;
                let keys = KeysFile::parse(&text)?;
                (accepted(&keys), Some(Arc::new(watched)))
            }
            None => (Vec::new(), None),
        };
        Ok(Self { fixed: Arc::new(fixed), from_file: Arc::new(RwLock::new(Arc::new(set))), file })
    }

    /// The caller `presented` (the bytes after `Bearer `) authenticates as, if any.
    ///
    /// The presented key is hashed once and compared with every accepted hash in constant time,
    /// without stopping at a match. Comparing hashes rather than keys means that even a timing
    /// difference would speak of a hash of what the client sent, never of a stored key.
    #[must_use]
    pub fn authenticate(&self, presented: &[u8]) -> Option<Caller> {
        let presented = KeyHash::of(presented);
        let from_file = Arc::clone(&self.from_file.read().unwrap_or_else(std::sync::PoisonError::into_inner));
        let mut found = None;
        for accepted in self.fixed.iter().chain(from_file.iter()) {
            if accepted.hash.matches(&presented) && found.is_none() {
                found = Some(accepted.caller.clone());
            }
        }
        found
    }

    /// The catalogs of the keys accepted now (one per key, repeats included).
    #[must_use]
    pub fn catalogs(&self) -> Vec<CatalogName> {
        let from_file = Arc::clone(&self.from_file.read().unwrap_or_else(std::sync::PoisonError::into_inner));
        self.fixed.iter().chain(from_file.iter()).map(|accepted| accepted.caller.catalog().clone()).collect()
    }

    /// How many keys are accepted now.
    #[must_use]
    pub fn len(&self) -> usize {
        usize::from(self.fixed.is_some())
            + self.from_file.read().unwrap_or_else(std::sync::PoisonError::into_inner).len()
    }

    /// True when no key is accepted (a keys file with only comments and no `API_KEY`).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Rereads the keys file (blocking I/O) and swaps in its keys if the text changed and is
    /// valid; otherwise keeps the current set. Logs what it did, with names only.
    pub fn reload(&self) -> Reload {
        let Some(file) = &self.file else {
            return Reload::Unchanged;
        };
        let path = file.path().display();
        let kept = self.len().saturating_sub(usize::from(self.fixed.is_some()));
        let text = match file.reread() {
            Reread::Unchanged => return Reload::Unchanged,
            Reread::Changed(text) => text,
            Reread::Empty => {
                tracing::warn!(target: "backend::keyring", %path, kept, "the keys file is empty (being written?); keeping the keys loaded before. Leave a comment line to revoke every key");
                return Reload::KeptPrevious;
            }
            Reread::Unreadable(error) => {
                tracing::warn!(target: "backend::keyring", %path, %error, kept, "cannot read the keys file; keeping the keys loaded before");
                return Reload::KeptPrevious;
            }
        };
        let keys = match KeysFile::parse(&text) {
            Ok(keys) => keys,
            Err(error) => {
                tracing::warn!(target: "backend::keyring", %path, %error, kept, "the keys file is not valid; keeping the keys loaded before");
                return Reload::KeptPrevious;
            }
        };
        let new_set = accepted(&keys);
        let mut current = self.from_file.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        let names = |set: &[Accepted]| set.iter().map(|accepted| accepted.caller.name().to_owned()).collect::<Vec<_>>();
        let (old_names, new_names) = (names(&current), names(&new_set));
        let added: Vec<String> = new_names.iter().filter(|name| !old_names.contains(name)).cloned().collect();
        let removed: Vec<String> = old_names.iter().filter(|name| !new_names.contains(name)).cloned().collect();
        *current = Arc::new(new_set);
        tracing::info!(target: "backend::keyring", %path, keys = new_names.len(), ?added, ?removed, "keys file reloaded");
        Reload::Replaced { added, removed }
    }

    /// Calls [`Keyring::reload`] on the blocking pool every `interval` until `shutdown`, and
    /// `replaced` right after each reload that swapped in another set of keys (the server
    /// rechecks what its callers have open: a revoked key's streams end at once, not at some
    /// later tick).
    pub fn watch(
        &self,
        interval: Duration,
        shutdown: CancellationToken,
        replaced: impl Fn() + Send + Sync + 'static,
    ) -> Option<tokio::task::JoinHandle<()>> {
        self.file.as_ref()?;
        let keyring = self.clone();
        let replaced = Arc::new(replaced);
        Some(reloaded_file::every(interval, shutdown, "keys", move || {
            if matches!(keyring.reload(), Reload::Replaced { .. }) {
                replaced();
            }
        }))
    }
}

/// The principal of a key: its hash (what the keys file stores, never the key), so a key
/// re-issued under the same name is another principal, and a line edited to another scope or
/// catalog is the same one, changed.
fn principal_of(hash: &KeyHash) -> Principal {
    Principal::new(format!("{KEY_PRINCIPAL}{}", hash.to_file_text()))
}

/// How the principals of keys begin; other principals (tokens, `NO_AUTH`) are not the keyring's.
const KEY_PRINCIPAL: &str = "key:";

fn accepted(keys: &KeysFile) -> Vec<Accepted> {
    keys.entries()
        .iter()
        .map(|entry| Accepted {
            hash: entry.hash.clone(),
            caller: Caller::new(entry.name.as_str(), entry.scope)
                .in_catalog(entry.catalog.clone())
                .with_principal(principal_of(&entry.hash)),
        })
        .collect()
}

/// A key's caller as the keys in force now say: the same key (by its principal) with the scope
/// and catalog its line has now, or [`Lapsed::Revoked`] once no accepted key has that
/// principal. Callers that are not keys (tokens, `NO_AUTH`) stand as they are here.
impl Authority for Keyring {
    fn current(&self, caller: &Caller) -> Result<Caller, Lapsed> {
        if !caller.principal().as_str().starts_with(KEY_PRINCIPAL) {
            return Ok(caller.clone());
        }
        let from_file = Arc::clone(&self.from_file.read().unwrap_or_else(std::sync::PoisonError::into_inner));
        self.fixed
            .iter()
            .chain(from_file.iter())
            .find(|accepted| accepted.caller.principal() == caller.principal())
            .map(|accepted| accepted.caller.clone())
            .ok_or(Lapsed::Revoked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::keys_file::{create_key, revoke_key};

    fn name(text: &str) -> KeyName {
        KeyName::parse(text).expect("name")
    }

    /// Who a key authenticates as: name and scope (its principal is its hash, compared apart).
    fn who(caller: Option<Caller>) -> Option<(String, Scope)> {
        caller.map(|caller| (caller.name().to_owned(), caller.scope()))
    }

    fn as_named(name: &str, scope: Scope) -> Option<(String, Scope)> {
        Some((name.to_owned(), scope))
    }

    fn keyring_for(path: &std::path::Path, api_key: Option<&ApiKey>) -> Keyring {
        Keyring::load(api_key, Some(path)).expect("valid file")
    }

    #[test]
    fn api_key_alone_is_one_full_scope_caller_named_api_key() {
        let api_key = ApiKey::parse("segredo-de-teste").expect("valid");
        let keyring = Keyring::load(Some(&api_key), None).expect("no file to read");
        assert_eq!(who(keyring.authenticate(b"segredo-de-teste")), as_named("api-key", Scope::Write));
        assert_eq!(keyring.authenticate(b"segredo-de-testE"), None);
        assert_eq!(keyring.authenticate(b""), None);
        assert_eq!(keyring.len(), 1);
        assert_eq!(keyring.reload(), Reload::Unchanged, "no file to reload");
    }

    #[test]
    fn each_key_of_the_file_authenticates_as_its_own_name_and_scope_beside_api_key() {
        let folder = tempfile::tempdir().expect("temp dir");
        let path = folder.path().join("keys");
        let reader = create_key(&path, &name("leitor"), Scope::Read).expect("created");
        let writer = create_key(&path, &name("ci"), Scope::Write).expect("created");
        let api_key = ApiKey::parse("segredo-de-teste").expect("valid");
        let keyring = keyring_for(&path, Some(&api_key));
        assert_eq!(who(keyring.authenticate(reader.expose().as_bytes())), as_named("leitor", Scope::Read));
        assert_eq!(who(keyring.authenticate(writer.expose().as_bytes())), as_named("ci", Scope::Write));
        assert_eq!(who(keyring.authenticate(b"segredo-de-teste")), as_named("api-key", Scope::Write));
        assert_eq!(keyring.authenticate(b"mcp_errada"), None);
        assert_eq!(keyring.len(), 3);
    }

    #[test]
    fn a_key_added_or_revoked_in_the_file_counts_after_a_reload_without_a_restart() {
        let folder = tempfile::tempdir().expect("temp dir");
        let path = folder.path().join("keys");
        let kept = create_key(&path, &name("ci"), Scope::Write).expect("created");
        let keyring = keyring_for(&path, None);
        assert_eq!(keyring.reload(), Reload::Unchanged, "nothing changed since it was read");

        let added = create_key(&path, &name("novo"), Scope::Read).expect("created");
        assert_eq!(keyring.authenticate(added.expose().as_bytes()), None, "not before the reload");
        assert_eq!(keyring.reload(), Reload::Replaced { added: vec!["novo".to_owned()], removed: Vec::new() });
        assert_eq!(who(keyring.authenticate(added.expose().as_bytes())), as_named("novo", Scope::Read));

        revoke_key(&path, &name("novo")).expect("revoked");
        assert_eq!(keyring.reload(), Reload::Replaced { added: Vec::new(), removed: vec!["novo".to_owned()] });
        assert_eq!(keyring.authenticate(added.expose().as_bytes()), None);
        assert!(keyring.authenticate(kept.expose().as_bytes()).is_some());
        assert_eq!(keyring.reload(), Reload::Unchanged);
    }

    #[test]
    fn a_broken_missing_or_empty_file_keeps_the_previous_keys_until_it_is_fixed() {
        let folder = tempfile::tempdir().expect("temp dir");
        let path = folder.path().join("keys");
        let key = create_key(&path, &name("ci"), Scope::Write).expect("created");
        let good = std::fs::read_to_string(&path).expect("file");
        let keyring = keyring_for(&path, None);
        for broken in [format!("{good}meio-escri"), String::new(), format!("{good}ci leitura sha256:00\n")] {
            std::fs::write(&path, &broken).expect("write");
            assert_eq!(keyring.reload(), Reload::KeptPrevious, "{broken:?}");
            assert_eq!(keyring.reload(), Reload::Unchanged, "reported once");
            assert!(keyring.authenticate(key.expose().as_bytes()).is_some(), "still accepted");
        }
        std::fs::remove_file(&path).expect("remove");
        assert_eq!(keyring.reload(), Reload::KeptPrevious);
        assert!(keyring.authenticate(key.expose().as_bytes()).is_some(), "still accepted");

        std::fs::write(&path, "# todas revogadas\n").expect("write");
        assert!(matches!(keyring.reload(), Reload::Replaced { .. }));
        assert!(keyring.authenticate(key.expose().as_bytes()).is_none(), "a file with only comments revokes all");
        assert!(keyring.is_empty());
    }

    #[test]
    fn the_authority_follows_each_key_by_its_hash_not_its_name() {
        let folder = tempfile::tempdir().expect("temp dir");
        let path = folder.path().join("keys");
        let key = create_key(&path, &name("ci"), Scope::Write).expect("created");
        let keyring = keyring_for(&path, None);
        let caller = keyring.authenticate(key.expose().as_bytes()).expect("accepted");
        assert_eq!(keyring.current(&caller), Ok(caller.clone()), "unchanged while the line is");

        // The same line with another scope: the same key, changed.
        let text = std::fs::read_to_string(&path).expect("file");
        std::fs::write(&path, text.replace(" escrita ", " leitura ")).expect("write");
        assert!(matches!(keyring.reload(), Reload::Replaced { .. }));
        let now = keyring.current(&caller).expect("still a key");
        assert_eq!((now.name(), now.scope()), ("ci", Scope::Read));

        // Revoked, then re-issued under the same name: another key, so the old one has lapsed.
        revoke_key(&path, &name("ci")).expect("revoked");
        create_key(&path, &name("ci"), Scope::Write).expect("re-issued");
        assert!(matches!(keyring.reload(), Reload::Replaced { .. }));
        assert_eq!(keyring.current(&caller), Err(Lapsed::Revoked));

        // Callers that are not keys are not the keyring's to judge.
        let token = Caller::new("ana@http://idp", Scope::Write).with_principal(Principal::new("oauth:http://idp#ana"));
        assert_eq!(keyring.current(&token), Ok(token.clone()));
    }

    #[tokio::test]
    async fn the_watcher_picks_up_a_revocation_within_the_interval() {
        let folder = tempfile::tempdir().expect("temp dir");
        let path = folder.path().join("keys");
        let key = create_key(&path, &name("ci"), Scope::Write).expect("created");
        let keyring = keyring_for(&path, None);
        let shutdown = CancellationToken::new();
        let watcher = keyring.watch(Duration::from_millis(50), shutdown.clone(), || {}).expect("a file to watch");
        revoke_key(&path, &name("ci")).expect("revoked");
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while keyring.authenticate(key.expose().as_bytes()).is_some() {
            assert!(tokio::time::Instant::now() < deadline, "never reloaded");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        shutdown.cancel();
        watcher.await.expect("the watcher stops");
    }
}
