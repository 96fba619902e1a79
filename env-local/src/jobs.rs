//! Background jobs (seed 003's `mode: "background"`): detached from the
//! call, output to a file, and a table to list, read, wait for and stop them.
//!
//! Each job's root process stays our unreaped child until its waiter task
//! sees it exit, so stopping its process group is always safe. When the job
//! ends, its real exit status is appended to its output file.

use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::clean::clean_text;
use crate::error::Error;
use crate::kill::ProcessTree;
use crate::spawn::{ExitStatus, RootProcess};

/// Most bytes one [`JobTable::output`] call returns.
pub const MAX_JOB_READ: u64 = 1024 * 1024;
/// Extra time [`JobTable::stop`] allows after the grace for SIGKILL to land.
const STOP_SLACK: Duration = Duration::from_secs(2);

/// State of a background job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum JobStatus {
    Running,
    Exited { code: i32 },
    Signaled { signal: String },
}

impl JobStatus {
    pub fn is_running(&self) -> bool {
        matches!(self, Self::Running)
    }

    fn from_exit(status: ExitStatus) -> Self {
        match status {
            ExitStatus::Code(code) => Self::Exited { code },
            ExitStatus::Signal(signal) => Self::Signaled {
                signal: signal.as_str().to_owned(),
            },
            ExitStatus::Running => Self::Running,
        }
    }

    /// The line appended to the output file when the job ends.
    fn final_line(&self) -> String {
        match self {
            Self::Exited { code } => format!("[background job exited with code {code}]"),
            Self::Signaled { signal } => format!("[background job killed by signal {signal}]"),
            Self::Running => "[background job status unknown]".to_owned(),
        }
    }
}

/// What the table knows about one job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct JobInfo {
    pub pid: u32,
    pub command: String,
    pub output_file: PathBuf,
    pub status: JobStatus,
    #[serde(rename = "runtime_ms", serialize_with = "serialize_millis")]
    pub runtime: Duration,
}

fn serialize_millis<S: serde::Serializer>(
    duration: &Duration,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.serialize_u64(duration.as_millis() as u64)
}

/// Which part of a job's output to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobRead {
    /// The last `lines` lines.
    Tail { lines: usize },
    /// From a byte offset (a previous `next_offset`), up to [`MAX_JOB_READ`].
    Since { offset: u64 },
}

/// A piece of a job's output, cleaned like the model text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct JobOutput {
    pub text: String,
    /// Where the next `Since` read continues.
    pub next_offset: u64,
    pub status: JobStatus,
}

#[derive(Debug)]
struct Job {
    pid: u32,
    command: String,
    output_file: PathBuf,
    started: Instant,
    ended: Mutex<Option<Instant>>,
    status: watch::Sender<JobStatus>,
    stop: CancellationToken,
    tree: ProcessTree,
}

impl Job {
    fn info(&self) -> JobInfo {
        let ended = *self.ended.lock().unwrap_or_else(PoisonError::into_inner);
        JobInfo {
            pid: self.pid,
            command: self.command.clone(),
            output_file: self.output_file.clone(),
            status: self.status.borrow().clone(),
            runtime: ended.unwrap_or_else(Instant::now) - self.started,
        }
    }
}

/// The background jobs of one environment.
#[derive(Debug)]
pub struct JobTable {
    jobs: Mutex<BTreeMap<u32, Arc<Job>>>,
    kill_grace: Duration,
    keep_on_drop: bool,
}

impl JobTable {
    pub(crate) fn new(kill_grace: Duration, keep_on_drop: bool) -> Self {
        Self {
            jobs: Mutex::new(BTreeMap::new()),
            kill_grace,
            keep_on_drop,
        }
    }

    fn job(&self, pid: u32) -> Result<Arc<Job>, Error> {
        self.jobs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&pid)
            .cloned()
            .ok_or(Error::UnknownJob { pid })
    }

    /// Registers a started job and starts its waiter task.
    pub(crate) fn add(
        &self,
        root: RootProcess,
        tree: ProcessTree,
        command: &str,
        output_file: PathBuf,
        script_file: Option<tempfile::TempPath>,
    ) {
        let pid = root.pid();
        let (status, _) = watch::channel(JobStatus::Running);
        let job = Arc::new(Job {
            pid,
            command: command.to_owned(),
            output_file,
            started: Instant::now(),
            ended: Mutex::new(None),
            status,
            stop: CancellationToken::new(),
            tree,
        });
        self.jobs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(pid, Arc::clone(&job));
        let guard = StopOnDrop {
            job: Arc::clone(&job),
            armed: !self.keep_on_drop,
        };
        tokio::spawn(watch_job(job, root, self.kill_grace, guard, script_file));
    }

    pub fn list(&self) -> Vec<JobInfo> {
        self.jobs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .map(|job| job.info())
            .collect()
    }

    pub fn get(&self, pid: u32) -> Option<JobInfo> {
        self.job(pid).ok().map(|job| job.info())
    }

    /// Reads a job's output file, cleaned (escapes stripped, lossy UTF-8,
    /// progress lines collapsed).
    pub async fn output(&self, pid: u32, read: JobRead) -> Result<JobOutput, Error> {
        let job = self.job(pid)?;
        // Status first: output read after it contains at least as much.
        let status = job.status.borrow().clone();
        let path = job.output_file.clone();
        let (bytes, next_offset) = tokio::task::spawn_blocking(move || read_output(&path, read))
            .await
            .unwrap_or_else(|join| Err(std::io::Error::other(join.to_string())))
            .map_err(|source| Error::Io {
                path: job.output_file.clone(),
                source,
            })?;
        Ok(JobOutput {
            text: clean_text(&bytes),
            next_offset,
            status,
        })
    }

    /// Waits until the job ends or `timeout` passes; returns its info either
    /// way (status `Running` at timeout).
    pub async fn wait(&self, pid: u32, timeout: Duration) -> Result<JobInfo, Error> {
        let job = self.job(pid)?;
        let mut status = job.status.subscribe();
        let _ = tokio::time::timeout(timeout, status.wait_for(|status| !status.is_running())).await;
        Ok(job.info())
    }

    /// Stops a job: SIGTERM to its whole tree, SIGKILL after the grace.
    /// A job that already ended is left as it is.
    pub async fn stop(&self, pid: u32) -> Result<JobInfo, Error> {
        let job = self.job(pid)?;
        job.stop.cancel();
        let mut status = job.status.subscribe();
        let limit = self.kill_grace + STOP_SLACK;
        let _ = tokio::time::timeout(limit, status.wait_for(|status| !status.is_running())).await;
        Ok(job.info())
    }

    /// Stops every running job, concurrently.
    pub async fn stop_all(&self) {
        let jobs: Vec<Arc<Job>> = self
            .jobs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .filter(|job| job.status.borrow().is_running())
            .cloned()
            .collect();
        // Request every stop first, so the graces run at the same time.
        for job in &jobs {
            job.stop.cancel();
        }
        let deadline = tokio::time::Instant::now() + self.kill_grace + STOP_SLACK;
        for job in &jobs {
            let mut status = job.status.subscribe();
            let _ =
                tokio::time::timeout_at(deadline, status.wait_for(|status| !status.is_running()))
                    .await;
        }
    }
}

impl Drop for JobTable {
    fn drop(&mut self) {
        if self.keep_on_drop {
            return;
        }
        let jobs = self.jobs.lock().unwrap_or_else(PoisonError::into_inner);
        for job in jobs.values() {
            if job.status.borrow().is_running() {
                // The waiter task escalates to SIGKILL after the grace; if the
                // runtime is gone, its guard kills at once.
                job.tree.signal_all(nix::sys::signal::Signal::SIGTERM, true);
                job.stop.cancel();
            }
        }
    }
}

/// Kills a job whose waiter task is dropped (runtime shutdown) before it
/// ended, unless jobs are configured to outlive the environment.
struct StopOnDrop {
    job: Arc<Job>,
    armed: bool,
}

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        if self.armed && self.job.status.borrow().is_running() {
            self.job.tree.kill_now(true);
        }
    }
}

async fn watch_job(
    job: Arc<Job>,
    mut root: RootProcess,
    grace: Duration,
    mut guard: StopOnDrop,
    script_file: Option<tempfile::TempPath>,
) {
    tokio::select! {
        () = root.exited() => {}
        () = job.stop.cancelled() => {
            // Root unreaped here: signalling its group is safe.
            job.tree.terminate(grace, true).await;
        }
    }
    root.exited().await;
    let status = JobStatus::from_exit(root.status());
    root.try_reap();
    drop(script_file);
    append_final_line(&job.output_file, &status.final_line());
    *job.ended.lock().unwrap_or_else(PoisonError::into_inner) = Some(Instant::now());
    guard.armed = false;
    job.status.send_replace(status);
}

fn append_final_line(path: &std::path::Path, line: &str) {
    let Ok(mut file) = std::fs::OpenOptions::new()
        .read(true)
        .append(true)
        .open(path)
    else {
        return;
    };
    let mut last = [0u8; 1];
    let ends_with_newline = file.seek(SeekFrom::End(-1)).is_err()
        || (file.read_exact(&mut last).is_ok() && last[0] == b'\n');
    let separator = if ends_with_newline { "" } else { "\n" };
    let _ = writeln!(file, "{separator}{line}");
}

fn read_output(path: &std::path::Path, read: JobRead) -> std::io::Result<(Vec<u8>, u64)> {
    let mut file = std::fs::File::open(path)?;
    let length = file.metadata()?.len();
    match read {
        JobRead::Since { offset } => {
            let offset = offset.min(length);
            let available = length - offset;
            file.seek(SeekFrom::Start(offset))?;
            let mut bytes = Vec::new();
            Read::by_ref(&mut file)
                .take(available.min(MAX_JOB_READ))
                .read_to_end(&mut bytes)?;
            if available > MAX_JOB_READ {
                // Stop at a line end so the next read starts with a whole line
                // (and no character is cut in two).
                if let Some(end) = bytes.iter().rposition(|&byte| byte == b'\n') {
                    bytes.truncate(end + 1);
                }
            }
            let next = offset + bytes.len() as u64;
            Ok((bytes, next))
        }
        // Counting newlines in at most a few blocks: no crate needed.
        #[allow(clippy::naive_bytecount)]
        JobRead::Tail { lines } => {
            let mut start = length;
            let mut bytes: Vec<u8> = Vec::new();
            let block = 64 * 1024;
            // Read backwards until there are enough line ends (the last line
            // may lack one) or the read cap is reached.
            while start > 0
                && (bytes.len() as u64) < MAX_JOB_READ
                && bytes.iter().filter(|&&byte| byte == b'\n').count() <= lines
            {
                let size = block.min(start);
                start -= size;
                file.seek(SeekFrom::Start(start))?;
                let mut chunk = vec![0; usize::try_from(size).unwrap_or(0)];
                file.read_exact(&mut chunk)?;
                chunk.extend_from_slice(&bytes);
                bytes = chunk;
            }
            let body = bytes.strip_suffix(b"\n").unwrap_or(&bytes);
            let keep_from = body
                .iter()
                .enumerate()
                .rev()
                .filter(|&(_, &byte)| byte == b'\n')
                .nth(lines.saturating_sub(1))
                .map_or(0, |(index, _)| index + 1);
            let keep_from = if lines == 0 { bytes.len() } else { keep_from };
            Ok((bytes[keep_from..].to_vec(), length))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_returns_the_last_lines() {
        let temp = tempfile::tempdir().expect("tempdir");
        let path = temp.path().join("out");
        std::fs::write(&path, "a\nb\nc\nd\n").expect("write");
        let (bytes, next) = read_output(&path, JobRead::Tail { lines: 2 }).expect("read");
        assert_eq!((bytes.as_slice(), next), (b"c\nd\n".as_slice(), 8));
        let (bytes, _) = read_output(&path, JobRead::Tail { lines: 10 }).expect("read");
        assert_eq!(bytes, b"a\nb\nc\nd\n");
        std::fs::write(&path, "a\nb\npartial").expect("write");
        let (bytes, _) = read_output(&path, JobRead::Tail { lines: 2 }).expect("read");
        assert_eq!(bytes, b"b\npartial");
    }

    #[test]
    fn since_continues_where_the_last_read_ended() {
        let temp = tempfile::tempdir().expect("tempdir");
        let path = temp.path().join("out");
        std::fs::write(&path, "one\ntwo\n").expect("write");
        let (bytes, next) = read_output(&path, JobRead::Since { offset: 4 }).expect("read");
        assert_eq!((bytes.as_slice(), next), (b"two\n".as_slice(), 8));
        let (bytes, next) = read_output(&path, JobRead::Since { offset: 99 }).expect("read");
        assert_eq!((bytes.len(), next), (0, 8));
    }

    #[test]
    fn status_serializes_with_a_state_tag() {
        let json = serde_json::to_string(&JobStatus::Exited { code: 1 }).expect("json");
        assert_eq!(json, r#"{"state":"exited","code":1}"#);
    }
}
