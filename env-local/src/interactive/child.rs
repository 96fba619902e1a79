//! The job's root process: told when it exits (pidfd), reaped only when the
//! job is done signalling its process group.
//!
//! Like [`crate::RootProcess`] for ordinary commands: an exited but unreaped
//! child keeps its pid, and so the group id, from being reused, so the
//! group can be signalled safely until the reap. The reap and a last
//! `SIGKILL` from `Drop` exclude each other through one lock.

use std::os::fd::OwnedFd;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use nix::sys::wait::{Id, WaitPidFlag, WaitStatus, waitid};
use nix::unistd::Pid;
use tokio::io::unix::AsyncFd;

use crate::kill::open_pidfd;
use crate::spawn::ExitStatus;

/// How often exit is polled when pidfds are not available (kernels < 5.3).
const EXIT_POLL: Duration = Duration::from_millis(10);

#[derive(Debug)]
pub(crate) struct ChildProcess {
    pid: u32,
    pidfd: Option<AsyncFd<OwnedFd>>,
    /// `Some(status)` once reaped.
    reaped: Mutex<Option<ExitStatus>>,
}

impl ChildProcess {
    /// Watches our unreaped child `pid`. Needs a tokio runtime.
    pub fn new(pid: u32) -> Self {
        // Race-free: our unreaped child cannot be replaced by another process.
        let pidfd = open_pidfd(pid).ok().and_then(|fd| {
            // SAFETY: the `OwnedFd` moves into the `AsyncFd`, which keeps it
            // open and unchanged until it is dropped.
            #[allow(unsafe_code)]
            let registered =
                unsafe { AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE) };
            registered.ok()
        });
        Self {
            pid,
            pidfd,
            reaped: Mutex::new(None),
        }
    }

    /// Completes when the process has exited (it stays unreaped).
    pub async fn exited(&self) {
        if let Some(pidfd) = &self.pidfd
            && pidfd.readable().await.is_ok()
        {
            // Readiness stays set once the process is gone.
            return;
        }
        while self.status() == ExitStatus::Running {
            tokio::time::sleep(EXIT_POLL).await;
        }
    }

    /// The exit status, without reaping.
    pub fn status(&self) -> ExitStatus {
        if let Some(status) = *self.reaped.lock().unwrap_or_else(PoisonError::into_inner) {
            return status;
        }
        peek(self.pid)
    }

    /// Reaps the process if it has exited; returns its status.
    pub fn reap(&self) -> ExitStatus {
        let mut reaped = self.reaped.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(status) = *reaped {
            return status;
        }
        let status = peek(self.pid);
        if status != ExitStatus::Running {
            let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG;
            let _ = waitid(Id::Pid(Pid::from_raw(self.pid as i32)), flags);
            *reaped = Some(status);
        }
        status
    }

    /// Runs `signal` while the process is certainly not reaped (so its
    /// group id is still ours).
    pub fn while_unreaped(&self, signal: impl FnOnce()) {
        let reaped = self.reaped.lock().unwrap_or_else(PoisonError::into_inner);
        if reaped.is_none() {
            signal();
        }
    }
}

fn peek(pid: u32) -> ExitStatus {
    let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT | WaitPidFlag::WNOHANG;
    match waitid(Id::Pid(Pid::from_raw(pid as i32)), flags) {
        Ok(WaitStatus::Exited(_, code)) => ExitStatus::Code(code),
        Ok(WaitStatus::Signaled(_, signal, _)) => ExitStatus::Signal(signal),
        _ => ExitStatus::Running,
    }
}

impl Drop for ChildProcess {
    /// Reaps the process once it exits, without blocking: an unreaped child
    /// would stay a zombie for as long as we live.
    fn drop(&mut self) {
        if self.reap() != ExitStatus::Running {
            return;
        }
        let pid = Pid::from_raw(self.pid as i32);
        // A plain thread, not `spawn_blocking`: a runtime waits for its
        // blocking tasks when it shuts down, and this wait may be long. It
        // ends when the process does (the job killed it before dropping).
        std::thread::spawn(move || {
            let _ = waitid(Id::Pid(pid), WaitPidFlag::WEXITED);
        });
    }
}
