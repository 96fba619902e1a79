//! Job records on disk, so that another process (`bashtool jobs`, the next
//! `bashtool call`) can list, read, wait on and stop the background jobs a
//! process started.
//!
//! A job's live state belongs to the process that started it; what another
//! process can know is its pid, the start time of that pid (so a reused pid
//! is never taken for the job), and its output file, to which the job's
//! supervisor appends how it ended.

use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bashtool_core::{JobInfo, JobState};
use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::jobs::supervisor::parse_final_line;
use crate::state_dir::ensure_private_dir;
use bashtool_process::process_info;

/// How long a change of the records waits for their lock. Another
/// bashtool holds it for the few milliseconds of a change; a process that
/// holds it longer (a command that locked the file to stall us) gets the
/// change refused, with an error, instead of a call that hangs.
const RECORDS_LOCK_WAIT: Duration = Duration::from_secs(2);
/// The longest pause between two tries of a busy lock.
const LOCK_RETRY: Duration = Duration::from_millis(50);

/// An exclusive `flock` on `file`, tried until `wait` has passed. `flock`
/// has no timed form (and a blocking one could wait forever in a thread we
/// cannot stop), so it is tried, with pauses that grow to [`LOCK_RETRY`].
/// Callers run it off the async workers.
pub(crate) fn lock_within(
    file: std::fs::File,
    wait: Duration,
) -> std::io::Result<nix::fcntl::Flock<std::fs::File>> {
    let deadline = std::time::Instant::now() + wait;
    let mut pause = Duration::from_millis(1);
    let mut file = file;
    loop {
        match nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock) {
            Ok(lock) => return Ok(lock),
            Err((back, nix::errno::Errno::EWOULDBLOCK)) if std::time::Instant::now() < deadline => {
                file = back;
                std::thread::sleep(pause);
                pause = (pause * 2).min(LOCK_RETRY);
            }
            Err((_, nix::errno::Errno::EWOULDBLOCK)) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::WouldBlock,
                    format!(
                        "another process has held this lock for more than {}s, so nothing was changed",
                        wait.as_secs()
                    ),
                ));
            }
            Err((_, errno)) => return Err(errno.into()),
        }
    }
}

/// Ended jobs older than this are forgotten.
const FORGET_AFTER: Duration = Duration::from_secs(7 * 24 * 3600);
/// How much of the end of an output file is read for its final line.
const FINAL_LINE_WINDOW: u64 = 4096;

/// What is kept about one job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobRecord {
    pub id: String,
    pub pid: u32,
    pub command: String,
    pub output_file: PathBuf,
    #[serde(default)]
    pub working_directory: Option<String>,
    pub started_unix_ms: u64,
    /// Start time of `pid` in clock ticks since boot (`/proc/<pid>/stat`).
    pub start_ticks: Option<u64>,
    /// The process that started the job.
    pub owner: u32,
    /// Where the marker of a capped output would start (see `copier`).
    #[serde(default)]
    pub output_head: Option<u64>,
    /// The pid namespace of `pid` (the inode of the starter's
    /// `/proc/self/ns/pid`): from another one (inside a sandbox), the pid
    /// names another process or none.
    #[serde(default)]
    pub pid_namespace: Option<u64>,
}

impl JobRecord {
    /// A record for a job that was just started by this process.
    pub fn new(
        id: &str,
        pid: u32,
        command: &str,
        output_file: PathBuf,
        cwd: Option<String>,
        output_head: Option<u64>,
    ) -> Self {
        Self {
            id: id.to_owned(),
            pid,
            command: command.to_owned(),
            output_file,
            working_directory: cwd,
            started_unix_ms: now_unix_ms(),
            start_ticks: process_info(pid).map(|info| info.start_time),
            owner: std::process::id(),
            output_head,
            pid_namespace: pid_namespace(),
        }
    }

    /// Why this process cannot act on the job's pid, if it cannot: the job
    /// was started in another pid namespace (this process runs inside a
    /// sandbox, or the job inside one).
    pub fn foreign(&self) -> Option<String> {
        let (theirs, ours) = (self.pid_namespace?, pid_namespace()?);
        (theirs != ours).then(|| {
            format!(
                "job `{}` runs in another process namespace than this one (outside the sandbox this runs in, or inside one): its pid {} means nothing here, so it can be neither stopped nor watched from here; stop it from where it was started",
                self.id, self.pid
            )
        })
    }

    /// True while the job's process exists (and is the job, not a reused pid).
    pub fn is_running(&self) -> bool {
        process_info(self.pid).is_some_and(|info| {
            !info.zombie
                && self
                    .start_ticks
                    .is_none_or(|ticks| ticks == info.start_time)
        })
    }

    /// The job as the jobs port reports it.
    pub fn info(&self) -> JobInfo {
        let running = self.is_running();
        let ending = if running {
            None
        } else {
            read_end(&self.output_file).and_then(|tail| parse_final_line(&tail))
        };
        let (state, exit_code, signal) = match (running, ending) {
            (true, _) => (JobState::Running, None, None),
            (false, Some((Some(code), _))) => (JobState::Exited, Some(code), None),
            (false, Some((None, Some(signal)))) => (JobState::Signaled, None, Some(signal)),
            (false, _) => (JobState::Ended, None, None),
        };
        JobInfo {
            id: self.id.clone(),
            command: self.command.clone(),
            state,
            exit_code,
            signal,
            runtime_ms: if running {
                now_unix_ms().saturating_sub(self.started_unix_ms)
            } else {
                // The supervisor appends the final line when the job ends:
                // the output file's last change is the end.
                modified_unix_ms(&self.output_file)
                    .map_or(0, |ended| ended.saturating_sub(self.started_unix_ms))
            },
            pid: Some(self.pid),
            output_file: Some(self.output_file.display().to_string()),
            interactive: false,
        }
    }
}

/// The last few KiB of a job's output file (where its final line is).
pub(crate) fn read_end(path: &Path) -> Option<String> {
    use std::io::{Read as _, Seek as _, SeekFrom};
    let mut file = std::fs::File::open(path).ok()?;
    let length = file.metadata().ok()?.len();
    file.seek(SeekFrom::Start(length.saturating_sub(FINAL_LINE_WINDOW)))
        .ok()?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// When `path` was last changed, in milliseconds since the epoch.
fn modified_unix_ms(path: &Path) -> Option<u64> {
    let modified = std::fs::metadata(path).ok()?.modified().ok()?;
    modified
        .duration_since(UNIX_EPOCH)
        .ok()
        .map(|elapsed| elapsed.as_millis() as u64)
}

/// The inode of this process's pid namespace.
fn pid_namespace() -> Option<u64> {
    use std::os::unix::fs::MetadataExt as _;
    std::fs::metadata("/proc/self/ns/pid")
        .ok()
        .map(|metadata| metadata.ino())
}

pub(crate) fn now_unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_millis() as u64)
}

/// The file of job records (`jobs.json` in the state directory).
#[derive(Debug, Clone)]
pub struct JobStore {
    dir: PathBuf,
}

impl JobStore {
    /// The records in `dir` (created 0700 when first written).
    pub fn new(dir: PathBuf) -> Self {
        Self { dir }
    }

    /// The directory of the records.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self) -> PathBuf {
        self.dir.join("jobs.json")
    }

    fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
        move |source| Error::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    /// Every recorded job, oldest first.
    pub fn load(&self) -> Result<Vec<JobRecord>, Error> {
        let path = self.path();
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|error| Error::Io {
                path: path.clone(),
                source: std::io::Error::new(std::io::ErrorKind::InvalidData, error),
            }),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(error) => Err(Self::io_error(&path)(error)),
        }
    }

    /// Changes the records under an exclusive lock, so that two processes
    /// adding jobs at once do not lose one.
    fn update(&self, change: impl FnOnce(&mut Vec<JobRecord>)) -> Result<(), Error> {
        ensure_private_dir(&self.dir).map_err(Self::io_error(&self.dir))?;
        let lock_path = self.dir.join("jobs.lock");
        let lock_file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&lock_path)
            .map_err(Self::io_error(&lock_path))?;
        let _lock =
            lock_within(lock_file, RECORDS_LOCK_WAIT).map_err(Self::io_error(&lock_path))?;
        let mut records = self.load()?;
        change(&mut records);
        let forget_before = now_unix_ms().saturating_sub(FORGET_AFTER.as_millis() as u64);
        records.retain(|record| record.started_unix_ms >= forget_before || record.is_running());
        // A private temp file renamed over the records: a reader never sees
        // half a file, and nobody else can have planted the temp file.
        let mut file = tempfile::Builder::new()
            .prefix(".jobs.json.")
            .tempfile_in(&self.dir)
            .map_err(Self::io_error(&self.dir))?;
        let bytes = serde_json::to_vec_pretty(&records).map_err(|error| Error::Io {
            path: self.path(),
            source: std::io::Error::other(error),
        })?;
        file.write_all(&bytes)
            .map_err(Self::io_error(file.path()))?;
        file.persist(self.path()).map_err(|error| Error::Io {
            path: self.path(),
            source: error.error,
        })?;
        Ok(())
    }

    /// Records a job (replacing a record with the same id).
    pub fn add(&self, record: JobRecord) -> Result<(), Error> {
        self.update(|records| {
            records.retain(|existing| existing.id != record.id);
            records.push(record);
        })
    }

    /// Forgets the given jobs.
    pub fn remove(&self, ids: &[String]) -> Result<(), Error> {
        self.update(|records| records.retain(|record| !ids.contains(&record.id)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    #[test]
    fn records_survive_a_round_trip_and_replace_by_id() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = JobStore::new(dir.path().join("state"));
        let own = std::process::id();
        store
            .add(JobRecord::new(
                "j1",
                own,
                "first",
                "/tmp/a".into(),
                None,
                None,
            ))
            .expect("added");
        store
            .add(JobRecord::new(
                "j1",
                own,
                "second",
                "/tmp/b".into(),
                None,
                None,
            ))
            .expect("added");
        let records = store.load().expect("loaded");
        assert_eq!(records.len(), 1);
        assert_eq!(records[0].command, "second");
        assert!(records[0].is_running(), "this test process is running");
        let mode =
            |path: &Path| std::fs::metadata(path).expect("stat").permissions().mode() & 0o777;
        assert_eq!(mode(&dir.path().join("state")), 0o700);
        assert_eq!(mode(&dir.path().join("state/jobs.json")), 0o600);
        store.remove(&["j1".to_owned()]).expect("removed");
        assert!(store.load().expect("loaded").is_empty());
    }

    #[test]
    fn a_reused_pid_is_not_the_job() {
        let mut record = JobRecord::new("j", std::process::id(), "x", "/tmp/x".into(), None, None);
        record.start_ticks = record.start_ticks.map(|ticks| ticks + 1);
        assert!(!record.is_running());
    }

    #[test]
    fn the_ending_comes_from_the_supervisor_line() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("out");
        std::fs::write(&file, "hello\n\n[background job exited with code 3]\n").expect("written");
        let mut record = JobRecord::new("j", 1, "x", file, None, None);
        record.start_ticks = Some(u64::MAX);
        let info = record.info();
        assert_eq!((info.state, info.exit_code), (JobState::Exited, Some(3)));
    }
}
