//! Job records on disk, so that `bashtool jobs` in one process can see the
//! background jobs another process started (an MCP server, `bashtool run
//! --mode background`).
//!
//! A job's live state belongs to the process that started it; what another
//! process can know is its pid, the start time of that pid (so a reused pid
//! is not taken for the job), and its output file, where the starting
//! process appends the exit status when it sees the job end.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use bashtool_env_local::process_info;
use serde::{Deserialize, Serialize};

/// Ended jobs older than this are forgotten.
const FORGET_AFTER: Duration = Duration::from_secs(7 * 24 * 3600);

/// What is kept about one job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobRecord {
    pub pid: u32,
    pub command: String,
    pub output_file: PathBuf,
    #[serde(default)]
    pub working_directory: Option<String>,
    pub started_unix_ms: u64,
    /// Start time of `pid` in clock ticks since boot (`/proc/<pid>/stat`).
    #[serde(default)]
    pub start_ticks: Option<u64>,
    /// The process that started the job.
    pub owner: u32,
}

impl JobRecord {
    /// A record for a job that was just started by this process.
    pub fn new(pid: u32, command: &str, output_file: PathBuf, cwd: Option<String>) -> Self {
        Self {
            pid,
            command: command.to_owned(),
            output_file,
            working_directory: cwd,
            started_unix_ms: now_unix_ms(),
            start_ticks: start_ticks(pid),
            owner: std::process::id(),
        }
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

    /// How the job ended, from the line its owner appended to the output file.
    pub fn ending(&self) -> Option<String> {
        let tail = read_tail(&self.output_file, 4096).ok()?;
        let last = tail.lines().rev().find(|line| !line.trim().is_empty())?;
        let inner = last.strip_prefix("[background job ")?.strip_suffix(']')?;
        Some(inner.to_owned())
    }
}

fn now_unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_millis() as u64)
}

fn start_ticks(pid: u32) -> Option<u64> {
    process_info(pid).map(|info| info.start_time)
}

/// The last `max_bytes` of a file, from a line start when possible.
pub fn read_tail(path: &Path, max_bytes: u64) -> std::io::Result<String> {
    use std::io::{Read as _, Seek as _, SeekFrom};
    let mut file = std::fs::File::open(path)?;
    let length = file.metadata()?.len();
    let start = length.saturating_sub(max_bytes);
    file.seek(SeekFrom::Start(start))?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    if start > 0
        && let Some(newline) = bytes.iter().position(|byte| *byte == b'\n')
    {
        bytes.drain(..=newline);
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// The file of job records.
#[derive(Debug, Clone)]
pub struct JobStore {
    dir: PathBuf,
}

impl JobStore {
    pub fn new(dir: PathBuf) -> Self {
        Self { dir }
    }

    /// `$BASHTOOL_STATE_DIR`, else `$XDG_STATE_HOME/bashtool`, else
    /// `~/.local/state/bashtool`, else the temp directory.
    pub fn default_dir() -> PathBuf {
        let non_empty = |name: &str| std::env::var_os(name).filter(|value| !value.is_empty());
        if let Some(dir) = non_empty("BASHTOOL_STATE_DIR") {
            return PathBuf::from(dir);
        }
        if let Some(state) = non_empty("XDG_STATE_HOME") {
            return PathBuf::from(state).join("bashtool");
        }
        if let Some(home) = non_empty("HOME") {
            return PathBuf::from(home).join(".local/state/bashtool");
        }
        std::env::temp_dir().join("bashtool-state")
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self) -> PathBuf {
        self.dir.join("jobs.json")
    }

    pub fn load(&self) -> anyhow::Result<Vec<JobRecord>> {
        let path = self.path();
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .with_context(|| format!("reading the job records in {}", path.display())),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(error) => Err(error).with_context(|| format!("reading {}", path.display())),
        }
    }

    /// Changes the records under an exclusive lock, so that two processes
    /// adding jobs at once do not lose one.
    fn update(&self, change: impl FnOnce(&mut Vec<JobRecord>)) -> anyhow::Result<()> {
        std::fs::create_dir_all(&self.dir)
            .with_context(|| format!("creating {}", self.dir.display()))?;
        let lock_path = self.dir.join("jobs.lock");
        let lock_file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .with_context(|| format!("opening {}", lock_path.display()))?;
        let _lock = nix::fcntl::Flock::lock(lock_file, nix::fcntl::FlockArg::LockExclusive)
            .map_err(|(_, errno)| errno)
            .with_context(|| format!("locking {}", lock_path.display()))?;
        let mut records = self.load()?;
        change(&mut records);
        let forget_before = now_unix_ms().saturating_sub(FORGET_AFTER.as_millis() as u64);
        records.retain(|record| record.started_unix_ms >= forget_before || record.is_running());
        // Write a temp file and rename it: a reader never sees half a file.
        let path = self.path();
        let temporary = self.dir.join(format!("jobs.json.{}", std::process::id()));
        let mut file = std::fs::File::create(&temporary)
            .with_context(|| format!("writing {}", temporary.display()))?;
        file.write_all(&serde_json::to_vec_pretty(&records)?)?;
        file.sync_all()?;
        std::fs::rename(&temporary, &path)
            .with_context(|| format!("writing {}", path.display()))?;
        Ok(())
    }

    pub fn add(&self, record: JobRecord) -> anyhow::Result<()> {
        self.update(|records| {
            records.retain(|existing| existing.pid != record.pid);
            records.push(record);
        })
    }

    /// Forgets the given jobs.
    pub fn remove(&self, pids: &[u32]) -> anyhow::Result<()> {
        self.update(|records| records.retain(|record| !pids.contains(&record.pid)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_survive_a_round_trip_and_replace_by_pid() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = JobStore::new(dir.path().join("state"));
        let own = std::process::id();
        store
            .add(JobRecord::new(own, "first", "/tmp/a".into(), None))
            .expect("added");
        store
            .add(JobRecord::new(own, "second", "/tmp/b".into(), None))
            .expect("added");
        let records = store.load().expect("loaded");
        assert_eq!(records.len(), 1);
        assert_eq!(records[0].command, "second");
        assert!(records[0].is_running(), "this test process is running");
        store.remove(&[own]).expect("removed");
        assert!(store.load().expect("loaded").is_empty());
    }

    #[test]
    fn a_reused_pid_is_not_the_job() {
        let mut record = JobRecord::new(std::process::id(), "x", "/tmp/x".into(), None);
        record.start_ticks = record.start_ticks.map(|ticks| ticks + 1);
        assert!(!record.is_running());
    }

    #[test]
    fn ending_comes_from_the_last_line_of_the_output_file() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("out");
        std::fs::write(&file, "hello\n[background job exited with code 3]\n").expect("written");
        let record = JobRecord::new(1, "x", file, None);
        assert_eq!(record.ending().as_deref(), Some("exited with code 3"));
    }
}
