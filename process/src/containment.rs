//! The containment seam: how a command's process tree is tracked and
//! stopped. The environment chooses the strategy
//! ([`crate::LocalConfig::containment`]); every command, session shell and
//! job is tracked through it.
//!
//! [`SessionAndMarker`], the default, needs no privilege: the command leads
//! its own session and process group, and processes that leave them are
//! found by an inherited marker variable (see [`crate::kill`]). Other
//! strategies (a pid namespace, a cgroup with `cgroup.kill`) plug in here.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use nix::sys::signal::Signal;

use crate::tree::{ProcessInfo, ProcessTree, RunMarker};

/// One command's process tree, as a strategy tracks it.
#[async_trait::async_trait]
pub trait Containment: Send + Sync + fmt::Debug {
    /// Live processes of the tree other than its root; with `escapees`, also
    /// those that left the root's session.
    fn members(&self, escapees: bool) -> Vec<ProcessInfo>;

    /// Sends `signal` to every process of the tree (escapees included);
    /// returns the members found.
    fn signal_all(&self, signal: Signal) -> Vec<ProcessInfo>;

    /// SIGTERM to the whole tree, up to `grace` for it to end, then SIGKILL
    /// until nothing is left. Returns how many processes besides the root
    /// were found. The root must not be reaped before this returns.
    async fn terminate(&self, grace: Duration) -> usize;

    /// SIGKILL to the whole tree at once, without waiting (for `Drop`).
    fn kill_now(&self);
}

/// Makes the [`Containment`] of each new root process.
pub trait ContainmentStrategy: Send + Sync + fmt::Debug {
    /// Tracks the tree of `root_pid` (our unreaped child, leader of its own
    /// session), whose processes carry `marker` in their environment, and
    /// whose orphans `adopter` (a sandbox's init) takes once the root ended.
    fn contain(
        &self,
        root_pid: u32,
        marker: &RunMarker,
        adopter: Option<u32>,
    ) -> Arc<dyn Containment>;
}

/// Today's strategy: the root's session and process group, plus processes
/// carrying the run marker and their descendants.
#[derive(Debug, Clone, Copy, Default)]
pub struct SessionAndMarker;

impl ContainmentStrategy for SessionAndMarker {
    fn contain(
        &self,
        root_pid: u32,
        marker: &RunMarker,
        adopter: Option<u32>,
    ) -> Arc<dyn Containment> {
        Arc::new(ProcessTree::new(root_pid, Some(marker.clone())).with_adopter(adopter))
    }
}

#[async_trait::async_trait]
impl Containment for ProcessTree {
    fn members(&self, escapees: bool) -> Vec<ProcessInfo> {
        ProcessTree::members(self, escapees)
    }

    fn signal_all(&self, signal: Signal) -> Vec<ProcessInfo> {
        ProcessTree::signal_all(self, signal, true)
    }

    async fn terminate(&self, grace: Duration) -> usize {
        ProcessTree::terminate(self, grace, true).await
    }

    fn kill_now(&self) {
        ProcessTree::kill_now(self, true);
    }
}
