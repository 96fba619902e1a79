//! The log directory: one log file per call, total size and count capped,
//! oldest removed first; and the output files of background jobs.
//!
//! It is private to the user (0700, verified before use: ours, not a
//! symlink) and its files are created 0600 with `O_EXCL | O_NOFOLLOW`, so no
//! other user can read the output or plant the log the model is told to
//! read. The caps hold across processes: every so often, under a lock on
//! the directory, the oldest files of every bashtool process are removed
//! (logs beyond the count and size caps, and any log or job output older
//! than a week), except those written in the last minute (a call of another
//! process may still be writing it).
//!
//! A log that cannot be created or written never fails a call: the call
//! runs without one and says so.

use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use crate::state_dir::ensure_private_dir;

/// Every this many new files, the directory is pruned across processes...
const PRUNE_EVERY: u64 = 32;
/// ...but not again within this time: a scan stats every file, and a busy
/// server (hundreds of calls a second, each file kept for [`IN_USE`])
/// would scan thousands of files every 32 calls (measured: ~20 `stat`s a
/// call in `bashtool mcp --stateless`, the most of its system calls). An
/// agent's calls, seconds apart, take longer than this for 32 files.
const PRUNE_INTERVAL: Duration = Duration::from_secs(10);
/// Files written more recently than this may be in use by another process.
const IN_USE: Duration = Duration::from_secs(60);
/// Logs and job outputs older than this are removed whatever the caps.
const MAX_AGE: Duration = Duration::from_secs(7 * 24 * 3600);

/// Buffer of the log writer: few syscalls for chatty commands.
const LOG_BUFFER: usize = 256 * 1024;
/// Longest part of the command used in a file name.
const MAX_SLUG_CHARS: usize = 40;

#[derive(Debug)]
struct Record {
    path: PathBuf,
    size: Arc<AtomicU64>,
    open: Arc<AtomicBool>,
}

#[derive(Debug, Default)]
struct State {
    sequence: u64,
    logs: VecDeque<Record>,
    /// When this process last scanned the directory.
    directory_pruned: Option<Instant>,
}

impl State {
    /// Whether the next file should first prune the directory across
    /// processes (and, if so, notes that it does now).
    fn claim_directory_prune(&mut self) -> bool {
        let due = self.sequence.is_multiple_of(PRUNE_EVERY)
            && self
                .directory_pruned
                .is_none_or(|at| at.elapsed() >= PRUNE_INTERVAL);
        if due {
            self.directory_pruned = Some(Instant::now());
        }
        due
    }
}

/// The log directory of one environment.
#[derive(Debug)]
pub struct LogDir {
    dir: PathBuf,
    max_files: usize,
    max_bytes: u64,
    /// Cap of one log file.
    max_file_bytes: u64,
    state: Mutex<State>,
    /// The directory was created or verified (once), or why it is unusable.
    ready: OnceLock<Result<(), String>>,
}

/// A log file being written: a buffered writer that stops at the size cap.
#[derive(Debug)]
pub struct LogWriter {
    file: BufWriter<File>,
    written: Arc<AtomicU64>,
    limit: u64,
    truncated: Arc<AtomicBool>,
    open: Arc<AtomicBool>,
}

/// What the caller keeps of a log after handing its writer to the buffer.
#[derive(Debug, Clone)]
pub struct LogHandle {
    pub path: PathBuf,
    written: Arc<AtomicU64>,
    truncated: Arc<AtomicBool>,
    limit: u64,
}

impl LogHandle {
    /// The note to give the model when the log was cut at the cap.
    pub fn truncation_note(&self) -> Option<String> {
        self.truncated.load(Ordering::Relaxed).then(|| {
            format!(
                "the log file stops at {} bytes, its size cap; the rest of the output was not logged",
                self.limit
            )
        })
    }

    pub fn bytes_written(&self) -> u64 {
        self.written.load(Ordering::Relaxed)
    }
}

impl Write for LogWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        if self.truncated.load(Ordering::Relaxed) {
            // Swallow: the output buffer goes on counting lines for the model.
            return Ok(bytes.len());
        }
        let written = self.written.load(Ordering::Relaxed);
        let room = self.limit.saturating_sub(written);
        if (bytes.len() as u64) > room {
            let fits = usize::try_from(room).unwrap_or(usize::MAX);
            self.file.write_all(&bytes[..fits])?;
            let marker = format!(
                "\n[log truncated: the log size cap of {} bytes was reached]\n",
                self.limit
            );
            self.file.write_all(marker.as_bytes())?;
            self.written
                .store(written + room + marker.len() as u64, Ordering::Relaxed);
            self.truncated.store(true, Ordering::Relaxed);
            return Ok(bytes.len());
        }
        self.file.write_all(bytes)?;
        self.written
            .store(written + bytes.len() as u64, Ordering::Relaxed);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

impl Drop for LogWriter {
    fn drop(&mut self) {
        let _ = self.file.flush();
        self.open.store(false, Ordering::Relaxed);
    }
}

/// A short, file-name-safe version of the command (`cargo-test`).
fn slug(command: &str) -> String {
    let mut slug = String::new();
    for character in command.chars() {
        if slug.chars().count() >= MAX_SLUG_CHARS {
            break;
        }
        if character.is_ascii_alphanumeric() || character == '_' {
            slug.push(character);
        } else if !slug.is_empty() && !slug.ends_with('-') {
            slug.push('-');
        }
    }
    let slug = slug.trim_end_matches('-');
    if slug.is_empty() {
        "command".to_owned()
    } else {
        slug.to_owned()
    }
}

impl LogDir {
    /// The log directory `dir`, with caps on the number and total size of
    /// its files (each log is also capped at `max_bytes`).
    pub fn new(dir: PathBuf, max_files: usize, max_bytes: u64) -> Self {
        Self::with_file_cap(dir, max_files, max_bytes, max_bytes)
    }

    /// As [`LogDir::new`], with a cap of its own for one log file.
    pub fn with_file_cap(
        dir: PathBuf,
        max_files: usize,
        max_bytes: u64,
        max_file_bytes: u64,
    ) -> Self {
        Self {
            dir,
            max_files: max_files.max(1),
            max_bytes,
            max_file_bytes: max_file_bytes.min(max_bytes),
            state: Mutex::new(State::default()),
            ready: OnceLock::new(),
        }
    }

    /// A log directory that cannot be used (no per-user state directory):
    /// calls run without logs and say why.
    pub fn unavailable(reason: String) -> Self {
        let logs = Self::new(PathBuf::new(), 1, 0);
        let _ = logs.ready.set(Err(reason));
        logs
    }

    pub fn path(&self) -> &Path {
        &self.dir
    }

    fn next_path(
        &self,
        state: &mut State,
        prefix: &str,
        command: &str,
        extension: &str,
    ) -> PathBuf {
        state.sequence += 1;
        self.dir.join(format!(
            "{prefix}{:05}-{}.{extension}",
            state.sequence,
            slug(command)
        ))
    }

    /// Creates or verifies the directory, once.
    fn ensure_ready(&self) -> std::io::Result<()> {
        let ready = self.ready.get_or_init(|| {
            ensure_private_dir(&self.dir).map_err(|error| {
                format!(
                    "the log directory {} is unusable: {error}",
                    self.dir.display()
                )
            })
        });
        ready.clone().map_err(std::io::Error::other)
    }

    fn create_new(&self, path: &Path) -> std::io::Result<File> {
        self.ensure_ready()?;
        // Private, new (never an existing file another user planted), and
        // never through a symlink.
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path)
    }

    /// Removes, across processes, the oldest files beyond the caps and the
    /// files older than [`MAX_AGE`]. Best effort: a failure changes nothing.
    fn prune_directory(&self) {
        let Ok(lock_file) = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(self.dir.join(".lock"))
        else {
            return;
        };
        let Ok(_lock) = nix::fcntl::Flock::lock(lock_file, nix::fcntl::FlockArg::LockExclusive)
        else {
            return;
        };
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let now = SystemTime::now();
        let mut logs: Vec<(SystemTime, u64, PathBuf)> = Vec::new();
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let is_log = name.ends_with(".log");
            let is_job = name.starts_with("job-") && name.ends_with(".out");
            let Ok(metadata) = entry.metadata() else {
                continue;
            };
            if !(is_log || is_job) || !metadata.is_file() {
                continue;
            }
            let modified = metadata.modified().unwrap_or(now);
            let age = now.duration_since(modified).unwrap_or_default();
            if age > MAX_AGE {
                let _ = std::fs::remove_file(&path);
            } else if is_log {
                logs.push((modified, metadata.len(), path));
            }
        }
        logs.sort();
        let mut count = logs.len();
        let mut total: u64 = logs.iter().map(|(_, size, _)| size).sum();
        for (modified, size, path) in logs {
            if count <= self.max_files && total <= self.max_bytes {
                break;
            }
            if now.duration_since(modified).unwrap_or_default() < IN_USE {
                // Possibly still being written by a running call: only
                // files older than this go; the newest are the ones to keep.
                break;
            }
            if std::fs::remove_file(&path).is_ok() {
                count -= 1;
                total -= size;
            }
        }
    }

    /// Creates the log file of a new call, removing the oldest logs first
    /// when over the caps.
    pub fn create_log(&self, command: &str) -> std::io::Result<(LogWriter, LogHandle)> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        self.prune(&mut state);
        if state.claim_directory_prune() && self.ensure_ready().is_ok() {
            // Other processes' logs count toward the caps too.
            self.prune_directory();
        }
        let (path, file) = loop {
            let path = self.next_path(&mut state, "", command, "log");
            match self.create_new(&path) {
                Ok(file) => break (path, file),
                // Another process shares this directory: take the next number.
                Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(error) => return Err(error),
            }
        };
        let written = Arc::new(AtomicU64::new(0));
        let truncated = Arc::new(AtomicBool::new(false));
        let open = Arc::new(AtomicBool::new(true));
        state.logs.push_back(Record {
            path: path.clone(),
            size: Arc::clone(&written),
            open: Arc::clone(&open),
        });
        let writer = LogWriter {
            file: BufWriter::with_capacity(LOG_BUFFER, file),
            written: Arc::clone(&written),
            limit: self.max_file_bytes,
            truncated: Arc::clone(&truncated),
            open,
        };
        let handle = LogHandle {
            path,
            written,
            truncated,
            limit: self.max_file_bytes,
        };
        Ok((writer, handle))
    }

    /// Creates the output file of a background job. Job files are not
    /// rotated: a running job must keep its file.
    pub fn create_job_output(&self, command: &str) -> std::io::Result<(PathBuf, File)> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.claim_directory_prune() && self.ensure_ready().is_ok() {
            self.prune_directory();
        }
        loop {
            let path = self.next_path(&mut state, "job-", command, "out");
            match self.create_new(&path) {
                Ok(file) => return Ok((path, file)),
                Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(error) => return Err(error),
            }
        }
    }

    /// Forgets a log that could not be completed (and removes its file).
    pub fn discard(&self, path: &Path) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.logs.retain(|record| record.path != path);
        let _ = std::fs::remove_file(path);
    }

    /// Removes the oldest closed logs until one more fits in the caps.
    fn prune(&self, state: &mut State) {
        let mut total: u64 = state
            .logs
            .iter()
            .map(|record| record.size.load(Ordering::Relaxed))
            .sum();
        let mut count = state.logs.len();
        let mut index = 0;
        while (count >= self.max_files || total >= self.max_bytes) && index < state.logs.len() {
            if state.logs[index].open.load(Ordering::Relaxed) {
                // Still being written by a running call: keep it.
                index += 1;
                continue;
            }
            if let Some(record) = state.logs.remove(index) {
                let _ = std::fs::remove_file(&record.path);
                total -= record.size.load(Ordering::Relaxed);
                count -= 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_short_and_safe() {
        assert_eq!(slug("cargo test --workspace"), "cargo-test-workspace");
        assert_eq!(slug("../../etc/passwd"), "etc-passwd");
        assert_eq!(slug("   "), "command");
        assert_eq!(slug(&"x".repeat(100)).len(), MAX_SLUG_CHARS);
    }

    #[test]
    fn caps_the_number_of_logs_removing_the_oldest() {
        let temp = tempfile::tempdir().expect("tempdir");
        let logs = LogDir::new(temp.path().join("logs"), 2, u64::MAX);
        let mut paths = Vec::new();
        for command in ["one", "two", "three"] {
            let (mut writer, handle) = logs.create_log(command).expect("log");
            writer.write_all(b"x").expect("write");
            drop(writer);
            paths.push(handle.path);
        }
        assert!(!paths[0].exists());
        assert!(paths[1].exists() && paths[2].exists());
    }

    #[test]
    fn the_directory_is_scanned_at_the_first_file_then_not_again_within_the_interval() {
        let temp = tempfile::tempdir().expect("tempdir");
        let dir = temp.path().join("logs");
        std::fs::create_dir(&dir).expect("mkdir");
        std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .expect("chmod");
        // Another process's logs, older than MAX_AGE: a scan removes them.
        let plant_stale = |name: &str| {
            let path = dir.join(name);
            let file = std::fs::File::create(&path).expect("create");
            let old = SystemTime::now() - MAX_AGE - Duration::from_secs(60);
            file.set_modified(old).expect("set mtime");
            path
        };
        let before = plant_stale("00001-from-another-process.log");
        let logs = LogDir::new(dir.clone(), 1000, u64::MAX);
        let write_one = || {
            let (mut writer, _handle) = logs.create_log("x").expect("log");
            writer.write_all(b"x").expect("write");
        };
        write_one();
        assert!(!before.exists(), "the first file scans the directory");
        let after = plant_stale("00002-from-another-process.log");
        for _ in 0..2 * PRUNE_EVERY {
            write_one();
        }
        assert!(
            after.exists(),
            "no second scan within {PRUNE_INTERVAL:?}, however many files"
        );
    }

    #[test]
    fn cuts_a_log_at_the_byte_cap() {
        let temp = tempfile::tempdir().expect("tempdir");
        let logs = LogDir::new(temp.path().to_path_buf(), 10, 10);
        let (mut writer, handle) = logs.create_log("big").expect("log");
        writer.write_all(b"0123456").expect("write");
        writer.write_all(b"789abcdef").expect("write");
        writer.write_all(b"more").expect("write");
        drop(writer);
        let text = std::fs::read_to_string(&handle.path).expect("read");
        assert_eq!(
            text,
            "0123456789\n[log truncated: the log size cap of 10 bytes was reached]\n"
        );
        assert!(handle.truncation_note().is_some());
    }
}
