//! The jobs port of a [`LocalExec`]: its background jobs (in the job
//! table) and its interactive jobs (terminals it holds), by id.

use std::time::Duration;

use bashtool_core::{JobError, JobInfo, JobInput, JobOutput, Jobs, ReadFrom};
use tokio_util::sync::CancellationToken;

use super::LocalExec;

#[async_trait::async_trait]
impl Jobs for LocalExec {
    async fn list(&self) -> Vec<JobInfo> {
        let mut jobs = self.inner.jobs.list();
        jobs.extend(self.inner.interactive.list().await);
        jobs
    }

    async fn read(
        &self,
        id: &str,
        from: ReadFrom,
        max_bytes: usize,
    ) -> Result<JobOutput, JobError> {
        if let Some(output) = self.inner.interactive.read(id, from, max_bytes).await {
            return output;
        }
        self.inner.jobs.read(id, from, max_bytes).await
    }

    async fn wait(
        &self,
        id: &str,
        timeout: Duration,
        cancel: CancellationToken,
    ) -> Result<JobInfo, JobError> {
        if let Some(info) = self.inner.interactive.wait(id, timeout, &cancel).await {
            return Ok(info);
        }
        self.inner.jobs.wait(id, timeout, cancel).await
    }

    async fn stop(&self, id: &str) -> Result<JobInfo, JobError> {
        if let Some(info) = self.inner.interactive.stop(id).await {
            if info.state.is_running() {
                return Err(JobError::Environment {
                    message: crate::jobs::not_stopped(
                        id,
                        info.pid.unwrap_or_default(),
                        self.inner.config.kill_grace,
                    ),
                });
            }
            return Ok(info);
        }
        self.inner.jobs.stop(id).await
    }

    async fn write(
        &self,
        id: &str,
        input: JobInput,
        yield_after: Duration,
    ) -> Result<JobOutput, JobError> {
        if let Some(output) = self.inner.interactive.write(id, &input, yield_after).await {
            return output;
        }
        self.inner.jobs.get(id).map_or_else(
            || Err(JobError::UnknownJob { id: id.to_owned() }),
            |_| Err(JobError::NotInteractive { id: id.to_owned() }),
        )
    }

    async fn stop_all(&self) {
        self.inner.jobs.stop_all().await;
        self.inner.interactive.stop_all().await;
    }
}
