//! [`ReloadedFile`]: a small text file an operator edits while the server runs, reread on a timer.
//!
//! Rereading a file of a few hundred bytes twice a second costs nothing, keeps file I/O off the
//! request path and, unlike comparing modification times, never misses a change made within the
//! file system's timestamp granularity. What is reread here is only text; each user (the backend's
//! keys file, the policy file of ADR 0036) parses it and decides what an unusable file means.
//!
//! Two rules keep a half-done edit out (issue 24, item 9): only a regular file is read (a FIFO,
//! a device or a folder is refused without opening it, so a reread never blocks), and a new text
//! counts only once a second read [`CONFIRM_DELAY`] later finds the same bytes (a file rewritten
//! in place, first its comment line and then its rules, is not applied in between).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

/// The largest file read: an operator's file of keys or rules (a keys file of 10,000 keys is
/// about 1 MB), never near this.
pub const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// How often a running server rereads the files an operator edits (keys, policy).
pub const RELOAD_INTERVAL: Duration = Duration::from_millis(500);

/// How long after seeing a new text the file is read again: the new text counts only if both
/// reads agree.
pub const CONFIRM_DELAY: Duration = Duration::from_millis(100);

/// A file reread by [`ReloadedFile::reread`]: its path and what was last seen there.
#[derive(Debug)]
pub struct ReloadedFile {
    path: PathBuf,
    /// The text last read, or the error last met, so each is reported once.
    last_seen: Mutex<Result<String, String>>,
    /// What happens between the two reads of a changed text: a [`CONFIRM_DELAY`] sleep (a test
    /// puts a writer there instead).
    between_reads: fn(&Path),
}

/// What [`ReloadedFile::reread`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reread {
    /// The same text (or the same error) as last time.
    Unchanged,
    /// New text.
    Changed(String),
    /// Zero bytes: what an editor's truncate-then-write shows for a moment. Keep what is in force.
    Empty,
    /// Cannot be read (or too large, or not UTF-8): the reason. Keep what is in force.
    Unreadable(String),
}

impl ReloadedFile {
    /// Reads `path` for the first time: the watcher and its first text.
    ///
    /// # Errors
    /// The [`std::io::Error`] of the read; `InvalidData` when the file is not UTF-8 or larger than
    /// [`MAX_FILE_BYTES`].
    pub fn open(path: &Path) -> std::io::Result<(Self, String)> {
        Self::open_with_pause(path, |_| std::thread::sleep(CONFIRM_DELAY))
    }

    fn open_with_pause(path: &Path, between_reads: fn(&Path)) -> std::io::Result<(Self, String)> {
        let text = read_text(path)?;
        let file = Self { path: path.to_owned(), last_seen: Mutex::new(Ok(text.clone())), between_reads };
        Ok((file, text))
    }

    /// The file's path, as given.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads the file again (blocking I/O, and a [`CONFIRM_DELAY`] sleep when it changed) and
    /// says whether it changed since the last read. A text that a second read does not confirm
    /// (the file is being written) is [`Reread::Unchanged`] this time; the next reread sees it
    /// again.
    pub fn reread(&self) -> Reread {
        let read = read_text(&self.path).map_err(|error| error.to_string());
        if *self.last_seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner) == read {
            return Reread::Unchanged;
        }
        if read.is_ok() {
            (self.between_reads)(&self.path);
            let again = read_text(&self.path).map_err(|error| error.to_string());
            if again != read {
                tracing::debug!(path = %self.path.display(), "the file changed while it was read; reading it again later");
                return Reread::Unchanged;
            }
        }
        let mut last_seen = self.last_seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if *last_seen == read {
            return Reread::Unchanged;
        }
        last_seen.clone_from(&read);
        match read {
            Ok(text) if text.is_empty() => Reread::Empty,
            Ok(text) => Reread::Changed(text),
            Err(error) => Reread::Unreadable(error),
        }
    }
}

fn read_text(path: &Path) -> std::io::Result<String> {
    // A FIFO would block the open until a writer came (and SIGTERM would wait for it), a device
    // could be read forever: only a regular file is opened.
    let not_regular =
        || std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a regular file (a FIFO, a device or a folder)");
    if !std::fs::metadata(path)?.is_file() {
        return Err(not_regular());
    }
    let file = std::fs::File::open(path)?;
    if !file.metadata()?.is_file() {
        return Err(not_regular());
    }
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("larger than {MAX_FILE_BYTES} bytes"),
        ));
    }
    String::from_utf8(bytes).map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8"))
}

/// Runs `reload` on the blocking pool every `interval` until `shutdown` is cancelled. Call it
/// from the Tokio runtime.
pub fn every(
    interval: Duration,
    shutdown: CancellationToken,
    what: &'static str,
    reload: impl Fn() + Clone + Send + Sync + 'static,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(interval);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = shutdown.cancelled() => return,
                _ = ticks.tick() => {}
            }
            if let Err(error) = tokio::task::spawn_blocking(reload.clone()).await {
                tracing::warn!(%error, file = what, "rereading a file failed");
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reread_reports_each_change_once_and_an_empty_or_missing_file_without_losing_track() {
        let folder = tempfile::tempdir().expect("temp dir");
        let path = folder.path().join("regras");
        std::fs::write(&path, "a\n").expect("write");
        let (file, text) = ReloadedFile::open(&path).expect("first read");
        assert_eq!(text, "a\n");
        assert_eq!(file.reread(), Reread::Unchanged);
        std::fs::write(&path, "b\n").expect("write");
        assert_eq!(file.reread(), Reread::Changed("b\n".to_owned()));
        assert_eq!(file.reread(), Reread::Unchanged);
        std::fs::write(&path, "").expect("truncate");
        assert_eq!(file.reread(), Reread::Empty);
        std::fs::remove_file(&path).expect("remove");
        assert!(matches!(file.reread(), Reread::Unreadable(_)));
        assert_eq!(file.reread(), Reread::Unchanged, "the same error is reported once");
        std::fs::write(&path, "b\n").expect("write");
        assert_eq!(file.reread(), Reread::Changed("b\n".to_owned()), "back after an error counts as a change");
    }

    #[test]
    fn a_fifo_or_a_folder_is_refused_at_once_without_blocking() {
        let folder = tempfile::tempdir().expect("temp dir");
        let fifo = folder.path().join("regras");
        let status = std::process::Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
        assert!(status.success());
        // Opening a FIFO for reading would block here forever: no writer ever comes.
        let error = ReloadedFile::open(&fifo).expect_err("a FIFO is not a file to read");
        assert_eq!(error.kind(), std::io::ErrorKind::InvalidInput);
        assert!(error.to_string().contains("not a regular file"), "{error}");
        assert_eq!(ReloadedFile::open(folder.path()).expect_err("a folder").kind(), std::io::ErrorKind::InvalidInput);

        let path = folder.path().join("politica");
        std::fs::write(&path, "a\n").expect("write");
        let (file, _) = ReloadedFile::open(&path).expect("first read");
        std::fs::remove_file(&path).expect("remove");
        let status = std::process::Command::new("mkfifo").arg(&path).status().expect("mkfifo");
        assert!(status.success());
        assert!(matches!(file.reread(), Reread::Unreadable(reason) if reason.contains("not a regular file")));
    }

    #[test]
    fn a_text_that_changes_between_two_reads_does_not_count_until_it_is_stable() {
        const WHOLE: &str = "# regras\ndesativar ferramenta criar_curso\nsomente-leitura\n";
        let folder = tempfile::tempdir().expect("temp dir");
        let path = folder.path().join("regras");
        std::fs::write(&path, "desativar ferramenta criar_curso\n").expect("write");
        // Rewritten in place: the comment line first, the rules while the first read is confirmed.
        let (file, _) = ReloadedFile::open_with_pause(&path, |path| {
            if std::fs::read_to_string(path).expect("read") == "# regras\n" {
                std::fs::write(path, WHOLE).expect("the rest");
            }
        })
        .expect("first read");
        std::fs::write(&path, "# regras\n").expect("the first half");
        assert_eq!(file.reread(), Reread::Unchanged, "the half-written text is not applied");
        assert_eq!(file.reread(), Reread::Changed(WHOLE.to_owned()), "the whole text, read twice, is");
        assert_eq!(file.reread(), Reread::Unchanged);
    }

    #[test]
    fn a_file_larger_than_the_bound_or_not_utf8_cannot_be_read() {
        let folder = tempfile::tempdir().expect("temp dir");
        let path = folder.path().join("regras");
        std::fs::write(&path, vec![b'#'; usize::try_from(MAX_FILE_BYTES).expect("fits") + 1]).expect("write");
        assert_eq!(ReloadedFile::open(&path).expect_err("too large").kind(), std::io::ErrorKind::InvalidData);
        std::fs::write(&path, [0xff, 0xfe]).expect("write");
        assert_eq!(ReloadedFile::open(&path).expect_err("not UTF-8").kind(), std::io::ErrorKind::InvalidData);
    }
}
