//! Finding and stopping the processes of a session's shell. Minimal on
//! purpose: to be replaced by env-local's process-tree module.
//!
//! The shell leads its own session (`setsid`), so everything it starts is in
//! that session unless it calls `setsid` itself; those escapees are found by
//! the per-call marker variable in `/proc/<pid>/environ`, and by parent links.
//! Waiting uses pidfds (readable when the process exits), not polling.

use std::collections::{HashMap, HashSet};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::unix::AsyncFd;

/// How long to wait for SIGKILL to take effect.
const KILL_WAIT: Duration = Duration::from_secs(1);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Process {
    pub pid: u32,
    parent: u32,
    session: u32,
    zombie: bool,
}

fn read_stat(pid: u32) -> Option<Process> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The name is in parentheses and may contain anything: fields start
    // after the last `)`.
    let fields: Vec<&str> = stat.get(stat.rfind(')')? + 2..)?.split(' ').collect();
    Some(Process {
        pid,
        parent: fields.get(1)?.parse().ok()?,
        session: fields.get(3)?.parse().ok()?,
        zombie: matches!(*fields.first()?, "Z" | "X"),
    })
}

fn all_processes() -> Vec<Process> {
    let own = std::process::id();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != own)
        .filter_map(read_stat)
        .collect()
}

fn carries_marker(pid: u32, needle: &[u8]) -> bool {
    std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|environ| {
        environ.starts_with(&needle[1..])
            || environ.windows(needle.len()).any(|window| window == needle)
    })
}

/// Live processes of the shell `shell_pid` other than the shell itself:
/// its session, its descendants, and those carrying `marker`
/// (`BASHTOOL_RUN_ID=<marker>`), with their descendants.
pub(crate) fn members(shell_pid: u32, marker: Option<&str>) -> Vec<Process> {
    let all = all_processes();
    let needle = marker
        .map(|marker| format!("\0{}={marker}\0", super::driver::MARKER_VARIABLE).into_bytes());
    let mut found: HashSet<u32> = HashSet::from([shell_pid]);
    for process in all.iter().filter(|process| !process.zombie) {
        if process.session == shell_pid
            || needle
                .as_deref()
                .is_some_and(|needle| carries_marker(process.pid, needle))
        {
            found.insert(process.pid);
        }
    }
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    for process in all.iter().filter(|process| !process.zombie) {
        children
            .entry(process.parent)
            .or_default()
            .push(process.pid);
    }
    let mut stack: Vec<u32> = found.iter().copied().collect();
    while let Some(pid) = stack.pop() {
        for &child in children.get(&pid).into_iter().flatten() {
            if found.insert(child) {
                stack.push(child);
            }
        }
    }
    all.into_iter()
        .filter(|process| {
            !process.zombie && process.pid != shell_pid && found.contains(&process.pid)
        })
        .collect()
}

/// A handle on one process that outlives pid reuse.
struct PidFd(AsyncFd<OwnedFd>);

impl PidFd {
    fn open(pid: u32) -> Option<Self> {
        // SAFETY: pidfd_open takes a pid and flags and returns a new fd or
        // -1; no memory is shared.
        #[allow(unsafe_code)]
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
        if fd < 0 {
            return None;
        }
        // SAFETY: the kernel just returned this fd; we are its only owner.
        #[allow(unsafe_code)]
        let fd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
        // SAFETY: the OwnedFd is moved into the AsyncFd, which owns it until
        // dropped; nothing else closes or replaces it.
        #[allow(unsafe_code)]
        let registered =
            unsafe { AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE) };
        registered.ok().map(PidFd)
    }

    fn signal(&self, signal: Signal) {
        // SAFETY: pidfd_send_signal with a null siginfo and no flags; the fd
        // stays open for the duration of the call.
        #[allow(unsafe_code)]
        unsafe {
            libc::syscall(
                libc::SYS_pidfd_send_signal,
                self.0.get_ref().as_raw_fd(),
                signal as libc::c_int,
                std::ptr::null::<libc::siginfo_t>(),
                0,
            );
        }
    }

    /// Resolves when the process has exited (a pidfd polls readable then).
    async fn exited(&self) {
        if let Ok(mut guard) = self.0.readable().await {
            guard.retain_ready();
        }
    }
}

/// Stops the processes `pids`: SIGTERM, up to `grace` for them to exit,
/// then SIGKILL. With `group`, that process group is signalled too
/// (atomically, including processes forked meanwhile). Returns how many of
/// `pids` were still there to be signalled.
pub(crate) async fn stop(pids: &[u32], group: Option<u32>, grace: Duration) -> usize {
    let handles: Vec<PidFd> = pids.iter().filter_map(|&pid| PidFd::open(pid)).collect();
    let signal_all = |signal: Signal| {
        if let Some(group) = group {
            let _ = killpg(Pid::from_raw(group as i32), signal);
        }
        for handle in &handles {
            handle.signal(signal);
        }
    };
    signal_all(Signal::SIGTERM);
    let all_exited = async {
        for handle in &handles {
            handle.exited().await;
        }
    };
    if tokio::time::timeout(grace, all_exited).await.is_err() {
        signal_all(Signal::SIGKILL);
        let all_exited = async {
            for handle in &handles {
                handle.exited().await;
            }
        };
        let _ = tokio::time::timeout(KILL_WAIT, all_exited).await;
    }
    handles.len()
}

/// SIGKILL to the shell's process group, without waiting (for `Drop`).
pub(crate) fn kill_group_now(shell_pid: u32) {
    let _ = killpg(Pid::from_raw(shell_pid as i32), Signal::SIGKILL);
}
