//! [`JobControl`] over env-local's job table: the jobs the bash tool started
//! in this server with `mode: "background"`, in a fresh shell or through the
//! session.

use std::time::Duration;

use anyhow::Context as _;
use bashtool_env_local::{JobInfo, JobStatus, JobTable, LocalExec, Session};

use super::jobs_tool::{JobControl, JobRead, JobText, JobView};

/// Whose job table it is.
pub enum LocalJobs {
    Exec(LocalExec),
    Session(Session),
}

impl LocalJobs {
    fn table(&self) -> &JobTable {
        match self {
            Self::Exec(exec) => exec.jobs(),
            Self::Session(session) => session.jobs(),
        }
    }

    fn known(&self, pid: u32) -> anyhow::Result<JobInfo> {
        self.table().get(pid).with_context(|| {
            format!(
                "no background job with pid {pid} in this server; use action \"list\" to see \
                 the jobs"
            )
        })
    }
}

fn status_fields(status: &JobStatus) -> (String, Option<i32>, Option<String>) {
    match status {
        JobStatus::Running => ("running".to_owned(), None, None),
        JobStatus::Exited { code } => ("exited".to_owned(), Some(*code), None),
        JobStatus::Signaled { signal } => ("signaled".to_owned(), None, Some(signal.clone())),
    }
}

fn view(info: &JobInfo) -> JobView {
    let (status, exit_code, signal) = status_fields(&info.status);
    JobView {
        pid: info.pid,
        command: info.command.clone(),
        output_file: info.output_file.display().to_string(),
        status,
        exit_code,
        signal,
        runtime_ms: info.runtime.as_millis() as u64,
    }
}

#[async_trait::async_trait]
impl JobControl for LocalJobs {
    fn list(&self) -> Vec<JobView> {
        self.table().list().iter().map(view).collect()
    }

    async fn output(&self, pid: u32, read: JobRead) -> anyhow::Result<JobText> {
        let info = self.known(pid)?;
        let read = match read {
            JobRead::Tail { lines } => bashtool_env_local::JobRead::Tail { lines },
            JobRead::Since { offset } => bashtool_env_local::JobRead::Since { offset },
        };
        let output = self.table().output(pid, read).await?;
        let mut job = view(&info);
        (job.status, job.exit_code, job.signal) = status_fields(&output.status);
        Ok(JobText {
            text: output.text,
            next_offset: output.next_offset,
            job,
        })
    }

    async fn wait(&self, pid: u32, timeout: Duration) -> anyhow::Result<JobView> {
        self.known(pid)?;
        Ok(view(&self.table().wait(pid, timeout).await?))
    }

    async fn stop(&self, pid: u32) -> anyhow::Result<JobView> {
        self.known(pid)?;
        Ok(view(&self.table().stop(pid).await?))
    }

    async fn stop_all(&self) {
        self.table().stop_all().await;
    }
}
