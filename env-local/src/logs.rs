//! The log directory: one log file per call, and the output files of
//! background and interactive jobs, counted together against the caps on
//! their number and total size, oldest removed first.
//!
//! It is private to the user (0700, verified before use: ours, not a
//! symlink) and its files are created 0600 with `O_EXCL | O_NOFOLLOW`, so no
//! other user can read the output or plant the log the model is told to
//! read. The caps hold across processes: every so often, under a lock on
//! the directory, the oldest files of every bashtool process are removed
//! (beyond the count and size caps, and anything older than a week), except
//! files in use: a log or job output still being written carries an open
//! file description lock (`F_OFD_SETLK`) that another process can see, and
//! a log written in the last minute is kept as well (a bashtool without
//! those locks may share the directory).
//!
//! One file is capped too ([`CapLayout`]): past its cap it keeps the first
//! part of the output and the last part, with a marker line between them,
//! so the end of a huge output (where the error usually is) can still be
//! read with `grep` and `sed`. Logs are written by this process
//! (`log_writer`); a background job's output is written by its copier (see
//! `jobs::copier`), which rotates it through a new file.
//!
//! A log that cannot be created or written never fails a call: the call
//! runs without one and says so.

use std::collections::{HashSet, VecDeque};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use bashtool_core::CappedLog;

pub(crate) use crate::log_writer::LogWriter;

use crate::state_dir::ensure_private_dir;

/// Every this many new files, the directory is pruned across processes...
const PRUNE_EVERY: u64 = 32;
/// ...but not again within this time: a scan stats every file, and a busy
/// server (hundreds of calls a second, each file kept for [`IN_USE`])
/// would scan thousands of files every 32 calls (measured: ~20 `stat`s a
/// call in `bashtool mcp --stateless`, the most of its system calls). An
/// agent's calls, seconds apart, take longer than this for 32 files.
const PRUNE_INTERVAL: Duration = Duration::from_secs(10);
/// Logs written more recently than this may be in use by another process
/// that does not mark its files (an older bashtool).
const IN_USE: Duration = Duration::from_secs(60);
/// Logs and job outputs older than this are removed whatever the caps
/// (unless in use).
const MAX_AGE: Duration = Duration::from_secs(7 * 24 * 3600);

/// Longest part of the command used in a file name.
const MAX_SLUG_CHARS: usize = 40;
/// The smallest cap of one file: room for both parts and the marker.
pub(crate) const MIN_FILE_CAP: u64 = 4096;

/// How a file is cut at its size cap: once the output outgrows `cap`, the
/// file holds the output's first `head` bytes, a marker line, and (at
/// least) its last `tail` bytes, and never more than `cap`. The last part
/// is the bigger one: for a running server, and for the error at the end of
/// a build, the end is what matters most.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CapLayout {
    pub cap: u64,
    pub head: u64,
    pub tail: u64,
}

impl CapLayout {
    /// The layout for a cap of `cap` bytes (at least [`MIN_FILE_CAP`]).
    pub fn for_cap(cap: u64) -> Self {
        let cap = cap.max(MIN_FILE_CAP);
        Self {
            cap,
            head: cap / 8,
            tail: cap / 2,
        }
    }
}

/// `path` with `suffix` appended (`job-1.out` → `job-1.out.lock`).
pub(crate) fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// The lock file that a background job's copier holds while it writes the
/// job's output (the output itself is replaced at each rotation, so its
/// own lock would not last).
pub(crate) fn output_lock_path(output: &Path) -> PathBuf {
    with_suffix(output, ".lock")
}

/// A write lock on the whole of `file`, held by its open file description:
/// by every descriptor duplicated or inherited from it (a copier process
/// too), until the last one closes. Another process sees it with
/// [`is_in_use`].
pub(crate) fn mark_in_use(file: &File) -> std::io::Result<()> {
    let lock = whole_file_lock(libc::F_WRLCK);
    nix::fcntl::fcntl(file, nix::fcntl::FcntlArg::F_OFD_SETLK(&lock))
        .map(drop)
        .map_err(std::io::Error::from)
}

fn whole_file_lock(kind: libc::c_int) -> libc::flock {
    libc::flock {
        l_type: kind as libc::c_short,
        l_whence: libc::SEEK_SET as libc::c_short,
        l_start: 0,
        l_len: 0,
        l_pid: 0,
    }
}

/// True while a process holds the mark of [`mark_in_use`] on `path`. Only
/// asks (`F_OFD_GETLK`): it takes no lock and never waits.
pub(crate) fn is_in_use(path: &Path) -> bool {
    let Ok(file) = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
    else {
        return false;
    };
    let mut lock = whole_file_lock(libc::F_RDLCK);
    nix::fcntl::fcntl(&file, nix::fcntl::FcntlArg::F_OFD_GETLK(&mut lock)).is_ok()
        && i32::from(lock.l_type) != libc::F_UNLCK
}

/// True while a job output is being written: by an in-process writer (a
/// mark on the file) or by a background job's copier (a mark on its lock
/// file).
pub(crate) fn output_in_use(output: &Path) -> bool {
    is_in_use(output) || is_in_use(&output_lock_path(output))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A call's log (`*.log`).
    Log,
    /// A job's output (`job-*.out`).
    Output,
    /// A copier's lock file or rotation file (`job-*.out.lock`, `.part`).
    Sidecar,
}

impl Kind {
    fn of(name: &str) -> Option<Self> {
        let (stem, extension) = name.rsplit_once('.')?;
        let job = name.starts_with("job-");
        match extension {
            "log" => Some(Self::Log),
            "out" if job => Some(Self::Output),
            "lock" | "part"
                if job
                    && stem
                        .rsplit_once('.')
                        .is_some_and(|(_, inner)| inner == "out") =>
            {
                Some(Self::Sidecar)
            }
            // A finished log being put together (`log_writer`).
            "part"
                if stem
                    .rsplit_once('.')
                    .is_some_and(|(_, inner)| inner == "log") =>
            {
                Some(Self::Sidecar)
            }
            _ => None,
        }
    }
}

#[derive(Debug)]
struct Record {
    path: PathBuf,
    kind: Kind,
    /// Bytes written so far (a log); a job output's size is not followed
    /// in this process (its copier writes it) and counts as 0 here, until
    /// the next scan of the directory.
    size: Option<Arc<AtomicU64>>,
    /// A log still being written.
    open: Option<Arc<AtomicBool>>,
}

impl Record {
    fn in_use(&self) -> bool {
        match self.kind {
            Kind::Log => self
                .open
                .as_ref()
                .is_some_and(|open| open.load(Ordering::Relaxed)),
            Kind::Output | Kind::Sidecar => output_in_use(&self.path),
        }
    }

    fn size(&self) -> u64 {
        self.size
            .as_ref()
            .map_or(0, |size| size.load(Ordering::Relaxed))
    }
}

#[derive(Debug, Default)]
struct State {
    sequence: u64,
    /// This process's files, oldest first.
    files: VecDeque<Record>,
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
    /// How one file is cut at its cap.
    layout: CapLayout,
    state: Mutex<State>,
    /// The directory was created or verified (once), or why it is unusable.
    ready: OnceLock<Result<(), String>>,
}

/// A background job's output file, new and empty, and the lock file its
/// copier holds (marked in use) while it writes the output.
#[derive(Debug)]
pub(crate) struct JobOutputFile {
    pub path: PathBuf,
    pub lock: File,
    pub layout: CapLayout,
}

/// What the caller keeps of a log after handing its writer to the buffer.
#[derive(Debug, Clone)]
pub struct LogHandle {
    pub path: PathBuf,
    written: Arc<AtomicU64>,
    capped: Arc<Mutex<Option<CappedLog>>>,
}

impl LogHandle {
    /// The note to give the model when the log was cut at its cap: which
    /// lines it keeps (see [`CappedLog`]).
    pub fn truncation_note(&self) -> Option<String> {
        self.capped
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .map(|capped| capped.note())
    }

    /// The size of the log file.
    pub fn bytes_written(&self) -> u64 {
        self.written.load(Ordering::Relaxed)
    }
}

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

    /// As [`LogDir::new`], with a cap of its own for one file (a log or a
    /// job's output; at least 4 KiB).
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
            layout: CapLayout::for_cap(max_file_bytes.min(max_bytes)),
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

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// How one file of this directory is cut at its cap.
    pub(crate) fn layout(&self) -> CapLayout {
        self.layout
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
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(path)
    }

    /// A new file named `prefix<n>-<slug>.<extension>`, marked in use
    /// (see [`mark_in_use`]).
    fn create_marked(
        &self,
        state: &mut State,
        prefix: &str,
        command: &str,
        extension: &str,
    ) -> std::io::Result<(PathBuf, File)> {
        loop {
            let path = self.next_path(state, prefix, command, extension);
            match self.create_new(&path) {
                Ok(file) => {
                    if let Err(error) = mark_in_use(&file) {
                        let _ = std::fs::remove_file(&path);
                        return Err(error);
                    }
                    return Ok((path, file));
                }
                // Another process shares this directory: take the next number.
                Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(error) => return Err(error),
            }
        }
    }

    /// Prunes this process's files, and every so often the directory.
    fn prune_before_new_file(&self, state: &mut State) {
        self.prune(state);
        if state.claim_directory_prune() && self.ensure_ready().is_ok() {
            // Other processes' files count toward the caps too.
            self.prune_directory();
        }
    }

    /// Removes, across processes, the oldest logs and job outputs beyond
    /// the caps (counted together) and those older than [`MAX_AGE`], never
    /// one in use. Best effort: a failure changes nothing. If another
    /// process holds the directory's lock, it is pruning now (or a command
    /// holds the lock to stall us): this time is skipped, never waited for.
    fn prune_directory(&self) {
        let Ok(lock_file) = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(self.dir.join(".lock"))
        else {
            return;
        };
        let Ok(_lock) =
            nix::fcntl::Flock::lock(lock_file, nix::fcntl::FlockArg::LockExclusiveNonblock)
        else {
            return;
        };
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let now = SystemTime::now();
        let age = |modified: SystemTime| now.duration_since(modified).unwrap_or_default();
        let in_use = |kind: Kind, path: &Path, modified: SystemTime| match kind {
            Kind::Log => age(modified) < IN_USE || is_in_use(path),
            Kind::Output | Kind::Sidecar => output_in_use(path),
        };
        let mut files: Vec<(SystemTime, u64, PathBuf, Kind)> = Vec::new();
        let mut sidecars: Vec<PathBuf> = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(kind) = Kind::of(&name.to_string_lossy()) else {
                continue;
            };
            let Ok(metadata) = entry.metadata() else {
                continue;
            };
            if !metadata.is_file() {
                continue;
            }
            let path = entry.path();
            let modified = metadata.modified().unwrap_or(now);
            if kind == Kind::Sidecar {
                sidecars.push(path);
            } else if age(modified) > MAX_AGE && !in_use(kind, &path, modified) {
                remove_file_and_sidecars(&path);
            } else {
                files.push((modified, metadata.len(), path, kind));
            }
        }
        files.sort_by(|(one, _, first, _), (other, _, second, _)| {
            (one, first).cmp(&(other, second))
        });
        let mut count = files.len();
        let mut total: u64 = files.iter().map(|(_, size, _, _)| size).sum();
        let mut kept: HashSet<PathBuf> = HashSet::new();
        for (modified, size, path, kind) in files {
            // Room for the file about to be made, as in `prune`.
            if (count >= self.max_files || total >= self.max_bytes)
                && !in_use(kind, &path, modified)
                && remove_file_and_sidecars(&path)
            {
                count -= 1;
                total -= size;
            } else {
                kept.insert(path);
            }
        }
        // The lock and rotation files of outputs that are gone (a copier
        // that was killed leaves them).
        for sidecar in sidecars {
            let owner = sidecar.with_extension("");
            if !kept.contains(&owner) && !is_in_use(&output_lock_path(&owner)) {
                let _ = std::fs::remove_file(&sidecar);
            }
        }
    }

    /// Creates the log file of a new call, removing the oldest files first
    /// when over the caps.
    pub fn create_log(&self, command: &str) -> std::io::Result<(LogWriter, LogHandle)> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        self.prune_before_new_file(&mut state);
        let (path, file) = self.create_marked(&mut state, "", command, "log")?;
        let writer = LogWriter::new(file, path.clone(), self.layout);
        state.files.push_back(Record {
            path: path.clone(),
            kind: Kind::Log,
            size: Some(Arc::clone(&writer.written)),
            open: Some(Arc::clone(&writer.open)),
        });
        let handle = LogHandle {
            path,
            written: Arc::clone(&writer.written),
            capped: Arc::clone(&writer.capped),
        };
        Ok((writer, handle))
    }

    /// Creates the output file of an interactive job, written by this
    /// process, marked in use until the returned file is closed. Job
    /// outputs count toward the caps like logs, but one in use is never
    /// removed.
    pub fn create_job_output(&self, command: &str) -> std::io::Result<(PathBuf, File)> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        self.prune_before_new_file(&mut state);
        let (path, file) = self.create_marked(&mut state, "job-", command, "out")?;
        state.files.push_back(Record {
            path: path.clone(),
            kind: Kind::Output,
            size: None,
            open: None,
        });
        Ok((path, file))
    }

    /// Creates the output file of a background job (empty) and its lock
    /// file, marked in use: the job's copier writes the output and holds
    /// the lock (its descriptor) until the job's output ends.
    pub(crate) fn create_background_output(&self, command: &str) -> std::io::Result<JobOutputFile> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        self.prune_before_new_file(&mut state);
        // The lock first: from the moment the output exists, it is in use.
        // Either name may be taken by another process's job (an output
        // whose copier ended has no lock file any more): then the next
        // number.
        let (path, lock) = loop {
            state.sequence += 1;
            let path = self
                .dir
                .join(format!("job-{:05}-{}.out", state.sequence, slug(command)));
            let lock_path = output_lock_path(&path);
            let lock = match self.create_new(&lock_path) {
                Ok(lock) => lock,
                Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(error) => return Err(error),
            };
            let created = mark_in_use(&lock).and_then(|()| self.create_new(&path));
            match created {
                Ok(_) => break (path, lock),
                Err(error) => {
                    let _ = std::fs::remove_file(&lock_path);
                    if error.kind() != std::io::ErrorKind::AlreadyExists {
                        return Err(error);
                    }
                }
            }
        };
        state.files.push_back(Record {
            path: path.clone(),
            kind: Kind::Output,
            size: None,
            open: None,
        });
        Ok(JobOutputFile {
            path,
            lock,
            layout: self.layout,
        })
    }

    /// Forgets a file that could not be completed (and removes it).
    pub fn discard(&self, path: &Path) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.files.retain(|record| record.path != path);
        remove_file_and_sidecars(path);
    }

    /// Removes the oldest of this process's files not in use until one
    /// more fits in the caps.
    fn prune(&self, state: &mut State) {
        let mut total: u64 = state.files.iter().map(Record::size).sum();
        let mut count = state.files.len();
        let mut index = 0;
        while (count >= self.max_files || total >= self.max_bytes) && index < state.files.len() {
            if state.files[index].in_use() {
                index += 1;
                continue;
            }
            if let Some(record) = state.files.remove(index) {
                remove_file_and_sidecars(&record.path);
                total -= record.size();
                count -= 1;
            }
        }
    }
}

/// Removes a log or job output, with a job output's lock and rotation
/// files; returns whether the file itself was removed.
fn remove_file_and_sidecars(path: &Path) -> bool {
    let removed = std::fs::remove_file(path).is_ok();
    if path.extension().is_some_and(|extension| extension == "out") {
        let _ = std::fs::remove_file(output_lock_path(path));
        let _ = std::fs::remove_file(with_suffix(path, ".part"));
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

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

    /// A log of `lines` lines `line NNNN` (10 bytes each), one write
    /// each, in a directory with a file cap of [`MIN_FILE_CAP`]; its text
    /// and the note for the model.
    fn log_of_lines(lines: u32) -> (String, Option<String>) {
        let temp = tempfile::tempdir().expect("tempdir");
        let logs = LogDir::with_file_cap(temp.path().join("logs"), 10, u64::MAX, MIN_FILE_CAP);
        let (mut writer, handle) = logs.create_log("big").expect("log");
        for number in 1..=lines {
            writer
                .write_all(format!("line {number:04}\n").as_bytes())
                .expect("write");
        }
        drop(writer);
        let text = std::fs::read_to_string(&handle.path).expect("read");
        (text, handle.truncation_note())
    }

    #[test]
    fn a_log_under_its_cap_is_whole() {
        let (text, note) = log_of_lines(409);
        assert_eq!(text.len(), 4090);
        assert!(text.ends_with("line 0408\nline 0409\n"));
        assert_eq!(note, None);
    }

    #[test]
    fn a_capped_log_keeps_its_first_and_last_lines_with_a_marker_between() {
        let (text, note) = log_of_lines(1000);
        let expected_head: String = (1..=51)
            .map(|number| format!("line {number:04}\n"))
            .collect();
        let (head, rest) = text.split_at(512);
        assert_eq!(head, format!("{expected_head}li"));
        let (marker, tail) = rest.split_once("...]\n").expect("a marker");
        assert_eq!(
            marker,
            "\n[... 7.3 KiB omitted here: the output was over the log's size cap of 4.0 KiB; the next line is line 796 of the full log "
        );
        let expected_tail: String = (796..=1000)
            .map(|number| format!("line {number:04}\n"))
            .collect();
        assert_eq!(tail, expected_tail);
        assert!(text.len() <= 4096, "{}", text.len());
        assert_eq!(
            note.as_deref(),
            Some(
                "the output was over the log file's size cap of 4.0 KiB, so it keeps lines 1-52 and 796-1000 with a marker line between them: line N >= 796 is line N-742 of the file"
            )
        );
        // The note's arithmetic holds in the file.
        let file_lines: Vec<&str> = text.lines().collect();
        assert_eq!(file_lines[796 - 742 - 1], "line 0796");
        assert_eq!(file_lines[1000 - 742 - 1], "line 1000");
    }

    #[test]
    fn one_write_larger_than_the_cap_keeps_its_start_and_end() {
        let temp = tempfile::tempdir().expect("tempdir");
        let logs = LogDir::with_file_cap(temp.path().join("logs"), 10, u64::MAX, 4096);
        let (mut writer, handle) = logs.create_log("big").expect("log");
        writer.write_all(b"$ big\n").expect("write");
        let mut output = vec![b'x'; 100_000];
        output.extend_from_slice(b"\nerror: the end\n");
        writer.write_all(&output).expect("write");
        drop(writer);
        let text = std::fs::read_to_string(&handle.path).expect("read");
        assert_eq!(
            text,
            format!(
                "$ big\n{}\n[... 95.2 KiB omitted here: the output was over the log's size cap of 4.0 KiB; the next line is the end of line 2 of the full log ...]\n{}\nerror: the end\n",
                "x".repeat(506),
                "x".repeat(2032)
            )
        );
    }

    #[test]
    fn any_chunking_gives_the_same_file_with_the_start_the_end_and_true_line_numbers() {
        let temp = tempfile::tempdir().expect("tempdir");
        let logs = LogDir::with_file_cap(temp.path().join("logs"), 100, u64::MAX, 8192);
        let layout = logs.layout();
        let stream: Vec<u8> = (1..=20_000)
            .map(|number| format!("{number} {}\n", "y".repeat(number % 37)))
            .collect::<String>()
            .into_bytes();
        let mut files = std::collections::HashSet::new();
        for seed in 1..=5_u64 {
            let (mut writer, handle) = logs.create_log("chunks").expect("log");
            let mut state = seed;
            let mut at = 0;
            while at < stream.len() {
                // xorshift: chunks of 1 byte to 20 KiB, some over the cap.
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                let length = usize::try_from(state % 20_000).expect("small") + 1;
                let end = (at + length).min(stream.len());
                writer.write_all(&stream[at..end]).expect("write");
                at = end;
                assert!(handle.bytes_written() <= layout.cap);
            }
            drop(writer);
            let text = std::fs::read(&handle.path).expect("read");
            assert!(text.len() as u64 <= layout.cap);
            files.insert(text.clone());
            let head = usize::try_from(layout.head).expect("small");
            assert_eq!(text[..head], stream[..head]);
            let after_marker =
                memchr::memmem::find(&text[head..], b"...]\n").expect("marker") + head + 5;
            assert!(stream.ends_with(&text[after_marker..]));
            let note = handle.truncation_note().expect("capped");
            // "... line N >= FIRST is line N-SHIFT of the file"
            let (_, numbers) = note.rsplit_once(": line N >= ").expect("mapping");
            let (first, shift) = numbers.split_once(" is line N-").expect("shift");
            let first: usize = first.parse().expect("number");
            let shift: usize = shift
                .trim_end_matches(" of the file")
                .parse()
                .expect("number");
            let file = String::from_utf8(text).expect("UTF-8");
            let file_lines: Vec<&str> = file.lines().collect();
            let stream_text = String::from_utf8(stream.clone()).expect("UTF-8");
            let stream_lines: Vec<&str> = stream_text.lines().collect();
            for number in [first + 1, stream_lines.len()] {
                assert_eq!(file_lines[number - shift - 1], stream_lines[number - 1]);
            }
        }
        // The file depends on the output alone, not on how it was written.
        assert_eq!(files.len(), 1);
    }

    #[test]
    fn past_its_cap_a_log_being_written_says_so_and_stays_under_the_cap() {
        let temp = tempfile::tempdir().expect("tempdir");
        let logs = LogDir::with_file_cap(temp.path().join("logs"), 10, u64::MAX, 8192);
        let (mut writer, handle) = logs.create_log("wraps").expect("log");
        for number in 1..=5000 {
            writer
                .write_all(format!("line {number:05}\n").as_bytes())
                .expect("write");
            writer.flush().expect("flush");
            let size = std::fs::metadata(&handle.path).expect("log").len();
            assert!(size <= 8192, "{size} bytes after line {number}");
        }
        let running = std::fs::read_to_string(&handle.path).expect("read");
        assert!(
            running.contains(
                "until the command ends, what follows holds its latest part out of order"
            ),
            "{running}"
        );
        assert_eq!(handle.truncation_note(), None);
        drop(writer);
        let finished = std::fs::read_to_string(&handle.path).expect("read");
        assert!(!finished.contains("out of order"));
        assert!(finished.ends_with("line 04999\nline 05000\n"));
        assert_eq!(
            handle.bytes_written(),
            std::fs::metadata(&handle.path).expect("log").len()
        );
        assert!(handle.truncation_note().is_some());
        // Put together beside it, under a name that then went away.
        let names: Vec<String> = std::fs::read_dir(temp.path().join("logs"))
            .expect("dir")
            .map(|entry| {
                entry
                    .expect("entry")
                    .file_name()
                    .to_string_lossy()
                    .into_owned()
            })
            .filter(|name| !name.starts_with('.'))
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
    }

    #[test]
    fn a_background_output_takes_the_next_number_when_another_process_has_one() {
        let temp = tempfile::tempdir().expect("tempdir");
        let dir = temp.path().join("logs");
        let logs = LogDir::new(dir.clone(), 100, u64::MAX);
        logs.ensure_ready().expect("ready");
        // Another process's: an ended job's output (its lock file gone),
        // and a running one's lock file.
        std::fs::write(dir.join("job-00001-x.out"), "old").expect("write");
        let running = File::create(dir.join("job-00002-x.out.lock")).expect("create");
        mark_in_use(&running).expect("marked");
        let output = logs.create_background_output("x").expect("created");
        assert_eq!(output.path, dir.join("job-00003-x.out"));
        assert!(output_in_use(&output.path));
        assert_eq!(
            std::fs::read_to_string(dir.join("job-00001-x.out")).expect("read"),
            "old"
        );
        assert!(!dir.join("job-00001-x.out.lock").exists());
        drop(output);
        assert!(!output_in_use(&dir.join("job-00003-x.out")));
        drop(running);
    }
}
