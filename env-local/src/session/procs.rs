//! Stopping what a session's command leaves behind, with env-local's
//! process tree: the shell's session, `setsid` escapees found by the call's
//! marker, and their descendants.
//!
//! Leftovers of a command that ended normally share the shell's process
//! group (no job control), so they are signalled one by one, never through
//! the group, which would take the shell along. Waiting on them uses pidfds
//! (readable when the process exits), not polling.

use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use bashtool_process::{PinnedProcess, ProcessInfo, ProcessTree, RunMarker};

/// How long to wait for SIGKILL to take effect.
const KILL_WAIT: Duration = Duration::from_secs(1);

/// The processes of the running shell `shell_pid` other than the shell.
pub(crate) fn leftovers(
    shell_pid: u32,
    marker: &RunMarker,
    adopter: Option<u32>,
) -> Vec<ProcessInfo> {
    ProcessTree::new(shell_pid, Some(marker.clone()))
        .with_adopter(adopter)
        .members(true)
}

/// The processes a call started, once its shell is gone (its pid may
/// already be reused, so only the marker identifies them).
pub(crate) fn marked(marker: &RunMarker, adopter: Option<u32>) -> Vec<ProcessInfo> {
    ProcessTree::by_marker(marker.clone())
        .with_adopter(adopter)
        .members(true)
}

/// Stops the whole tree of the shell, the shell included: first the shell
/// alone, then SIGTERM to its group and every member, the rest of `grace`,
/// then SIGKILL. The shell must not be reaped yet (its pid is the group
/// id).
///
/// The shell goes first because bash, when it reaps a foreground command
/// killed by a signal before it has handled its own SIGTERM, reports it
/// ("Terminated") on the command's stderr, which is the call's output: a
/// line the command never wrote. Signalled alone, bash leaves its wait at
/// once, runs its EXIT trap (which saves the state) and exits, reporting
/// nothing. A shell that ignores SIGTERM (a `trap '' TERM` of the command)
/// is waited for no longer than `grace` in all.
pub(crate) async fn stop_shell_tree(
    shell_pid: u32,
    marker: &RunMarker,
    adopter: Option<u32>,
    grace: Duration,
) {
    let started = std::time::Instant::now();
    if let Some(shell) = PinnedProcess::open(shell_pid, None) {
        let _ = shell.signal(Signal::SIGTERM);
        // A shell stopped by the command keeps SIGTERM pending until then.
        let _ = shell.signal(Signal::SIGCONT);
        let _ = tokio::time::timeout(grace, shell.exited()).await;
    }
    ProcessTree::new(shell_pid, Some(marker.clone()))
        .with_adopter(adopter)
        .terminate(grace.saturating_sub(started.elapsed()), true)
        .await;
}

async fn all_exited(handles: &[PinnedProcess]) {
    for handle in handles {
        handle.exited().await;
    }
}

/// Stops `processes`: SIGTERM, up to `grace` for them to exit, then
/// SIGKILL. Returns how many were still there to be signalled.
pub(crate) async fn stop(processes: &[ProcessInfo], grace: Duration) -> usize {
    let handles: Vec<PinnedProcess> = processes
        .iter()
        .filter_map(|info| PinnedProcess::open(info.pid, Some(info.start_time)))
        .collect();
    for handle in &handles {
        let _ = handle.signal(Signal::SIGTERM);
    }
    if tokio::time::timeout(grace, all_exited(&handles))
        .await
        .is_err()
    {
        for handle in &handles {
            let _ = handle.signal(Signal::SIGKILL);
        }
        let _ = tokio::time::timeout(KILL_WAIT, all_exited(&handles)).await;
    }
    handles.len()
}

/// SIGKILL to the shell's process group, without waiting. Only while the
/// shell is not reaped: its pid is the group id until then.
pub(crate) fn kill_group_now(shell_pid: u32) {
    let _ = killpg(Pid::from_raw(shell_pid as i32), Signal::SIGKILL);
}

/// SIGKILL to the shell's group and every process left in its session
/// (a disowned job, a double fork), without waiting (for `Drop`).
pub(crate) fn kill_tree_now(shell_pid: u32) {
    ProcessTree::new(shell_pid, None).kill_now(false);
}

/// Stops a call's whole tree, setsid escapees included, if the call is
/// dropped before it ended (its future cancelled): the shell's own `Drop`
/// knows only its session, not the call's marker.
pub(crate) struct KillCallOnDrop<'a> {
    pub shell_pid: u32,
    pub marker: RunMarker,
    pub adopter: Option<u32>,
    pub armed: bool,
    /// The session's cgroup: what the tracker cannot see is in it.
    pub cgroup: Option<&'a crate::limits::CallCgroup>,
}

impl Drop for KillCallOnDrop<'_> {
    fn drop(&mut self) {
        if self.armed {
            ProcessTree::new(self.shell_pid, Some(self.marker.clone()))
                .with_adopter(self.adopter)
                .kill_now(true);
            if let Some(cgroup) = self.cgroup {
                cgroup.kill_rest();
            }
        }
    }
}
