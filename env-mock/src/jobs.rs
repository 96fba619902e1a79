//! [`ScriptedJobs`]: an in-memory jobs port whose jobs and output a test
//! sets, for deterministic tests of the `bash_jobs` tool and of embedders.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bashtool_core::{JobError, JobInfo, JobInput, JobOutput, JobState, Jobs, ReadFrom, clean_text};
use tokio_util::sync::CancellationToken;

#[derive(Debug, Clone)]
struct ScriptedJob {
    info: JobInfo,
    output: Vec<u8>,
    inputs: Vec<JobInput>,
}

/// Jobs held in memory. Clones share them.
#[derive(Debug, Clone, Default)]
pub struct ScriptedJobs {
    jobs: Arc<Mutex<BTreeMap<String, ScriptedJob>>>,
}

impl ScriptedJobs {
    /// No jobs.
    pub fn new() -> Self {
        Self::default()
    }

    fn with<T>(&self, change: impl FnOnce(&mut BTreeMap<String, ScriptedJob>) -> T) -> T {
        change(&mut self.jobs.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Adds a running job `id` running `command`.
    pub fn add(&self, id: &str, command: &str, interactive: bool) {
        let info = JobInfo {
            id: id.to_owned(),
            command: command.to_owned(),
            state: JobState::Running,
            exit_code: None,
            signal: None,
            runtime_ms: 0,
            pid: None,
            output_file: None,
            interactive,
        };
        self.with(|jobs| {
            jobs.insert(
                id.to_owned(),
                ScriptedJob {
                    info,
                    output: Vec::new(),
                    inputs: Vec::new(),
                },
            )
        });
    }

    /// Appends raw output to job `id`.
    pub fn print(&self, id: &str, bytes: &[u8]) {
        self.with(|jobs| {
            if let Some(job) = jobs.get_mut(id) {
                job.output.extend_from_slice(bytes);
            }
        });
    }

    /// Ends job `id` with `code`.
    pub fn exit(&self, id: &str, code: i32) {
        self.with(|jobs| {
            if let Some(job) = jobs.get_mut(id) {
                job.info.state = JobState::Exited;
                job.info.exit_code = Some(code);
            }
        });
    }

    /// The inputs written to job `id`, in order.
    pub fn inputs(&self, id: &str) -> Vec<JobInput> {
        self.with(|jobs| {
            jobs.get(id)
                .map(|job| job.inputs.clone())
                .unwrap_or_default()
        })
    }

    fn job(&self, id: &str) -> Result<ScriptedJob, JobError> {
        self.with(|jobs| jobs.get(id).cloned())
            .ok_or_else(|| JobError::UnknownJob { id: id.to_owned() })
    }
}

fn window(job: &ScriptedJob, from: ReadFrom, max_bytes: usize) -> JobOutput {
    let length = job.output.len();
    let (start, end, skipped) = match from {
        ReadFrom::Cursor(cursor) => {
            let start = usize::try_from(cursor).unwrap_or(usize::MAX).min(length);
            let mut end = (start + max_bytes.max(1)).min(length);
            if end < length
                && let Some(newline) = job.output[start..end].iter().rposition(|&b| b == b'\n')
            {
                end = start + newline + 1;
            }
            (start, end, 0)
        }
        ReadFrom::Tail { lines } => {
            let body = job.output.strip_suffix(b"\n").unwrap_or(&job.output);
            let start = body
                .iter()
                .enumerate()
                .rev()
                .filter(|&(_, &byte)| byte == b'\n')
                .nth(lines.saturating_sub(1))
                .map_or(0, |(index, _)| index + 1)
                .max(length.saturating_sub(max_bytes));
            (start, length, start as u64)
        }
    };
    JobOutput {
        job: job.info.clone(),
        text: clean_text(&job.output[start..end]),
        cursor: start as u64,
        next_cursor: end as u64,
        skipped,
        more: end < length,
        screen: None,
        echo_off_input: false,
        detection_note: None,
    }
}

#[async_trait::async_trait]
impl Jobs for ScriptedJobs {
    async fn list(&self) -> Vec<JobInfo> {
        self.with(|jobs| jobs.values().map(|job| job.info.clone()).collect())
    }

    async fn read(
        &self,
        id: &str,
        from: ReadFrom,
        max_bytes: usize,
    ) -> Result<JobOutput, JobError> {
        Ok(window(&self.job(id)?, from, max_bytes))
    }

    async fn wait(
        &self,
        id: &str,
        timeout: Duration,
        cancel: CancellationToken,
    ) -> Result<JobInfo, JobError> {
        let job = self.job(id)?;
        if job.info.state.is_running() {
            tokio::select! {
                () = tokio::time::sleep(timeout) => {}
                () = cancel.cancelled() => {}
            }
        }
        Ok(self.job(id)?.info)
    }

    async fn stop(&self, id: &str) -> Result<JobInfo, JobError> {
        self.with(|jobs| {
            let job = jobs
                .get_mut(id)
                .ok_or_else(|| JobError::UnknownJob { id: id.to_owned() })?;
            if job.info.state.is_running() {
                job.info.state = JobState::Signaled;
                job.info.signal = Some("SIGTERM".to_owned());
            }
            Ok(job.info.clone())
        })
    }

    async fn write(
        &self,
        id: &str,
        input: JobInput,
        yield_after: Duration,
    ) -> Result<JobOutput, JobError> {
        let _ = yield_after;
        let job = self.job(id)?;
        if !job.info.interactive {
            return Err(JobError::NotInteractive { id: id.to_owned() });
        }
        let cursor = job.output.len() as u64;
        self.with(|jobs| {
            if let Some(job) = jobs.get_mut(id) {
                job.inputs.push(input);
            }
        });
        Ok(window(&self.job(id)?, ReadFrom::Cursor(cursor), usize::MAX))
    }

    async fn stop_all(&self) {
        let ids: Vec<String> = self.with(|jobs| jobs.keys().cloned().collect());
        for id in ids {
            let _ = self.stop(&id).await;
        }
    }
}
