//! The keys file: one API key per line as `name scope [catalogo=<catalog>] sha256:<hex>`,
//! holding only hashes. A line without `catalogo=` is a key of the default catalog, `padrao`
//! (every file written before catalogs existed); each key belongs to exactly one catalog (ADR 0035).
//!
//! ```text
//! # mcp-cursos API keys: name, scope (leitura or escrita), catalog, SHA-256 of the key.
//! painel leitura sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
//! ci escrita sha256:60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752
//! azul-ci escrita catalogo=time-azul sha256:fd61a03af4f77d870fc21e05e7e80678095c92d808cfb3b5c279ee04c74aca13
//! ```
//!
//! A human can read it, diff it and edit it; `#` starts a comment line. [`create_key`] and
//! [`revoke_key`] (the `keys` commands of the binary) rewrite it atomically (temporary file, then
//! rename), so a server reloading it never sees half a file. Each holds an exclusive lock on a
//! companion file (`.<name>.lock` beside it) from its read to its rename, so commands run at once
//! (two operators, a script in a loop) take turns instead of one rewriting the file without the
//! other's change.
//!
//! **An interrupted command** (killed, or its terminal closed) leaves either the old file or the
//! new one, never a mix. Its temporary file (`.<name>.tmp-<pid>`) may stay behind: the next
//! command removes it, since while it holds the lock no other command can be writing one.
//! [`create_key_and_show`] shows the key before the rename that makes it take effect, so a key
//! that takes effect has been shown; a command killed between the two has shown a key that is
//! not in the file (`keys list` tells), never the reverse (ADR 0024).
//!
//! **Why a fast hash.** Keys made by `keys create` are 256 random bits: nobody can guess one from
//! its SHA-256, so a slow password hash (argon2, bcrypt) would only cost time on every request
//! without protecting anything. A leaked keys file gives no key; a leaked key is revoked by
//! removing its line.

use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};

use courses_domain::{CatalogName, CatalogNameError};
use mcp_server::Scope;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::api_key::ApiKey;
use super::key_name::{KeyName, KeyNameError};
use crate::atomic_file;

/// The SHA-256 of a key: what the keys file stores instead of the key.
///
/// Compared in constant time; its `Debug` is redacted and it has no `Display`, so it does not
/// reach a log or a message either.
#[derive(Clone)]
pub struct KeyHash([u8; 32]);

impl KeyHash {
    const PREFIX: &'static str = "sha256:";

    /// The hash of a key as presented by a client (the bytes after `Bearer `).
    #[must_use]
    pub fn of(key: &[u8]) -> Self {
        Self(Sha256::digest(key).into())
    }

    /// Parses `sha256:` followed by 64 lower-case hexadecimal digits.
    pub(crate) fn parse(text: &str) -> Option<Self> {
        let hex = text.strip_prefix(Self::PREFIX)?;
        if hex.len() != 64 {
            return None;
        }
        let mut bytes = [0_u8; 32];
        for (byte, pair) in bytes.iter_mut().zip(hex.as_bytes().chunks_exact(2)) {
            *byte = (hex_digit(pair[0])? << 4) | hex_digit(pair[1])?;
        }
        Some(Self(bytes))
    }

    /// The text stored in the file.
    pub(crate) fn to_file_text(&self) -> String {
        let mut text = String::with_capacity(Self::PREFIX.len() + 64);
        text.push_str(Self::PREFIX);
        for byte in self.0 {
            text.push(char::from(b"0123456789abcdef"[usize::from(byte >> 4)]));
            text.push(char::from(b"0123456789abcdef"[usize::from(byte & 0x0f)]));
        }
        text
    }

    /// True when both hashes are equal, in constant time.
    #[must_use]
    pub fn matches(&self, other: &Self) -> bool {
        self.0.ct_eq(&other.0).into()
    }
}

fn hex_digit(digit: u8) -> Option<u8> {
    match digit {
        b'0'..=b'9' => Some(digit - b'0'),
        b'a'..=b'f' => Some(digit - b'a' + 10),
        _ => None,
    }
}

impl fmt::Debug for KeyHash {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("KeyHash(<redacted>)")
    }
}

/// One key of the file.
#[derive(Debug, Clone)]
pub struct KeyEntry {
    /// Its name: the caller's name in the history and in the logs.
    pub name: KeyName,
    /// What it may do.
    pub scope: Scope,
    /// The one catalog it reads and changes (`padrao` when the line names none).
    pub catalog: CatalogName,
    /// The hash of the key.
    pub hash: KeyHash,
}

/// The next step for a line that is not a key's line (often a key pasted as it is).
const ADD_A_KEY: &str = "the file holds each key's SHA-256, never the key itself: to add a key, run \
     `mcp-cursos-backend keys create --name <name> --scope leitura|escrita` (it writes the line and prints the key once)";

/// What is wrong with one line of a keys file. Never quotes a hash.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LineError {
    /// Not three fields (or four, with `catalogo=<catalog>` third).
    #[error(
        "expected `name scope sha256:<hex>` or `name scope catalogo=<catalog> sha256:<hex>` (fields separated by spaces); {ADD_A_KEY}"
    )]
    FieldCount,
    /// The `catalogo=` field does not name a catalog.
    #[error("invalid catalog: {0}")]
    Catalog(CatalogNameError),
    /// The first field is not a key name.
    #[error("invalid key name: {0}")]
    Name(KeyNameError),
    /// The second field is neither `leitura` nor `escrita`.
    #[error("unknown scope {0:?}: use leitura or escrita")]
    Scope(String),
    /// The third field is not `sha256:` and 64 lower-case hex digits.
    #[error("the hash must be sha256: followed by 64 lower-case hexadecimal digits; {ADD_A_KEY}")]
    Hash,
    /// A name already used on an earlier line.
    #[error("the key name {0} appears twice")]
    DuplicateName(KeyName),
    /// The same key as an earlier line, under another name.
    #[error("the same key is listed twice (also as {0})")]
    DuplicateKey(KeyName),
}

/// Why a keys file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum KeysFileError {
    /// It cannot be read or written.
    #[error("{path}: {cause}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        cause: std::io::Error,
    },
    /// A line is malformed.
    #[error("line {line}: {error}")]
    Line {
        /// 1-based line number.
        line: usize,
        /// What is wrong with it.
        error: LineError,
    },
}

/// The parsed content of a keys file, in file order.
#[derive(Debug, Clone, Default)]
pub struct KeysFile {
    entries: Vec<KeyEntry>,
}

impl KeysFile {
    /// The first lines of a file made by `keys create`.
    pub const HEADER: &'static str = "# mcp-cursos API keys, one per line: name scope sha256:<hex of the key's SHA-256>.\n\
         # scope: leitura (resources and prompts only) or escrita (everything).\n\
         # Optional catalogo=<catalog> before the hash: the one catalog the key reaches (default padrao).\n\
         # Managed with `mcp-cursos-backend keys create|revoke|list`; a running server reloads this file.\n";

    /// Parses a keys file's text.
    ///
    /// # Errors
    /// [`KeysFileError::Line`] for the first malformed line, unknown scope, or repeated name or key.
    pub fn parse(text: &str) -> Result<Self, KeysFileError> {
        let mut entries: Vec<KeyEntry> = Vec::new();
        for (index, line) in text.lines().enumerate() {
            let line_error = |error| KeysFileError::Line { line: index + 1, error };
            let Some(entry) = parse_line(line).map_err(line_error)? else {
                continue;
            };
            if entries.iter().any(|earlier| earlier.name == entry.name) {
                return Err(line_error(LineError::DuplicateName(entry.name)));
            }
            if let Some(earlier) = entries.iter().find(|earlier| earlier.hash.matches(&entry.hash)) {
                return Err(line_error(LineError::DuplicateKey(earlier.name.clone())));
            }
            entries.push(entry);
        }
        Ok(Self { entries })
    }

    /// Reads and parses the file at `path`.
    ///
    /// # Errors
    /// [`KeysFileError::Io`] when it cannot be read, or as [`KeysFile::parse`].
    pub fn read(path: &Path) -> Result<Self, KeysFileError> {
        let text = read_text(path)?;
        Self::parse(&text)
    }

    /// The keys, in file order.
    #[must_use]
    pub fn entries(&self) -> &[KeyEntry] {
        &self.entries
    }
}

/// `Ok(None)` for a blank or comment line.
fn parse_line(line: &str) -> Result<Option<KeyEntry>, LineError> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return Ok(None);
    }
    let fields: Vec<&str> = line.split_whitespace().collect();
    let (name, scope, catalog, hash) = match fields.as_slice() {
        [name, scope, hash] => (name, scope, None, hash),
        [name, scope, catalog, hash] => {
            let catalog = catalog.strip_prefix(CATALOG_FIELD).ok_or(LineError::FieldCount)?;
            (name, scope, Some(catalog), hash)
        }
        _ => return Err(LineError::FieldCount),
    };
    let name = KeyName::parse_for_keys_file(name).map_err(LineError::Name)?;
    let scope = Scope::parse(scope).map_err(|_| LineError::Scope((*scope).to_owned()))?;
    let catalog = match catalog {
        None => CatalogName::default_catalog(),
        Some(catalog) => CatalogName::parse(catalog).map_err(LineError::Catalog)?,
    };
    let hash = KeyHash::parse(hash).ok_or(LineError::Hash)?;
    Ok(Some(KeyEntry { name, scope, catalog, hash }))
}

/// What starts the optional catalog field of a line.
const CATALOG_FIELD: &str = "catalogo=";

/// A key's line: the catalog field only for a catalog other than the default, so that a file of
/// default-catalog keys reads as before catalogs existed (an older binary still reads it).
fn key_line(name: &KeyName, scope: Scope, catalog: &CatalogName, hash: &KeyHash) -> String {
    if *catalog == CatalogName::default_catalog() {
        format!("{name} {scope} {}\n", hash.to_file_text())
    } else {
        format!("{name} {scope} {CATALOG_FIELD}{catalog} {}\n", hash.to_file_text())
    }
}

fn read_text(path: &Path) -> Result<String, KeysFileError> {
    std::fs::read_to_string(path).map_err(|source| KeysFileError::Io { path: path.to_owned(), cause: source })
}

/// Why a `keys` command did nothing.
#[derive(Debug, thiserror::Error)]
pub enum KeyCommandError {
    /// The file cannot be read, parsed or written.
    #[error(transparent)]
    File(#[from] KeysFileError),
    /// `keys create` with a name already in the file.
    #[error("a key named {0} already exists: revoke it first, or pick another name")]
    DuplicateName(KeyName),
    /// `keys revoke` with a name not in the file.
    #[error("no key named {0}")]
    UnknownName(KeyName),
    /// No randomness for a new key.
    #[error("cannot generate a key: {0}")]
    Random(getrandom::Error),
    /// The new key could not be shown (stdout closed or full): it was not added.
    #[error("cannot show the new key, so it was not added: {0}")]
    Show(std::io::Error),
}

/// Generates a key named `name` with `scope`, appends its hash to the file at `path` (created
/// with a header when missing) and returns the key: the only time it exists outside the client.
///
/// Only for callers that do not show the key to anyone (tests, tools that keep it): a command
/// that prints it uses [`create_key_and_show`], so that a key never takes effect unshown.
///
/// # Errors
/// [`KeyCommandError`]: the file is unreadable or malformed (it is left untouched), the name is
/// taken, or it cannot be written.
pub fn create_key(path: &Path, name: &KeyName, scope: Scope) -> Result<ApiKey, KeyCommandError> {
    create_key_in(path, name, scope, &CatalogName::default_catalog())
}

/// [`create_key`], for a key of `catalog`.
///
/// # Errors
/// As [`create_key`].
pub fn create_key_in(
    path: &Path,
    name: &KeyName,
    scope: Scope,
    catalog: &CatalogName,
) -> Result<ApiKey, KeyCommandError> {
    let mut created = None;
    create_key_and_show(path, name, scope, catalog, |key| {
        created = Some(key.clone());
        Ok(())
    })?;
    Ok(created.expect("create_key_and_show shows the key before it succeeds"))
}

/// Generates a key named `name` with `scope` in `catalog`, writes the new file beside the keys file at `path`
/// (created with a header when missing), calls `show` with the key (print it and flush), and only
/// when `show` succeeded renames the new file over the old one: the key takes effect only once it
/// has been shown, and a key that cannot be shown is never added.
///
/// # Errors
/// [`KeyCommandError`]: the file is unreadable or malformed (it is left untouched), the name is
/// taken, it cannot be written, or `show` failed ([`KeyCommandError::Show`], the file untouched).
pub fn create_key_and_show(
    path: &Path,
    name: &KeyName,
    scope: Scope,
    catalog: &CatalogName,
    show: impl FnOnce(&ApiKey) -> std::io::Result<()>,
) -> Result<(), KeyCommandError> {
    create_missing_folder(path)?;
    let _turn = lock_for_rewrite(path)?;
    let mut text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => KeysFile::HEADER.to_owned(),
        Err(source) => return Err(KeysFileError::Io { path: path.to_owned(), cause: source }.into()),
    };
    let keys = KeysFile::parse(&text)?;
    if keys.entries.iter().any(|entry| &entry.name == name) {
        return Err(KeyCommandError::DuplicateName(name.clone()));
    }
    let key = ApiKey::generate().map_err(KeyCommandError::Random)?;
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&key_line(name, scope, catalog, &KeyHash::of(key.expose().as_bytes())));
    KeysFile::parse(&text)?;
    let prepared = PreparedRewrite::write(path, &text)?;
    show(&key).map_err(KeyCommandError::Show)?;
    prepared.commit()?;
    Ok(())
}

/// Removes the key named `name` from the file at `path`; comments and other lines stay as they are.
///
/// # Errors
/// [`KeyCommandError`]: the file is unreadable or malformed (it is left untouched), no key has
/// that name, or it cannot be written.
pub fn revoke_key(path: &Path, name: &KeyName) -> Result<(), KeyCommandError> {
    let _turn = lock_for_rewrite(path)?;
    let text = read_text(path)?;
    KeysFile::parse(&text)?;
    let mut found = false;
    let mut kept = String::with_capacity(text.len());
    for line in text.lines() {
        let is_the_key = parse_line(line).ok().flatten().is_some_and(|entry| &entry.name == name);
        if is_the_key {
            found = true;
        } else {
            kept.push_str(line);
            kept.push('\n');
        }
    }
    if !found {
        return Err(KeyCommandError::UnknownName(name.clone()));
    }
    PreparedRewrite::write(path, &kept)?.commit()?;
    Ok(())
}

/// `.<file name><suffix>` in the folder of `path`.
fn hidden_sibling(path: &Path, suffix: &str) -> Result<PathBuf, KeysFileError> {
    let file_name = path
        .file_name()
        .ok_or_else(|| KeysFileError::Io { path: path.to_owned(), cause: std::io::ErrorKind::InvalidInput.into() })?;
    let mut name = std::ffi::OsString::from(".");
    name.push(file_name);
    name.push(suffix);
    Ok(path.with_file_name(name))
}

/// Waits for, then holds until dropped, the exclusive lock of the keys file at `path`: an advisory
/// lock (`flock`) on `.<name>.lock` beside it, created when missing. Not on the keys file itself,
/// which each rewrite replaces by a new file. The lock is released when the process ends, however
/// it ends.
///
/// Once it holds the lock, removes the temporary files an interrupted command left: every command
/// writes its temporary file while holding this lock, so one found now is stale.
fn lock_for_rewrite(path: &Path) -> Result<std::fs::File, KeysFileError> {
    let io_error = |source| KeysFileError::Io { path: path.to_owned(), cause: source };
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(hidden_sibling(path, ".lock")?)
        .map_err(io_error)?;
    lock.lock().map_err(io_error)?;
    remove_stale_temporary_files(path)?;
    Ok(lock)
}

/// Creates the folder of the keys file at `path` (and its missing parents) when it does not exist,
/// readable by its owner only (mode 0700 on Unix): the first `keys create` on a fresh machine
/// needs no `mkdir` first. An existing folder is left as it is.
fn create_missing_folder(path: &Path) -> Result<(), KeysFileError> {
    let Some(folder) = path.parent().filter(|folder| !folder.as_os_str().is_empty()) else {
        return Ok(());
    };
    if folder.is_dir() {
        return Ok(());
    }
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(folder).map_err(|cause| KeysFileError::Io { path: folder.to_owned(), cause })?;
    tracing::info!(target: "backend::keys_file", folder = %folder.display(), "created the keys file's folder (owner only)");
    Ok(())
}

/// Removes `.<name>.tmp-*` beside `path`. Call only while holding the lock.
fn remove_stale_temporary_files(path: &Path) -> Result<(), KeysFileError> {
    let prefix = hidden_sibling(path, TEMPORARY_SUFFIX)?;
    let (Some(folder), Some(prefix)) = (prefix.parent(), prefix.file_name()) else {
        return Ok(());
    };
    let folder = if folder.as_os_str().is_empty() { Path::new(".") } else { folder };
    let prefix = prefix.as_encoded_bytes();
    let entries = match std::fs::read_dir(folder) {
        Ok(entries) => entries,
        // No folder yet: nothing stale, and writing will report the real problem.
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(source) => return Err(KeysFileError::Io { path: folder.to_owned(), cause: source }),
    };
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        if file_name.as_encoded_bytes().starts_with(prefix) {
            let stale = entry.path();
            match std::fs::remove_file(&stale) {
                Ok(()) => {
                    tracing::info!(target: "backend::keys_file", file = %stale.display(), "removed a temporary keys file an interrupted command left");
                }
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                Err(source) => return Err(KeysFileError::Io { path: stale, cause: source }),
            }
        }
    }
    Ok(())
}

/// What the name of a temporary file starts with after `.<keys file name>`.
const TEMPORARY_SUFFIX: &str = ".tmp-";

/// A new keys file written and flushed to disk beside the old one, waiting for [`Self::commit`]
/// to take its place. Dropped without commit, it is removed and the old file stays.
struct PreparedRewrite {
    path: PathBuf,
    temporary: tempfile::NamedTempFile,
}

impl PreparedRewrite {
    /// Writes `text` to a temporary file beside `path` and flushes it to disk. The old file's
    /// permissions are kept.
    fn write(path: &Path, text: &str) -> Result<Self, KeysFileError> {
        let temporary = hidden_sibling(path, &format!("{TEMPORARY_SUFFIX}{}", std::process::id()))?;
        let written = (|| {
            let (folder, name) =
                (temporary.parent().unwrap_or(Path::new("")), temporary.file_name().unwrap_or_default());
            let mut builder = tempfile::Builder::new();
            // Exactly `.<name>.tmp-<pid>`, created as `File::create` would (before the umask).
            builder.prefix(name).rand_bytes(0);
            #[cfg(unix)]
            builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
            let mut file = builder.tempfile_in(folder)?;
            file.write_all(text.as_bytes())?;
            if let Ok(metadata) = std::fs::metadata(path) {
                file.as_file().set_permissions(metadata.permissions())?;
            }
            file.as_file().sync_all()?;
            Ok(file)
        })();
        let temporary = written.map_err(|source| KeysFileError::Io { path: path.to_owned(), cause: source })?;
        Ok(Self { path: path.to_owned(), temporary })
    }

    /// Renames the new file over the old one ([`atomic_file::replace`]).
    fn commit(self) -> Result<(), KeysFileError> {
        atomic_file::replace(self.temporary, &self.path)
            .map_err(|source| KeysFileError::Io { path: self.path.clone(), cause: source.error })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash_text(key: &str) -> String {
        KeyHash::of(key.as_bytes()).to_file_text()
    }

    fn name(text: &str) -> KeyName {
        KeyName::parse(text).expect("name")
    }

    #[test]
    fn a_line_without_a_catalog_is_in_padrao_and_catalogo_names_another() {
        let text = format!("velho leitura {}\nazul escrita catalogo=time-azul {}\n", hash_text("k1"), hash_text("k2"));
        let keys = KeysFile::parse(&text).expect("parsed");
        let catalogs: Vec<&str> = keys.entries().iter().map(|entry| entry.catalog.as_str()).collect();
        assert_eq!(catalogs, ["padrao", "time-azul"]);
        for (line, expected) in [
            (format!("a leitura time-azul {}", hash_text("k")), LineError::FieldCount),
            (format!("a leitura catalogo=Azul {}", hash_text("k")), LineError::Catalog(CatalogNameError::BadCharacter)),
            (format!("a leitura catalogo= {}", hash_text("k")), LineError::Catalog(CatalogNameError::Empty)),
        ] {
            match KeysFile::parse(&line) {
                Err(KeysFileError::Line { line: 1, error }) => assert_eq!(error, expected, "{line}"),
                other => panic!("{line}: {other:?}"),
            }
        }
    }

    #[test]
    fn create_writes_the_catalog_only_for_a_catalog_other_than_padrao() {
        let folder = tempfile::tempdir().expect("temp dir");
        let path = folder.path().join("keys");
        create_key(&path, &name("velho"), Scope::Write).expect("created");
        let azul = CatalogName::parse("time-azul").expect("catalog");
        create_key_in(&path, &name("azul"), Scope::Read, &azul).expect("created");
        let text = std::fs::read_to_string(&path).expect("read");
        let lines: Vec<&str> = text.lines().filter(|line| !line.starts_with('#')).collect();
        assert_eq!(lines[0].split(' ').count(), 3, "{lines:?}");
        assert!(lines[1].starts_with("azul leitura catalogo=time-azul sha256:"), "{lines:?}");
        let keys = KeysFile::read(&path).expect("read back");
        assert_eq!(keys.entries()[1].catalog, azul);
    }

    #[test]
    fn the_hash_is_the_sha256_of_the_key_in_lower_case_hex() {
        assert_eq!(hash_text("test"), "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08");
        let parsed = KeyHash::parse(&hash_text("test")).expect("round trip");
        assert!(parsed.matches(&KeyHash::of(b"test")));
        assert!(!parsed.matches(&KeyHash::of(b"tesT")));
    }

    #[test]
    fn a_hash_never_shows_in_debug_output() {
        let debug = format!("{:?}", KeyHash::of(b"test"));
        assert!(!debug.contains("9f86") && debug.contains("redacted"), "{debug}");
    }

    #[test]
    fn a_file_with_comments_blank_lines_and_keys_is_read_in_order() {
        let text = format!(
            "# comentário\n\n  leitor leitura {}\n\tci   escrita {}  \n# fim",
            hash_text("chave-1"),
            hash_text("chave-2")
        );
        let keys = KeysFile::parse(&text).expect("valid");
        let read: Vec<(&str, Scope)> = keys.entries().iter().map(|entry| (entry.name.as_str(), entry.scope)).collect();
        assert_eq!(read, [("leitor", Scope::Read), ("ci", Scope::Write)]);
        assert!(keys.entries()[1].hash.matches(&KeyHash::of(b"chave-2")));
        assert!(KeysFile::parse("").expect("empty is valid").entries().is_empty());
    }

    #[test]
    fn each_malformed_line_is_reported_with_its_number_and_reason() {
        let good = hash_text("chave");
        let cases = [
            ("leitor leitura".to_owned(), LineError::FieldCount),
            (format!("leitor leitura {good} extra"), LineError::FieldCount),
            (format!("Leitor leitura {good}"), LineError::Name(KeyNameError::Character)),
            (format!("api-key escrita {good}"), LineError::Name(KeyNameError::Reserved("api-key"))),
            (format!("leitor admin {good}"), LineError::Scope("admin".to_owned())),
            (format!("leitor Leitura {good}"), LineError::Scope("Leitura".to_owned())),
            ("leitor leitura sha256:abc".to_owned(), LineError::Hash),
            (format!("leitor leitura {}", good.to_uppercase()), LineError::Hash),
            (format!("leitor leitura md5:{}", &good[7..]), LineError::Hash),
        ];
        for (line, expected) in cases {
            let text = format!("# cabeçalho\n{line}\n");
            match KeysFile::parse(&text) {
                Err(KeysFileError::Line { line: 2, error }) => assert_eq!(error, expected, "{line}"),
                other => panic!("{line}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_key_pasted_as_it_is_gets_the_command_that_adds_one_and_is_never_echoed() {
        let raw = "mcp_4f0c9e1d2b3a49586776a5b4c3d2e1f00112233445566778899aabbccddeeff";
        for line in [format!("leitor leitura {raw}"), raw.to_owned()] {
            let error = KeysFile::parse(&format!("{line}\n")).expect_err("not a key's line").to_string();
            assert!(error.starts_with("line 1: "), "{error}");
            assert!(error.contains("mcp-cursos-backend keys create --name <name> --scope leitura|escrita"), "{error}");
            assert!(error.contains("never the key itself"), "{error}");
            assert!(!error.contains(raw), "the key is never echoed: {error}");
        }
    }

    #[test]
    fn a_repeated_name_or_key_is_refused() {
        let text = format!("a leitura {}\na escrita {}\n", hash_text("1"), hash_text("2"));
        assert!(matches!(
            KeysFile::parse(&text),
            Err(KeysFileError::Line { line: 2, error: LineError::DuplicateName(_) })
        ));
        let text = format!("a leitura {}\nb escrita {}\n", hash_text("1"), hash_text("1"));
        assert!(matches!(
            KeysFile::parse(&text),
            Err(KeysFileError::Line { line: 2, error: LineError::DuplicateKey(_) })
        ));
    }

    #[test]
    fn an_error_message_never_quotes_the_hash() {
        let hash = hash_text("chave");
        let error = KeysFile::parse(&format!("leitor admin {hash}")).expect_err("bad scope");
        assert!(!error.to_string().contains(&hash[7..]), "{error}");
    }

    #[test]
    fn create_appends_a_hash_and_returns_a_key_that_is_stored_nowhere() {
        let folder = tempfile::tempdir().expect("temp dir");
        let path = folder.path().join("keys");
        let first = create_key(&path, &name("leitor"), Scope::Read).expect("created");
        let second = create_key(&path, &name("ci"), Scope::Write).expect("created");
        let text = std::fs::read_to_string(&path).expect("file");
        assert!(text.starts_with("# mcp-cursos API keys"), "{text}");
        assert!(!text.contains(first.expose()) && !text.contains(second.expose()), "{text}");
        let keys = KeysFile::read(&path).expect("valid");
        assert_eq!(keys.entries().len(), 2);
        assert!(keys.entries()[0].hash.matches(&KeyHash::of(first.expose().as_bytes())));
        assert_eq!(keys.entries()[1].scope, Scope::Write);
        let mut leftovers: Vec<String> = std::fs::read_dir(folder.path())
            .expect("dir")
            .map(|entry| entry.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        leftovers.sort();
        assert_eq!(leftovers, [".keys.lock", "keys"], "no temporary file left behind, only the lock");
    }

    /// Without the lock, two commands at once could each rewrite the file from what they read,
    /// and one change would be lost.
    #[test]
    fn commands_run_at_once_take_turns_and_lose_no_change() {
        const THREADS: usize = 16;
        let folder = tempfile::tempdir().expect("temp dir");
        let path = folder.path().join("keys");
        for number in 0..THREADS {
            create_key(&path, &name(&format!("velha-{number}")), Scope::Read).expect("created");
        }
        let barrier = std::sync::Barrier::new(THREADS);
        std::thread::scope(|scope| {
            for number in 0..THREADS {
                let (path, barrier) = (&path, &barrier);
                scope.spawn(move || {
                    barrier.wait();
                    create_key(path, &name(&format!("nova-{number}")), Scope::Write).expect("created");
                    revoke_key(path, &name(&format!("velha-{number}"))).expect("revoked");
                });
            }
        });
        let keys = KeysFile::read(&path).expect("valid");
        let mut names: Vec<String> = keys.entries().iter().map(|entry| entry.name.to_string()).collect();
        names.sort();
        let mut expected: Vec<String> = (0..THREADS).map(|number| format!("nova-{number}")).collect();
        expected.sort();
        assert_eq!(names, expected, "every create and every revoke took effect");
    }

    #[test]
    fn create_refuses_a_taken_name_and_a_malformed_file_without_touching_it() {
        let folder = tempfile::tempdir().expect("temp dir");
        let path = folder.path().join("keys");
        create_key(&path, &name("leitor"), Scope::Read).expect("created");
        let before = std::fs::read_to_string(&path).expect("file");
        assert!(matches!(create_key(&path, &name("leitor"), Scope::Write), Err(KeyCommandError::DuplicateName(_))));
        assert_eq!(std::fs::read_to_string(&path).expect("file"), before);

        std::fs::write(&path, "meio-escrit").expect("write");
        assert!(matches!(create_key(&path, &name("outro"), Scope::Read), Err(KeyCommandError::File(_))));
        assert_eq!(std::fs::read_to_string(&path).expect("file"), "meio-escrit");
    }

    #[test]
    fn revoke_removes_only_that_key_and_keeps_comments() {
        let folder = tempfile::tempdir().expect("temp dir");
        let path = folder.path().join("keys");
        create_key(&path, &name("leitor"), Scope::Read).expect("created");
        let kept = create_key(&path, &name("ci"), Scope::Write).expect("created");
        std::fs::write(&path, format!("{}# nota do operador\n", std::fs::read_to_string(&path).expect("file")))
            .expect("append a comment");
        revoke_key(&path, &name("leitor")).expect("revoked");
        let text = std::fs::read_to_string(&path).expect("file");
        assert!(text.contains("# nota do operador") && !text.contains("leitor "), "{text}");
        let keys = KeysFile::read(&path).expect("valid");
        assert_eq!(keys.entries().len(), 1);
        assert!(keys.entries()[0].hash.matches(&KeyHash::of(kept.expose().as_bytes())));
        assert!(matches!(revoke_key(&path, &name("leitor")), Err(KeyCommandError::UnknownName(_))));
    }

    fn file_names_in(folder: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(folder)
            .expect("dir")
            .map(|entry| entry.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    /// A command killed between writing its temporary file and renaming it leaves the file behind;
    /// the next command, holding the lock, knows nobody else is writing one.
    #[test]
    fn temporary_files_an_interrupted_command_left_are_removed_by_the_next_command() {
        let folder = tempfile::tempdir().expect("temp dir");
        let path = folder.path().join("keys");
        create_key(&path, &name("leitor"), Scope::Read).expect("created");
        for stale in [".keys.tmp-4242", ".keys.tmp-1"] {
            std::fs::write(folder.path().join(stale), "leitor leitura sha256:meio").expect("plant");
        }
        std::fs::write(folder.path().join(".outro.tmp-4242"), "another file's").expect("plant");
        create_key(&path, &name("ci"), Scope::Write).expect("created");
        assert_eq!(file_names_in(folder.path()), [".keys.lock", ".outro.tmp-4242", "keys"]);

        std::fs::write(folder.path().join(".keys.tmp-77"), "").expect("plant");
        revoke_key(&path, &name("ci")).expect("revoked");
        assert_eq!(file_names_in(folder.path()), [".keys.lock", ".outro.tmp-4242", "keys"]);
        assert_eq!(KeysFile::read(&path).expect("valid").entries().len(), 1);
    }

    #[test]
    fn the_key_is_shown_before_it_takes_effect() {
        let folder = tempfile::tempdir().expect("temp dir");
        let path = folder.path().join("keys");
        create_key(&path, &name("leitor"), Scope::Read).expect("created");
        let mut shown = None;
        create_key_and_show(&path, &name("ci"), Scope::Write, &CatalogName::default_catalog(), |key| {
            let in_force = KeysFile::read(&path).expect("valid");
            assert!(
                !in_force.entries().iter().any(|entry| entry.hash.matches(&KeyHash::of(key.expose().as_bytes()))),
                "the key took effect before it was shown"
            );
            shown = Some(key.clone());
            Ok(())
        })
        .expect("created");
        let shown = shown.expect("shown");
        let keys = KeysFile::read(&path).expect("valid");
        assert!(keys.entries().iter().any(|entry| entry.hash.matches(&KeyHash::of(shown.expose().as_bytes()))));
    }

    #[test]
    fn a_key_that_cannot_be_shown_is_not_added_and_leaves_nothing_behind() {
        let folder = tempfile::tempdir().expect("temp dir");
        let path = folder.path().join("keys");
        create_key(&path, &name("leitor"), Scope::Read).expect("created");
        let before = std::fs::read_to_string(&path).expect("file");
        let refused = create_key_and_show(&path, &name("ci"), Scope::Write, &CatalogName::default_catalog(), |_| {
            Err(std::io::ErrorKind::BrokenPipe.into())
        });
        assert!(matches!(refused, Err(KeyCommandError::Show(_))), "{refused:?}");
        assert_eq!(std::fs::read_to_string(&path).expect("file"), before);
        assert_eq!(file_names_in(folder.path()), [".keys.lock", "keys"]);
    }

    #[cfg(unix)]
    #[test]
    fn rewriting_keeps_the_file_permissions() {
        use std::os::unix::fs::PermissionsExt;
        let folder = tempfile::tempdir().expect("temp dir");
        let path = folder.path().join("keys");
        create_key(&path, &name("leitor"), Scope::Read).expect("created");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        create_key(&path, &name("ci"), Scope::Write).expect("created");
        let mode = std::fs::metadata(&path).expect("metadata").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}
