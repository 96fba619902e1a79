//! [`ScriptedJobs`]: an in-memory jobs port whose jobs and output a test
//! sets, for deterministic tests of the `bash_jobs` tool and of embedders.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bashtool_core::{JobError, JobInfo, JobInput, JobOutput, JobState, Jobs, ReadFrom, clean_text};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

#[derive(Debug, Clone)]
struct ScriptedJob {
    info: JobInfo,
    output: Vec<u8>,
    inputs: Vec<JobInput>,
}

/// Jobs held in memory, listed oldest first. Clones share them.
#[derive(Debug, Clone)]
pub struct ScriptedJobs {
    jobs: Arc<Mutex<Vec<ScriptedJob>>>,
    /// Bumped on every change, so that a `wait` returns when its job ends.
    changes: Arc<watch::Sender<u64>>,
}

impl Default for ScriptedJobs {
    fn default() -> Self {
        Self {
            jobs: Arc::default(),
            changes: Arc::new(watch::Sender::new(0)),
        }
    }
}

impl ScriptedJobs {
    /// No jobs.
    pub fn new() -> Self {
        Self::default()
    }

    fn with<T>(&self, look: impl FnOnce(&[ScriptedJob]) -> T) -> T {
        look(&self.jobs.lock().unwrap_or_else(PoisonError::into_inner))
    }

    fn change<T>(&self, change: impl FnOnce(&mut Vec<ScriptedJob>) -> T) -> T {
        let result = change(&mut self.jobs.lock().unwrap_or_else(PoisonError::into_inner));
        self.changes.send_modify(|version| *version += 1);
        result
    }

    fn change_job(&self, id: &str, change: impl FnOnce(&mut ScriptedJob)) {
        self.change(|jobs| {
            if let Some(job) = jobs.iter_mut().find(|job| job.info.id == id) {
                change(job);
            }
        });
    }

    /// Adds a running job `id` running `command` (replacing a job with the
    /// same id).
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
        self.change(|jobs| {
            jobs.retain(|job| job.info.id != id);
            jobs.push(ScriptedJob {
                info,
                output: Vec::new(),
                inputs: Vec::new(),
            });
        });
    }

    /// Appends raw output to job `id`.
    pub fn print(&self, id: &str, bytes: &[u8]) {
        self.change_job(id, |job| job.output.extend_from_slice(bytes));
    }

    /// Ends job `id` with `code` (a `wait` on it returns).
    pub fn exit(&self, id: &str, code: i32) {
        self.change_job(id, |job| {
            job.info.state = JobState::Exited;
            job.info.exit_code = Some(code);
        });
    }

    /// The inputs written to job `id`, in order.
    pub fn inputs(&self, id: &str) -> Vec<JobInput> {
        self.job(id).map(|job| job.inputs).unwrap_or_default()
    }

    fn job(&self, id: &str) -> Result<ScriptedJob, JobError> {
        self.with(|jobs| jobs.iter().find(|job| job.info.id == id).cloned())
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
        self.with(|jobs| jobs.iter().map(|job| job.info.clone()).collect())
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
        let mut changed = self.changes.subscribe();
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        loop {
            // Marked seen before the look, so a change after it wakes us.
            changed.borrow_and_update();
            let info = self.job(id)?.info;
            if !info.state.is_running() {
                return Ok(info);
            }
            tokio::select! {
                () = &mut deadline => return Ok(info),
                () = cancel.cancelled() => return Ok(info),
                _ = changed.changed() => {}
            }
        }
    }

    async fn stop(&self, id: &str) -> Result<JobInfo, JobError> {
        self.change(|jobs| {
            let job = jobs
                .iter_mut()
                .find(|job| job.info.id == id)
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
        self.change_job(id, |job| job.inputs.push(input));
        Ok(window(&self.job(id)?, ReadFrom::Cursor(cursor), usize::MAX))
    }

    async fn stop_all(&self) {
        let ids: Vec<String> =
            self.with(|jobs| jobs.iter().map(|job| job.info.id.clone()).collect());
        for id in ids {
            let _ = self.stop(&id).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn wait_returns_when_the_job_ends_not_at_its_timeout() {
        let jobs = ScriptedJobs::new();
        jobs.add("j1", "make", false);
        let waiter = {
            let jobs = jobs.clone();
            tokio::spawn(async move {
                let started = tokio::time::Instant::now();
                let info = jobs
                    .wait("j1", Duration::from_secs(600), CancellationToken::new())
                    .await;
                (info, started.elapsed())
            })
        };
        tokio::time::sleep(Duration::from_secs(5)).await;
        jobs.exit("j1", 3);
        let (info, waited) = waiter.await.expect("the waiter");
        let info = info.expect("known job");
        assert_eq!((info.state, info.exit_code), (JobState::Exited, Some(3)));
        assert_eq!(waited, Duration::from_secs(5));
    }

    #[tokio::test(start_paused = true)]
    async fn wait_returns_at_its_timeout_with_the_job_running() {
        let jobs = ScriptedJobs::new();
        jobs.add("j1", "make", false);
        let started = tokio::time::Instant::now();
        let info = jobs
            .wait("j1", Duration::from_secs(7), CancellationToken::new())
            .await
            .expect("known job");
        assert_eq!(info.state, JobState::Running);
        assert_eq!(started.elapsed(), Duration::from_secs(7));
    }

    #[tokio::test]
    async fn jobs_are_listed_oldest_first() {
        let jobs = ScriptedJobs::new();
        for id in ["j9", "j10", "j1"] {
            jobs.add(id, "true", false);
        }
        let ids: Vec<String> = jobs.list().await.into_iter().map(|job| job.id).collect();
        assert_eq!(ids, ["j9", "j10", "j1"]);
    }
}
