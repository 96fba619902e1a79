//! The background jobs of one environment, in this process.
//!
//! Each job's root process (its supervisor) stays our unreaped child until
//! its waiter task sees it exit, so stopping its process group is always
//! safe. The supervisor appends how the job ended to the output file; if it
//! was killed before it could, the waiter does.

use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use bashtool_core::{JobError, JobInfo, JobOutput, JobState, ReadFrom};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::jobs::records::{JobRecord, JobStore};
use crate::jobs::supervisor::FINAL_LINE_PREFIX;
use crate::jobs::window::{Window, read_after, read_last_lines};
use bashtool_process::Containment;
use bashtool_process::{ExitStatus, RootProcess};

/// Extra time [`JobTable::stop`] allows after the grace for SIGKILL to land.
const STOP_SLACK: Duration = Duration::from_secs(2);
/// How long the waiter waits, after the job's supervisor ended, for the
/// copier to write the last of the output (the supervisor's status line):
/// it ends as soon as every writer of the job's pipe is gone, unless a
/// process the job left behind still holds it.
const COPIER_DRAIN: Duration = Duration::from_secs(1);

/// How a job ended, as the waiter saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Ending {
    Running,
    Exited(i32),
    Signaled(String),
}

impl Ending {
    fn from_exit(status: ExitStatus) -> Self {
        match status {
            ExitStatus::Code(code) => Self::Exited(code),
            ExitStatus::Signal(signal) => Self::Signaled(signal.as_str().to_owned()),
            ExitStatus::Running => Self::Running,
        }
    }

    fn is_running(&self) -> bool {
        matches!(self, Self::Running)
    }
}

#[derive(Debug)]
struct Job {
    id: String,
    pid: u32,
    command: String,
    output_file: PathBuf,
    started: Instant,
    ended: Mutex<Option<Instant>>,
    ending: watch::Sender<Ending>,
    stop: CancellationToken,
    tree: Arc<dyn Containment>,
    /// Where the marker of a capped output would start.
    output_head: Option<u64>,
}

impl Job {
    fn info(&self) -> JobInfo {
        let ended = *self.ended.lock().unwrap_or_else(PoisonError::into_inner);
        let (state, exit_code, signal) = match &*self.ending.borrow() {
            Ending::Running => (JobState::Running, None, None),
            // The supervisor exits with the command's status; 128+n is how
            // it reports a command killed by signal n.
            Ending::Exited(code) => (JobState::Exited, Some(*code), None),
            Ending::Signaled(signal) => (JobState::Signaled, None, Some(signal.clone())),
        };
        JobInfo {
            id: self.id.clone(),
            command: self.command.clone(),
            state,
            exit_code,
            signal,
            runtime_ms: (ended.unwrap_or_else(Instant::now) - self.started).as_millis() as u64,
            pid: Some(self.pid),
            output_file: Some(self.output_file.display().to_string()),
            interactive: false,
        }
    }
}

/// The background jobs of one environment.
#[derive(Debug)]
pub struct JobTable {
    jobs: Mutex<BTreeMap<String, Arc<Job>>>,
    kill_grace: Duration,
    keep_on_drop: bool,
    store: Option<JobStore>,
}

/// What [`JobTable::add`] needs about a started job.
pub(crate) struct StartedJob {
    pub root: RootProcess,
    pub tree: Arc<dyn Containment>,
    pub command: String,
    pub output_file: PathBuf,
    pub working_directory: Option<String>,
    /// The process that copies the job's output into its file, if one does.
    pub copier: Option<RootProcess>,
    /// The process that masks the output before the copier, if one does.
    pub filter: Option<RootProcess>,
    /// Where the marker of a capped output would start.
    pub output_head: Option<u64>,
    /// The job's cgroup (its limits): removed once the job ended and its
    /// processes are gone.
    pub cgroup: Option<crate::limits::CallCgroup>,
}

/// A new job id: opaque, short, and unique across processes and time (the
/// pid alone is reused).
pub(crate) fn new_job_id(pid: u32) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos() as u64);
    let mut mixed = nanos ^ (u64::from(pid) << 32) ^ COUNTER.fetch_add(1, Ordering::Relaxed);
    // splitmix64's finalizer: neighbouring inputs give unrelated ids.
    mixed = (mixed ^ (mixed >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    mixed = (mixed ^ (mixed >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    mixed ^= mixed >> 31;
    format!("j{:07x}", mixed & 0xfff_ffff)
}

impl JobTable {
    pub(crate) fn new(kill_grace: Duration, keep_on_drop: bool, store: Option<JobStore>) -> Self {
        Self {
            jobs: Mutex::new(BTreeMap::new()),
            kill_grace,
            keep_on_drop,
            store,
        }
    }

    fn job(&self, id: &str) -> Result<Arc<Job>, JobError> {
        self.jobs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id)
            .cloned()
            .ok_or_else(|| JobError::UnknownJob { id: id.to_owned() })
    }

    /// Registers a started job, records it for other processes and starts
    /// its waiter task. Returns its id, and a note if it could not be
    /// recorded (the job runs all the same).
    pub(crate) async fn add(&self, started: StartedJob) -> (String, Option<String>) {
        let pid = started.root.pid();
        let id = new_job_id(pid);
        let (ending, _) = watch::channel(Ending::Running);
        let job = Arc::new(Job {
            id: id.clone(),
            pid,
            command: started.command,
            output_file: started.output_file,
            started: Instant::now(),
            ended: Mutex::new(None),
            ending,
            stop: CancellationToken::new(),
            tree: started.tree,
            output_head: started.output_head,
        });
        // Made before the waiter may reap the job: the record holds the
        // start time of its pid, which tells it from a later process with
        // the same pid.
        let record = self.store.as_ref().map(|_| {
            JobRecord::new(
                &id,
                pid,
                &job.command,
                job.output_file.clone(),
                started.working_directory,
                job.output_head,
            )
        });
        self.jobs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id.clone(), Arc::clone(&job));
        let guard = StopOnDrop {
            job: Arc::clone(&job),
            armed: !self.keep_on_drop,
        };
        tokio::spawn(watch_job(
            Arc::clone(&job),
            started.root,
            [started.filter, started.copier],
            self.kill_grace,
            guard,
            started.cgroup,
        ));
        let mut note = None;
        if let (Some(store), Some(record)) = (&self.store, record) {
            // Off the async workers: the records' lock may be held by
            // another process (or by a command, to stall us), and the
            // store gives up after a bound rather than wait.
            let store = store.clone();
            let recorded = tokio::task::spawn_blocking(move || store.add(record))
                .await
                .unwrap_or_else(|join| {
                    Err(crate::Error::Io {
                        path: PathBuf::from("jobs.json"),
                        source: std::io::Error::other(join.to_string()),
                    })
                });
            if let Err(error) = recorded {
                note = Some(format!(
                    "the job runs, but other bashtool processes (`bashtool jobs`) will not see it: {error}"
                ));
            }
        }
        (id, note)
    }

    /// Every job of this table, oldest first.
    pub fn list(&self) -> Vec<JobInfo> {
        let mut jobs: Vec<Arc<Job>> = self
            .jobs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .cloned()
            .collect();
        jobs.sort_by_key(|job| job.started);
        jobs.iter().map(|job| job.info()).collect()
    }

    /// One job's info.
    pub fn get(&self, id: &str) -> Option<JobInfo> {
        self.job(id).ok().map(|job| job.info())
    }

    /// A window of a job's output (see [`bashtool_core::Jobs::read`]).
    pub async fn read(
        &self,
        id: &str,
        from: ReadFrom,
        max_bytes: usize,
    ) -> Result<JobOutput, JobError> {
        let job = self.job(id)?;
        // The state first: output read after it contains at least as much.
        let info = job.info();
        read_output_file(info, &job.output_file, job.output_head, from, max_bytes).await
    }

    /// Waits until the job ends, `timeout` passes or `cancel`; returns its
    /// info either way.
    pub async fn wait(
        &self,
        id: &str,
        timeout: Duration,
        cancel: CancellationToken,
    ) -> Result<JobInfo, JobError> {
        let job = self.job(id)?;
        let mut ending = job.ending.subscribe();
        tokio::select! {
            _ = tokio::time::timeout(timeout, ending.wait_for(|ending| !ending.is_running())) => {}
            () = cancel.cancelled() => {}
        }
        Ok(job.info())
    }

    /// Stops a job: SIGTERM to its whole tree, SIGKILL after the grace;
    /// returns once it ended. A job that already ended is left as it is;
    /// one still running after the SIGKILL is an error, never a success.
    pub async fn stop(&self, id: &str) -> Result<JobInfo, JobError> {
        let job = self.job(id)?;
        job.stop.cancel();
        let mut ending = job.ending.subscribe();
        let limit = self.kill_grace + STOP_SLACK + COPIER_DRAIN;
        let _ = tokio::time::timeout(limit, ending.wait_for(|ending| !ending.is_running())).await;
        let info = job.info();
        if info.state.is_running() {
            return Err(JobError::Environment {
                message: not_stopped(id, job.pid, limit),
            });
        }
        Ok(info)
    }

    /// Stops every running job, concurrently.
    pub async fn stop_all(&self) {
        let jobs: Vec<Arc<Job>> = self
            .jobs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .filter(|job| job.ending.borrow().is_running())
            .cloned()
            .collect();
        // Request every stop first, so the graces run at the same time.
        for job in &jobs {
            job.stop.cancel();
        }
        let deadline = tokio::time::Instant::now() + self.kill_grace + STOP_SLACK + COPIER_DRAIN;
        for job in &jobs {
            let mut ending = job.ending.subscribe();
            let _ =
                tokio::time::timeout_at(deadline, ending.wait_for(|ending| !ending.is_running()))
                    .await;
        }
    }
}

/// Why a job that was told to stop is still running: what the model (and
/// the user) are told instead of "stopped".
pub(crate) fn not_stopped(id: &str, pid: u32, waited: Duration) -> String {
    let reason = match nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), None) {
        Err(nix::errno::Errno::EPERM) => {
            "signals to it are not permitted from here (permission denied: it runs as another user, or outside the sandbox this runs in)".to_owned()
        }
        _ => format!(
            "it was still running {}s after SIGTERM and SIGKILL were sent to its process tree",
            waited.as_secs()
        ),
    };
    format!(
        "job `{id}` could not be stopped: {reason}; it is still running (pid {pid}). Stop it from where it was started (`kill -TERM -- -{pid}` there)"
    )
}

/// Reads a window of `path` for the job described by `info`; `head`: where
/// the marker of a capped output would start.
pub(crate) async fn read_output_file(
    info: JobInfo,
    path: &Path,
    head: Option<u64>,
    from: ReadFrom,
    max_bytes: usize,
) -> Result<JobOutput, JobError> {
    let path = path.to_path_buf();
    let window = tokio::task::spawn_blocking(move || -> std::io::Result<Window> {
        match from {
            ReadFrom::Cursor(cursor) => read_after(&path, cursor, max_bytes, head),
            ReadFrom::Tail { lines } => read_last_lines(&path, lines, max_bytes, head),
        }
    })
    .await
    .unwrap_or_else(|join| Err(std::io::Error::other(join.to_string())))
    .map_err(|error| JobError::Environment {
        message: format!("could not read the job's output: {error}"),
    })?;
    Ok(JobOutput {
        job: info,
        text: window.text,
        cursor: window.cursor,
        next_cursor: window.next_cursor,
        skipped: match from {
            ReadFrom::Tail { .. } => window.cursor,
            ReadFrom::Cursor(_) => 0,
        },
        more: window.more,
        screen: None,
        echo_off_input: false,
        detection_note: None,
    })
}

impl Drop for JobTable {
    fn drop(&mut self) {
        if self.keep_on_drop {
            return;
        }
        let jobs = self.jobs.lock().unwrap_or_else(PoisonError::into_inner);
        for job in jobs.values() {
            if job.ending.borrow().is_running() {
                // The waiter task escalates to SIGKILL after the grace; if the
                // runtime is gone, its guard kills at once.
                job.tree.signal_all(nix::sys::signal::Signal::SIGTERM);
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
        if self.armed && self.job.ending.borrow().is_running() {
            self.job.tree.kill_now();
        }
    }
}

async fn watch_job(
    job: Arc<Job>,
    mut root: RootProcess,
    copiers: [Option<RootProcess>; 2],
    grace: Duration,
    mut guard: StopOnDrop,
    cgroup: Option<crate::limits::CallCgroup>,
) {
    tokio::select! {
        () = root.exited() => {}
        () = job.stop.cancelled() => {
            // Root unreaped here: signalling its group is safe.
            job.tree.terminate(grace).await;
        }
    }
    root.exited().await;
    let mut ending = Ending::from_exit(root.status());
    root.try_reap();
    // The supervisor's status line is the last thing in the pipe: through
    // the filter, if any, then the copier.
    for copier in copiers.into_iter().flatten() {
        let _ = tokio::time::timeout(COPIER_DRAIN, copier.exited()).await;
        // Reaped now, or by its handle's drop once it exits.
        drop(copier);
    }
    match &ending {
        Ending::Signaled(signal) => {
            // The supervisor itself was killed (SIGKILL after the grace): it
            // could not write the line, so we do.
            append_final_line(
                &job.output_file,
                &format!("{FINAL_LINE_PREFIX}killed by signal {signal}]"),
            );
        }
        Ending::Exited(code) if *code > 128 => {
            // The supervisor exits with 128+n when the command died of
            // signal n; its line in the file says which (a command may also
            // just exit 130).
            if let Some((None, Some(signal))) = crate::jobs::records::read_end(&job.output_file)
                .and_then(|tail| crate::jobs::supervisor::parse_final_line(&tail))
            {
                ending = Ending::Signaled(signal);
            }
        }
        _ => {}
    }
    *job.ended.lock().unwrap_or_else(PoisonError::into_inner) = Some(Instant::now());
    guard.armed = false;
    job.ending.send_replace(ending);
    // Removed now if the job left nothing running, else once it is empty.
    drop(cgroup);
}

fn append_final_line(path: &Path, line: &str) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_ids_are_short_and_distinct() {
        let ids: std::collections::HashSet<String> = (0..1000).map(|_| new_job_id(42)).collect();
        assert_eq!(ids.len(), 1000);
        assert!(ids.iter().all(|id| id.len() == 8 && id.starts_with('j')));
    }
}
