//! A command's tree tracked through its cgroup as well as by the process
//! tree tracker: the cgroup holds everything the command started, however
//! it left the session and whatever it did to its environment, and with
//! cgroup v2 `cgroup.kill` stops all of it at once. The tracker stays, for
//! what is not in the cgroup (a process that wrote itself elsewhere, which
//! only an unsandboxed command can).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use nix::sys::signal::Signal;
use tokio::time::Instant;

use super::group::CommandCgroup;
use crate::containment::Containment;
use crate::tree::{ProcessInfo, process_info};

/// How often a stopping cgroup is checked for what is left.
const POLL_INTERVAL: Duration = Duration::from_millis(10);
/// How long SIGKILL may take (a process in uninterruptible sleep).
const KILL_WAIT: Duration = Duration::from_secs(5);

/// [`Containment`] by a command's cgroup and an inner strategy (the
/// session and marker tracker).
#[derive(Debug)]
pub struct CgroupContainment {
    inner: Arc<dyn Containment>,
    cgroup: Arc<CommandCgroup>,
    /// The command's own process, which is not counted as a member.
    root: u32,
}

impl CgroupContainment {
    /// Tracks what `inner` tracks and everything in `cgroup`, whose
    /// command's own process is `root`.
    pub fn new(inner: Arc<dyn Containment>, cgroup: Arc<CommandCgroup>, root: u32) -> Self {
        Self {
            inner,
            cgroup,
            root,
        }
    }

    /// The cgroup it stops.
    pub fn cgroup(&self) -> &Arc<CommandCgroup> {
        &self.cgroup
    }

    /// SIGKILL to everything in the cgroup, repeated until it is empty (or
    /// `limit`): `cgroup.kill` where there is one, else each member.
    async fn kill_until_empty(&self, limit: Duration) {
        let deadline = Instant::now() + limit;
        loop {
            if !self.cgroup.kill() {
                self.cgroup.signal_members(Signal::SIGKILL);
            }
            if self.cgroup.is_empty() || Instant::now() >= deadline {
                return;
            }
            tokio::time::sleep(POLL_INTERVAL).await;
        }
    }
}

#[async_trait::async_trait]
impl Containment for CgroupContainment {
    fn members(&self, escapees: bool) -> Vec<ProcessInfo> {
        let mut members = self.inner.members(escapees);
        if escapees {
            let known: HashSet<u32> = members.iter().map(|info| info.pid).collect();
            members.extend(
                self.cgroup
                    .members()
                    .into_iter()
                    .filter(|pid| !known.contains(pid) && *pid != self.root)
                    .filter_map(process_info)
                    .filter(|info| !info.zombie),
            );
        }
        members
    }

    fn signal_all(&self, signal: Signal) -> Vec<ProcessInfo> {
        let members = self.inner.signal_all(signal);
        self.cgroup.signal_members(signal);
        members
    }

    /// SIGTERM to the tree and the cgroup, up to `grace` for the cgroup to
    /// empty, then SIGKILL to all of it at once; then the tracker, for
    /// anything outside the cgroup.
    async fn terminate(&self, grace: Duration) -> usize {
        let mut found: HashSet<u32> = self
            .inner
            .signal_all(Signal::SIGTERM)
            .iter()
            .map(|info| info.pid)
            .collect();
        found.extend(self.cgroup.signal_members(Signal::SIGTERM));
        // A stopped process keeps SIGTERM pending until it is continued.
        self.inner.signal_all(Signal::SIGCONT);
        self.cgroup.signal_members(Signal::SIGCONT);
        let deadline = Instant::now() + grace;
        while !self.cgroup.is_empty() && Instant::now() < deadline {
            tokio::time::sleep(POLL_INTERVAL).await;
            // Forked since: they get SIGTERM too.
            for pid in self.cgroup.members() {
                if found.insert(pid)
                    && let Some(info) = process_info(pid)
                {
                    crate::tree::signal_process(&info, Signal::SIGTERM);
                }
            }
        }
        if !self.cgroup.is_empty() {
            self.kill_until_empty(KILL_WAIT).await;
        }
        found.remove(&self.root);
        // What left the cgroup: no grace left for it.
        let outside = self.inner.terminate(Duration::ZERO).await;
        found.len().max(outside)
    }

    fn kill_now(&self) {
        if !self.cgroup.kill() {
            self.cgroup.signal_members(Signal::SIGKILL);
        }
        self.inner.kill_now();
    }
}
