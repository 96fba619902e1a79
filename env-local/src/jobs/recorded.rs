//! The jobs port over the on-disk records: the jobs that any bashtool
//! process of this user started (`bashtool jobs`, a `call` after the `call`
//! that started a job). Liveness comes from the pid and its start time,
//! output from the output file, the ending from the supervisor's line.
//!
//! A job that is not our child is signalled only after a pidfd pins its
//! supervisor and the start time proves it is still the job: a reused pid is
//! never hit.

use std::time::Duration;

use bashtool_core::{JobError, JobInfo, JobOutput, Jobs, ReadFrom};
use nix::sys::signal::Signal;
use tokio_util::sync::CancellationToken;

use crate::jobs::records::{JobRecord, JobStore};
use crate::jobs::table::{not_stopped, read_output_file};
use crate::logs::{is_in_use, output_lock_path};
use bashtool_process::{PinnedProcess, ProcessTree};

/// How long, after the job's supervisor ended, to wait for its copier to
/// write the last of its output (the status line), checked this often.
const OUTPUT_DRAIN: Duration = Duration::from_secs(1);
const OUTPUT_CHECK: Duration = Duration::from_millis(5);

/// The recorded jobs of a state directory.
#[derive(Debug, Clone)]
pub struct RecordedJobs {
    store: JobStore,
    kill_grace: Duration,
}

impl RecordedJobs {
    /// The jobs recorded in `store`; `kill_grace` between SIGTERM and
    /// SIGKILL when stopping one.
    pub fn new(store: JobStore, kill_grace: Duration) -> Self {
        Self { store, kill_grace }
    }

    fn record(&self, id: &str) -> Result<JobRecord, JobError> {
        self.store
            .load()
            .map_err(|error| JobError::Environment {
                message: error.to_string(),
            })?
            .into_iter()
            .find(|record| record.id == id)
            .ok_or_else(|| JobError::UnknownJob { id: id.to_owned() })
    }

    /// Forgets the jobs that have ended; returns how many.
    pub fn prune(&self) -> Result<usize, JobError> {
        let records = self.store.load().map_err(|error| JobError::Environment {
            message: error.to_string(),
        })?;
        let ended: Vec<String> = records
            .iter()
            .filter(|record| !record.is_running())
            .map(|record| record.id.clone())
            .collect();
        self.store
            .remove(&ended)
            .map_err(|error| JobError::Environment {
                message: error.to_string(),
            })?;
        Ok(ended.len())
    }
}

/// The job's supervisor, pinned, if it is still the job (same start time).
fn pin(record: &JobRecord) -> Option<PinnedProcess> {
    PinnedProcess::open(record.pid, record.start_ticks)
}

/// Waits (at most [`OUTPUT_DRAIN`]) until the copier of the job's output
/// let go of its lock: it has written the last of the output. The lock has
/// no release event to wait for, so it is checked again and again.
async fn output_written(record: &JobRecord) {
    let lock = output_lock_path(&record.output_file);
    let deadline = tokio::time::Instant::now() + OUTPUT_DRAIN;
    while is_in_use(&lock) && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(OUTPUT_CHECK).await;
    }
}

/// Waits until the pinned process exits, or `timeout`, or `cancel`.
async fn wait_pinned(process: &PinnedProcess, timeout: Duration, cancel: &CancellationToken) {
    tokio::select! {
        _ = tokio::time::timeout(timeout, process.exited()) => {}
        () = cancel.cancelled() => {}
    }
}

#[async_trait::async_trait]
impl Jobs for RecordedJobs {
    async fn list(&self) -> Vec<JobInfo> {
        self.store
            .load()
            .unwrap_or_default()
            .iter()
            .map(JobRecord::info)
            .collect()
    }

    async fn read(
        &self,
        id: &str,
        from: ReadFrom,
        max_bytes: usize,
    ) -> Result<JobOutput, JobError> {
        let record = self.record(id)?;
        read_output_file(
            record.info(),
            &record.output_file,
            record.output_head,
            from,
            max_bytes,
        )
        .await
    }

    async fn wait(
        &self,
        id: &str,
        timeout: Duration,
        cancel: CancellationToken,
    ) -> Result<JobInfo, JobError> {
        let record = self.record(id)?;
        if let Some(message) = record.foreign() {
            return Err(JobError::Environment { message });
        }
        if let Some(pidfd) = pin(&record) {
            wait_pinned(&pidfd, timeout, &cancel).await;
        }
        if pin(&record).is_none() {
            output_written(&record).await;
        }
        Ok(record.info())
    }

    async fn stop(&self, id: &str) -> Result<JobInfo, JobError> {
        let record = self.record(id)?;
        if let Some(message) = record.foreign() {
            return Err(JobError::Environment { message });
        }
        let Some(pidfd) = pin(&record) else {
            output_written(&record).await;
            return Ok(record.info());
        };
        // While the pinned supervisor lives, its group id cannot be reused:
        // signalling the group reaches the job and nothing else. A group
        // none of whose processes may be signalled from here (another
        // user's, or one outside the sandbox this process runs in) is
        // refused at once, and said so: waiting would only end in the same.
        let group = nix::unistd::Pid::from_raw(record.pid as i32);
        if nix::sys::signal::killpg(group, Signal::SIGTERM) == Err(nix::errno::Errno::EPERM) {
            return Err(JobError::Environment {
                message: not_stopped(id, record.pid, Duration::ZERO),
            });
        }
        let tree = ProcessTree::new(record.pid, None);
        tree.signal_all(Signal::SIGTERM, false);
        let cancel = CancellationToken::new();
        wait_pinned(&pidfd, self.kill_grace, &cancel).await;
        if pin(&record).is_some() {
            tree.signal_all(Signal::SIGKILL, false);
            wait_pinned(&pidfd, self.kill_grace, &cancel).await;
        }
        if pin(&record).is_some() {
            return Err(JobError::Environment {
                message: not_stopped(id, record.pid, self.kill_grace * 2),
            });
        }
        output_written(&record).await;
        Ok(record.info())
    }

    async fn write(
        &self,
        id: &str,
        input: bashtool_core::JobInput,
        yield_after: Duration,
    ) -> Result<JobOutput, JobError> {
        let _ = (input, yield_after);
        self.record(id)?;
        Err(JobError::Environment {
            message: format!(
                "job `{id}` has no terminal to type into: only interactive jobs take input, and an interactive job lives in the process that holds its terminal (an MCP server's bash_jobs, or `bashtool run --mode interactive`)"
            ),
        })
    }

    async fn stop_all(&self) {
        for job in self.list().await {
            if job.state.is_running() {
                let _ = self.stop(&job.id).await;
            }
        }
    }
}
