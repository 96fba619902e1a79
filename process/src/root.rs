//! The launched process's handle: it can tell when the process exited
//! *without reaping it* (a zombie keeps its pid, and so its process group
//! id, reserved while the tree is still being signalled; see `tree.rs`),
//! and it reaps it at the end.

use std::os::fd::OwnedFd;
use std::time::Duration;

use crate::fd::Registered;
use nix::sys::wait::{Id, WaitPidFlag, WaitStatus, waitid};
use nix::unistd::Pid;

use crate::fd::{open_pidfd, register};

/// How often exit is polled when pidfds are not available (old kernels).
const EXIT_POLL: Duration = Duration::from_millis(10);

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// It exited with this code.
    Code(i32),
    /// A signal ended it.
    Signal(nix::sys::signal::Signal),
    /// Still running (it could not be stopped, or was not waited for).
    Running,
}

impl ExitStatus {
    /// The name of the signal that ended it (`SIGKILL`), if one did.
    pub fn signal_name(self) -> Option<String> {
        match self {
            Self::Signal(signal) => Some(signal.as_str().to_owned()),
            _ => None,
        }
    }
}

/// Our child, the command's root process. We do not reap it until we are
/// done signalling its process group: a zombie keeps the pid, and so the
/// group id, from being reused. The reap and a signal sent through
/// [`RootProcess::while_unreaped`] exclude each other through one lock.
#[derive(Debug)]
pub struct RootProcess {
    pid: u32,
    /// Readable once the process has exited (`None`: poll instead).
    pidfd: Option<Registered<OwnedFd>>,
    /// The status read just before reaping (`waitid` cannot tell it after);
    /// `Some` once reaped.
    reaped: std::sync::Mutex<Option<ExitStatus>>,
}

impl RootProcess {
    pub(crate) fn new(pid: u32) -> Self {
        // Race-free: our unreaped child cannot be replaced by another process.
        let pidfd = open_pidfd(pid).ok().and_then(|fd| {
            // Outside a runtime, registering would panic: poll instead.
            tokio::runtime::Handle::try_current().ok()?;
            register(fd, tokio::io::Interest::READABLE).ok()
        });
        Self {
            pid,
            pidfd,
            reaped: std::sync::Mutex::new(None),
        }
    }

    /// The process id (as this process's pid namespace sees it).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Blocks the calling thread until the process exits, then reaps it and
    /// returns its status (for callers without a runtime).
    pub fn wait_blocking(&self) -> ExitStatus {
        // WNOWAIT: the process stays unreaped, so `reap` still reads its
        // status and no signal can reach a reused pid meanwhile.
        let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT;
        while let Err(nix::errno::Errno::EINTR) =
            waitid(Id::Pid(Pid::from_raw(self.pid as i32)), flags)
        {}
        self.reap()
    }

    fn reaped(&self) -> std::sync::MutexGuard<'_, Option<ExitStatus>> {
        self.reaped
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Completes when the process has exited (it stays unreaped).
    pub async fn exited(&self) {
        if let Some(pidfd) = &self.pidfd {
            // Readiness stays set once the process is gone: no need to clear.
            if pidfd.readable().await.is_ok() {
                return;
            }
        }
        while self.status() == ExitStatus::Running {
            tokio::time::sleep(EXIT_POLL).await;
        }
    }

    /// The exit status if it has exited, without reaping.
    pub fn status(&self) -> ExitStatus {
        if let Some(status) = *self.reaped() {
            return status;
        }
        peek(self.pid)
    }

    /// Reaps the process if it has exited; returns its status (`Running`
    /// while it runs). The status stays readable through
    /// [`RootProcess::status`].
    pub fn reap(&self) -> ExitStatus {
        let mut reaped = self.reaped();
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

    /// Reaps the process if it has exited; returns whether it did.
    pub fn reap_now(&self) -> bool {
        self.reap() != ExitStatus::Running
    }

    /// Reaps the process if it has exited; returns whether it did.
    pub fn try_reap(&mut self) -> bool {
        self.reap_now()
    }

    /// Runs `signal` while the process is certainly not reaped (so its pid,
    /// and its group id, are still its own).
    pub fn while_unreaped(&self, signal: impl FnOnce()) {
        let reaped = self.reaped();
        if reaped.is_none() {
            signal();
        }
    }
}

/// The status of our child `pid` if it has exited, without reaping it.
fn peek(pid: u32) -> ExitStatus {
    let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT | WaitPidFlag::WNOHANG;
    match waitid(Id::Pid(Pid::from_raw(pid as i32)), flags) {
        Ok(WaitStatus::Exited(_, code)) => ExitStatus::Code(code),
        Ok(WaitStatus::Signaled(_, signal, _)) => ExitStatus::Signal(signal),
        _ => ExitStatus::Running,
    }
}

impl Drop for RootProcess {
    /// Reaps the process once it exits, without blocking (after a SIGKILL on
    /// a dropped call, or for a job that outlives its table): an unreaped
    /// child would stay a zombie for as long as we live.
    fn drop(&mut self) {
        if self.try_reap() {
            return;
        }
        let pid = Pid::from_raw(self.pid as i32);
        let reap = move || {
            let _ = waitid(Id::Pid(pid), WaitPidFlag::WEXITED);
        };
        // A plain thread, not `spawn_blocking`: a runtime waits for its
        // blocking tasks when it shuts down, and this wait may be long.
        std::thread::spawn(reap);
    }
}
