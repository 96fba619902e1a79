//! A process of someone else's held by a pidfd ([`PinnedProcess`]).

use std::os::fd::OwnedFd;

use tokio::io::Interest;

use crate::fd::{open_pidfd, pidfd_send_signal, register};

/// A process held by a pidfd, so that signals and the wait reach it and
/// never a later process that took its pid.
#[derive(Debug)]
pub struct PinnedProcess {
    pid: u32,
    pidfd: OwnedFd,
}

impl PinnedProcess {
    /// `pid` if it is still the process that started at `start_time` (in
    /// clock ticks since boot, as `/proc/<pid>/stat` has it; `None`: any
    /// process with that pid) and has not exited.
    pub fn open(pid: u32, start_time: Option<u64>) -> Option<Self> {
        let pidfd = open_pidfd(pid).ok()?;
        // Checked after opening: the pidfd now pins whatever had the pid,
        // and a matching start time proves it is the process meant.
        let same = crate::tree::process_info(pid).is_some_and(|now| {
            !now.zombie && start_time.is_none_or(|start| start == now.start_time)
        });
        same.then_some(Self { pid, pidfd })
    }

    /// Its pid.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Sends `signal` to the pinned process.
    pub fn signal(&self, signal: nix::sys::signal::Signal) -> std::io::Result<()> {
        pidfd_send_signal(&self.pidfd, signal)
    }

    /// Completes when the process has exited (or at once when its pidfd
    /// cannot be watched). Needs a tokio runtime.
    pub async fn exited(&self) {
        if let Ok(copy) = self.pidfd.try_clone()
            && let Ok(watched) = register(copy, Interest::READABLE)
            && let Ok(mut guard) = watched.readable().await
        {
            guard.retain_ready();
        }
    }
}
