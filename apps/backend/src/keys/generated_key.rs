//! The generated key's file: when no key is configured (no `API_KEY`, no `KEYS_FILE`, no OAuth),
//! the backend generates a key at its first start, prints it once, and keeps only its SHA-256 in
//! this file beside the SQLite database, so that the same key is accepted after a restart
//! (ADR 0048). Deleting the file is how the operator replaces the key: the next start makes a new one.
//!
//! ```text
//! # mcp-cursos: the SHA-256 of the API key this server generated at its first start (the key itself
//! # was printed once, then). ...
//! sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08 2026-12-04T16:50:00Z
//! ```
//!
//! One line, the hash and the instant it was made (RFC 3339, UTC); `#` starts a comment line.
//! [`create_and_show`] writes it atomically, mode 0600, and only where no file is: a file that is
//! there (valid or not) is never replaced by the server. [`read`] refuses a file that is not a
//! regular file, cannot be read, or does not parse, naming the file and what to do, and never
//! quotes what it holds.

use std::io::Write;
use std::path::{Path, PathBuf};

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::api_key::ApiKey;
use super::keys_file::KeyHash;
use crate::atomic_file;

/// The file's name, in the folder of the SQLite database.
pub const FILE_NAME: &str = "generated-key";

/// What to do about a generated key's file the server will not use, said after each refusal.
const WHAT_TO_DO: &str = "delete it and start again to generate a new key (printed once; every client then needs it), \
     or set API_KEY or KEYS_FILE (the file is then not read)";

/// Where the generated key is kept for the SQLite database at `database_path`: [`FILE_NAME`] in
/// its folder.
#[must_use]
pub fn path_beside(database_path: &Path) -> PathBuf {
    database_path.parent().filter(|folder| !folder.as_os_str().is_empty()).unwrap_or(Path::new(".")).join(FILE_NAME)
}

/// A generated key as the file keeps it: its hash and when it was made. Never the key.
#[derive(Debug, Clone)]
pub struct GeneratedKey {
    hash: KeyHash,
    created: OffsetDateTime,
}

impl GeneratedKey {
    /// The hash clients' keys are compared with.
    #[must_use]
    pub fn hash(&self) -> &KeyHash {
        &self.hash
    }

    /// When the key was generated (UTC).
    #[must_use]
    pub fn created(&self) -> OffsetDateTime {
        self.created
    }

    /// [`GeneratedKey::created`] as RFC 3339 (`2026-12-04T16:50:00Z`).
    #[must_use]
    pub fn created_text(&self) -> String {
        self.created.format(&Rfc3339).unwrap_or_else(|_| self.created.to_string())
    }

    /// Parses the file's text.
    ///
    /// # Errors
    /// [`FormatError`] for the first line that is not the key's line, a second key line, or no
    /// key line at all. Never quotes the text.
    pub fn parse(text: &str) -> Result<Self, FormatError> {
        let mut found: Option<Self> = None;
        for (index, line) in text.lines().enumerate() {
            let line_number = index + 1;
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            if found.is_some() {
                return Err(FormatError::SecondKey { line: line_number });
            }
            let fields: Vec<&str> = line.split_whitespace().collect();
            let [hash, created] = fields[..] else {
                return Err(FormatError::FieldCount { line: line_number });
            };
            let hash = KeyHash::parse(hash).ok_or(FormatError::Hash { line: line_number })?;
            let created =
                OffsetDateTime::parse(created, &Rfc3339).map_err(|_| FormatError::Date { line: line_number })?;
            found = Some(Self { hash, created: created.to_offset(time::UtcOffset::UTC) });
        }
        found.ok_or(FormatError::NoKey)
    }

    /// The file's text: the header, then the key's line.
    fn to_file_text(&self) -> String {
        format!("{HEADER}{} {}\n", self.hash.to_file_text(), self.created_text())
    }
}

/// The comment lines at the top of the file.
const HEADER: &str = "# mcp-cursos: the SHA-256 of the API key this server generated at its first start, because no\n\
     # API_KEY, KEYS_FILE or OAuth was set (the key itself was printed once, then, and is kept nowhere).\n\
     # Delete this file to replace the key: the next start generates and prints a new one.\n\
     # Setting API_KEY or KEYS_FILE makes the server ignore this file.\n";

/// What is wrong with the text of a generated key's file. Never quotes it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FormatError {
    /// Only comments and blank lines (or nothing at all).
    #[error("it holds no key line")]
    NoKey,
    /// A line that is not two fields.
    #[error("line {line}: expected `sha256:<hex> <date>`")]
    FieldCount {
        /// 1-based.
        line: usize,
    },
    /// The first field is not `sha256:` and 64 lower-case hexadecimal digits.
    #[error(
        "line {line}: the hash must be sha256: followed by 64 lower-case hexadecimal digits (the file keeps the key's SHA-256, never the key)"
    )]
    Hash {
        /// 1-based.
        line: usize,
    },
    /// The second field is not an RFC 3339 instant.
    #[error("line {line}: the date must be RFC 3339, such as 2026-12-04T16:50:00Z")]
    Date {
        /// 1-based.
        line: usize,
    },
    /// A second key line: the file holds one key.
    #[error("line {line}: a second key line (the file holds one key)")]
    SecondKey {
        /// 1-based.
        line: usize,
    },
}

/// Why the generated key's file cannot be used. Each message names the file and what to do, and
/// never quotes the file's content.
#[derive(Debug, thiserror::Error)]
pub enum GeneratedKeyError {
    /// A directory, a symbolic link, a device: not something the server wrote.
    #[error("the generated key's file {} is not a regular file (it is {kind}); nothing was changed: {WHAT_TO_DO}", path.display())]
    NotARegularFile {
        /// The file.
        path: PathBuf,
        /// What it is instead.
        kind: &'static str,
    },
    /// It is there but cannot be read.
    #[error("{cause}: cannot read the generated key's file {}; give it back to the server's user (mode 0600), or {WHAT_TO_DO}", path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// What the system said.
        cause: std::io::Error,
    },
    /// Its text is not a generated key's.
    #[error("the generated key's file {} is not valid: {error}; nothing was changed: {WHAT_TO_DO}", path.display())]
    Malformed {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        error: FormatError,
    },
    /// It could not be written.
    #[error("{cause}: cannot keep the generated key in {}; make its folder writable by the server's user, or set API_KEY or KEYS_FILE", path.display())]
    Unwritable {
        /// The file.
        path: PathBuf,
        /// What the system said.
        cause: std::io::Error,
    },
    /// No randomness for a new key.
    #[error("cannot generate an API key: {0}")]
    Random(getrandom::Error),
    /// The new key could not be printed: the file was removed again, so no key is in force that
    /// nobody saw.
    #[error("{0}: cannot print the generated key, so it was not kept")]
    Show(std::io::Error),
}

/// Reads the generated key's file at `path`: `Ok(None)` when there is none.
///
/// # Errors
/// [`GeneratedKeyError::NotARegularFile`], [`GeneratedKeyError::Unreadable`] or
/// [`GeneratedKeyError::Malformed`].
pub fn read(path: &Path) -> Result<Option<GeneratedKey>, GeneratedKeyError> {
    let unreadable = |cause| GeneratedKeyError::Unreadable { path: path.to_owned(), cause };
    let metadata = match std::fs::symlink_metadata(path) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(unreadable(error)),
    };
    let file_type = metadata.file_type();
    if !file_type.is_file() {
        let kind = if file_type.is_dir() {
            "a directory"
        } else if file_type.is_symlink() {
            "a symbolic link"
        } else {
            "neither a file nor a directory"
        };
        return Err(GeneratedKeyError::NotARegularFile { path: path.to_owned(), kind });
    }
    let bytes = std::fs::read(path).map_err(unreadable)?;
    // Not UTF-8 is not a generated key's file either; said without quoting a byte.
    let text = String::from_utf8(bytes).map_err(|_| GeneratedKeyError::Malformed {
        path: path.to_owned(),
        error: FormatError::FieldCount { line: 1 },
    })?;
    GeneratedKey::parse(&text).map(Some).map_err(|error| GeneratedKeyError::Malformed { path: path.to_owned(), error })
}

/// What [`create_and_show`] found or did.
#[derive(Debug)]
pub enum Outcome {
    /// A new key: shown, and its hash kept in the file.
    Created(GeneratedKey),
    /// A file appeared meanwhile (another process on the same folder made it): that one stands,
    /// and the key generated here was never shown.
    AlreadyThere(GeneratedKey),
}

/// Generates a key, writes its hash to `path` (a temporary file beside it, mode 0600, linked into
/// place only where nothing is), then hands the key to `show`. If `show` fails, the file is
/// removed again: a key that takes effect has been shown.
///
/// # Errors
/// [`GeneratedKeyError::Random`], [`GeneratedKeyError::Unwritable`], [`GeneratedKeyError::Show`],
/// or, when a file appeared meanwhile, the errors of [`read`] on it.
pub fn create_and_show(
    path: &Path,
    show: impl FnOnce(&ApiKey) -> std::io::Result<()>,
) -> Result<Outcome, GeneratedKeyError> {
    let key = ApiKey::generate().map_err(GeneratedKeyError::Random)?;
    let created = OffsetDateTime::now_utc().replace_nanosecond(0).unwrap_or_else(|_| OffsetDateTime::now_utc());
    let generated = GeneratedKey { hash: KeyHash::of(key.expose().as_bytes()), created };
    let unwritable = |cause| GeneratedKeyError::Unwritable { path: path.to_owned(), cause };
    let folder = path.parent().filter(|folder| !folder.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mut builder = tempfile::Builder::new();
    builder.prefix(".generated-key.tmp-");
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o600));
    let mut temporary = builder.tempfile_in(folder).map_err(unwritable)?;
    temporary.write_all(generated.to_file_text().as_bytes()).map_err(unwritable)?;
    temporary.as_file().sync_all().map_err(unwritable)?;
    match atomic_file::create_new(temporary, path) {
        Ok(()) => {}
        Err(error) if error.error.kind() == std::io::ErrorKind::AlreadyExists => {
            return match read(path)? {
                Some(there) => Ok(Outcome::AlreadyThere(there)),
                // Removed again between the two: say so rather than loop.
                None => Err(unwritable(error.error)),
            };
        }
        Err(error) => return Err(unwritable(error.error)),
    }
    if let Err(error) = show(&key) {
        let _ = std::fs::remove_file(path);
        return Err(GeneratedKeyError::Show(error));
    }
    Ok(Outcome::Created(generated))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HASH: &str = "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

    #[test]
    fn the_key_line_is_its_hash_and_the_instant_it_was_made_after_comments() {
        let text = format!("# comentário\n\n  {HASH}   2026-12-04T16:50:00Z  \n# fim\n");
        let generated = GeneratedKey::parse(&text).expect("valid");
        assert!(generated.hash().matches(&KeyHash::of(b"test")));
        assert_eq!(generated.created_text(), "2026-12-04T16:50:00Z");
    }

    #[test]
    fn an_instant_with_an_offset_is_read_as_utc() {
        let generated = GeneratedKey::parse(&format!("{HASH} 2026-12-04T13:50:00-03:00")).expect("valid");
        assert_eq!(generated.created_text(), "2026-12-04T16:50:00Z");
    }

    #[test]
    fn what_the_server_writes_it_reads_back() {
        let generated = GeneratedKey::parse(&format!("{HASH} 2026-12-04T16:50:00Z")).expect("valid");
        let text = generated.to_file_text();
        assert!(text.starts_with("# mcp-cursos: the SHA-256"), "{text}");
        let again = GeneratedKey::parse(&text).expect("round trip");
        assert!(again.hash().matches(generated.hash()));
        assert_eq!(again.created(), generated.created());
    }

    #[test]
    fn each_malformed_text_is_refused_with_its_line_and_reason() {
        let cases = [
            (String::new(), FormatError::NoKey),
            ("# só comentários\n\n".to_owned(), FormatError::NoKey),
            (HASH.to_owned(), FormatError::FieldCount { line: 1 }),
            (format!("{HASH} 2026-12-04T16:50:00Z extra"), FormatError::FieldCount { line: 1 }),
            ("# x\nsha256:abc 2026-12-04T16:50:00Z".to_owned(), FormatError::Hash { line: 2 }),
            (format!("{} 2026-12-04T16:50:00Z", HASH.to_uppercase()), FormatError::Hash { line: 1 }),
            (format!("{HASH} ontem"), FormatError::Date { line: 1 }),
            (format!("{HASH} 2026-12-04"), FormatError::Date { line: 1 }),
            (format!("{HASH} 2026-12-04T16:50:00Z\n{HASH} 2026-12-05T16:50:00Z"), FormatError::SecondKey { line: 2 }),
        ];
        for (text, expected) in cases {
            assert_eq!(GeneratedKey::parse(&text).map(|_| ()), Err(expected), "{text:?}");
        }
    }

    #[test]
    fn a_key_pasted_as_it_is_is_refused_and_never_echoed() {
        let raw = "mcp_4f0c9e1d2b3a49586776a5b4c3d2e1f00112233445566778899aabbccddeeff";
        let folder = tempfile::tempdir().expect("temp dir");
        let path = folder.path().join(FILE_NAME);
        for text in [format!("{raw}\n"), format!("{raw} 2026-12-04T16:50:00Z\n")] {
            std::fs::write(&path, &text).expect("write");
            let message = read(&path).expect_err("not a hash").to_string();
            assert!(!message.contains(raw), "the key is never echoed: {message}");
            assert!(message.contains(&path.display().to_string()), "names the file: {message}");
            assert!(message.contains("delete it") && message.contains("API_KEY or KEYS_FILE"), "{message}");
            assert_eq!(std::fs::read_to_string(&path).expect("file"), text, "nothing was changed");
        }
    }

    #[test]
    fn no_file_is_none_and_a_directory_or_a_link_is_refused() {
        let folder = tempfile::tempdir().expect("temp dir");
        let path = folder.path().join(FILE_NAME);
        assert!(read(&path).expect("no file").is_none());
        std::fs::create_dir(&path).expect("directory");
        let message = read(&path).expect_err("a directory").to_string();
        assert!(message.contains("not a regular file (it is a directory)"), "{message}");
        std::fs::remove_dir(&path).expect("remove");
        #[cfg(unix)]
        {
            let target = folder.path().join("elsewhere");
            std::fs::write(&target, format!("{HASH} 2026-12-04T16:50:00Z\n")).expect("target");
            std::os::unix::fs::symlink(&target, &path).expect("link");
            let message = read(&path).expect_err("a link").to_string();
            assert!(message.contains("a symbolic link"), "{message}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn created_it_is_the_hash_only_mode_0600_and_shown_once() {
        use std::os::unix::fs::PermissionsExt;
        let folder = tempfile::tempdir().expect("temp dir");
        let path = folder.path().join(FILE_NAME);
        let mut shown = None;
        let outcome = create_and_show(&path, |key| {
            shown = Some(key.clone());
            Ok(())
        })
        .expect("created");
        let shown = shown.expect("shown");
        let Outcome::Created(created) = outcome else { panic!("{outcome:?}") };
        assert!(created.hash().matches(&KeyHash::of(shown.expose().as_bytes())));
        let text = std::fs::read_to_string(&path).expect("file");
        assert!(!text.contains(shown.expose()), "never the key: {text}");
        assert_eq!(std::fs::metadata(&path).expect("metadata").permissions().mode() & 0o777, 0o600);
        let read_back = read(&path).expect("valid").expect("there");
        assert!(read_back.hash().matches(created.hash()));
        let names: Vec<String> = std::fs::read_dir(folder.path())
            .expect("dir")
            .map(|entry| entry.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, [FILE_NAME], "no temporary file left behind");
    }

    #[test]
    fn a_file_already_there_is_kept_and_the_new_key_never_shown() {
        let folder = tempfile::tempdir().expect("temp dir");
        let path = folder.path().join(FILE_NAME);
        let text = format!("{HASH} 2026-12-04T16:50:00Z\n");
        std::fs::write(&path, &text).expect("write");
        let outcome = create_and_show(&path, |_| panic!("not shown")).expect("read what is there");
        let Outcome::AlreadyThere(there) = outcome else { panic!("{outcome:?}") };
        assert!(there.hash().matches(&KeyHash::of(b"test")));
        assert_eq!(std::fs::read_to_string(&path).expect("file"), text);

        std::fs::write(&path, "meio-escrit").expect("write");
        assert!(matches!(create_and_show(&path, |_| panic!("not shown")), Err(GeneratedKeyError::Malformed { .. })));
        assert_eq!(std::fs::read_to_string(&path).expect("file"), "meio-escrit", "never overwritten");
    }

    #[test]
    fn a_key_that_cannot_be_shown_is_not_kept() {
        let folder = tempfile::tempdir().expect("temp dir");
        let path = folder.path().join(FILE_NAME);
        let refused = create_and_show(&path, |_| Err(std::io::ErrorKind::BrokenPipe.into()));
        assert!(matches!(refused, Err(GeneratedKeyError::Show(_))), "{refused:?}");
        assert!(!path.exists());
    }

    #[test]
    fn the_file_is_beside_the_database() {
        assert_eq!(path_beside(Path::new("/data/cursos.db")), Path::new("/data/generated-key"));
        assert_eq!(path_beside(Path::new("cursos.db")), Path::new("./generated-key"));
    }
}
