//! The spawn wrapper seam: how a sandbox, resource limits or a parent-death
//! signal reach every process env-local starts (stateless calls, the
//! session's shell, background and interactive jobs).
//!
//! A wrapper may do two things, both optional:
//! - rewrite what is launched ([`SpawnWrapper::wrap`]), in the parent, before
//!   the fork: prefix the program line (`bwrap … --`), add or remove
//!   variables, change the directory;
//! - run a step in the child between fork and exec
//!   ([`SpawnWrapper::pre_exec`]): restrict itself with Landlock, install a
//!   seccomp filter, set rlimits or a parent-death signal.
//!
//! Wrappers apply in the order they are listed in
//! [`crate::LocalConfig::wrappers`]. The steps run in a child that shares
//! our memory until it execs (`clone(CLONE_VM | CLONE_VFORK)`, see
//! `clone_exec`), not a `fork`, which would copy the page tables.

use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use bashtool_core::ExecError;

use crate::spawner::Spawner;

/// What is about to be launched, as wrappers see and may change it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    /// The program line; `argv[0]` is looked up in `PATH` when relative.
    pub argv: Vec<OsString>,
    /// The child's whole environment.
    pub env: Vec<(OsString, OsString)>,
    /// The child's working directory.
    pub cwd: PathBuf,
}

/// One step of how every process is launched.
pub trait SpawnWrapper: Send + Sync + fmt::Debug {
    /// Rewrites what is launched. Runs in the parent before the spawn; may
    /// allocate and fail (the call then fails with this error and nothing
    /// runs: a sandbox that cannot be applied is never silently skipped).
    fn wrap(&self, launch: &mut Launch) -> Result<(), ExecError> {
        let _ = launch;
        Ok(())
    }

    /// True when [`SpawnWrapper::pre_exec`] must run in the child.
    fn needs_pre_exec(&self) -> bool {
        false
    }

    /// Runs in the child before exec, once the child has its own session,
    /// with every signal blocked, and before its stdio, its extra
    /// descriptors and its directory are put in place (so that a descriptor
    /// the step prepared cannot have been replaced by them). The child shares the parent's memory until it execs
    /// (`clone(CLONE_VM | CLONE_VFORK)`, see `clone_exec`), and the parent's
    /// other threads run on meanwhile: the step must be async-signal-safe
    /// (no allocation, no locks), write no memory but its own stack, and
    /// act on the calling task only (system calls on data prepared
    /// beforehand). An error aborts the launch; the parent sees it as a
    /// spawn failure.
    fn pre_exec(&self) -> std::io::Result<()> {
        Ok(())
    }

    /// Called before each call a long-lived process started through this
    /// wrapper runs (a session's shell): a sandbox protects again what
    /// changed on the host since the shell started. An error fails the
    /// call and nothing runs.
    fn before_call(&self) -> Result<(), ExecError> {
        Ok(())
    }

    /// The pseudo-terminal multiplexer a command's terminal must come from
    /// (a sandbox's own `ptmx`): `None` for the host's `/dev/ptmx`.
    fn terminal_multiplexer(&self) -> Option<PathBuf> {
        None
    }

    /// The pid the process `host_pid` has for the commands launched
    /// through this wrapper (a sandbox's pid namespace numbers its own
    /// processes): `None` when it is the same.
    fn inner_pid(&self, host_pid: u32) -> Option<u32> {
        let _ = host_pid;
        None
    }

    /// Called after each call of a command launched through this wrapper
    /// (a stateless call, a session's call): notes for the call's result
    /// (a sandbox names the git files the command wrote that it had to
    /// check, and what it moved aside).
    fn after_call(&self) -> Vec<String> {
        Vec::new()
    }

    /// True when [`SpawnWrapper::pre_fork`] must run.
    fn needs_pre_fork(&self) -> bool {
        false
    }

    /// Runs in a first child, which then makes the child that takes the
    /// [`SpawnWrapper::pre_exec`] steps and execs (and exits itself): for a
    /// step that changes where the caller's *children* go, such as joining
    /// a pid namespace. The command's process is still our child. Same
    /// rules as [`SpawnWrapper::pre_exec`]. Skipped when the launch is made
    /// by this wrapper's spawner (whose thread took such steps itself).
    fn pre_fork(&self) -> std::io::Result<()> {
        Ok(())
    }

    /// The process that adopts the orphans of a command launched through
    /// this wrapper once the command's own process is gone (a sandbox's
    /// init): the command's tree includes them.
    fn adopter(&self) -> Option<u32> {
        None
    }

    /// A thread that has applied this wrapper's per-task steps to itself
    /// (see [`Spawner`]), for the launch about to start (after
    /// [`SpawnWrapper::wrap`]): that thread then makes the child, which
    /// runs [`SpawnWrapper::pre_exec_on_spawner`] instead of `pre_exec`.
    /// `None` (the default, or when the thread cannot be had): the child
    /// takes every step itself. Only the first wrapper's spawner is used.
    fn spawner(&self) -> Option<Arc<Spawner>> {
        None
    }

    /// The steps left to a child made by [`SpawnWrapper::spawner`]'s
    /// thread, under the rules of [`SpawnWrapper::pre_exec`].
    fn pre_exec_on_spawner(&self) -> std::io::Result<()> {
        self.pre_exec()
    }

    /// False for a wrapper that must not apply to background jobs meant to
    /// outlive the environment (`keep_jobs_on_drop`), such as tying
    /// processes to the life of this one. A sandbox applies to them too.
    fn applies_to_kept_jobs(&self) -> bool {
        true
    }
}

/// The wrappers of an environment, in the order they apply.
pub type Wrappers = Vec<Arc<dyn SpawnWrapper>>;

/// Applies every wrapper's rewrite to `launch`, in order.
pub fn apply_wrappers(
    wrappers: &[Arc<dyn SpawnWrapper>],
    launch: &mut Launch,
) -> Result<(), ExecError> {
    for wrapper in wrappers {
        wrapper.wrap(launch)?;
    }
    Ok(())
}

/// True when some wrapper needs a step in the child (never `posix_spawn`).
pub fn need_pre_exec(wrappers: &[Arc<dyn SpawnWrapper>]) -> bool {
    wrappers.iter().any(|wrapper| wrapper.needs_pre_exec())
}

/// The first wrapper's adopter (see [`SpawnWrapper::adopter`]).
pub fn adopter(wrappers: &[Arc<dyn SpawnWrapper>]) -> Option<u32> {
    wrappers.iter().find_map(|wrapper| wrapper.adopter())
}

/// Every wrapper's [`SpawnWrapper::before_call`], in order.
pub fn before_call(wrappers: &[Arc<dyn SpawnWrapper>]) -> Result<(), ExecError> {
    wrappers
        .iter()
        .try_for_each(|wrapper| wrapper.before_call())
}

/// The first wrapper's terminal multiplexer (see
/// [`SpawnWrapper::terminal_multiplexer`]).
pub fn terminal_multiplexer(wrappers: &[Arc<dyn SpawnWrapper>]) -> Option<PathBuf> {
    wrappers
        .iter()
        .find_map(|wrapper| wrapper.terminal_multiplexer())
}

/// The first wrapper's [`SpawnWrapper::inner_pid`] of `host_pid`.
pub fn inner_pid(wrappers: &[Arc<dyn SpawnWrapper>], host_pid: u32) -> Option<u32> {
    wrappers
        .iter()
        .find_map(|wrapper| wrapper.inner_pid(host_pid))
}

/// Every wrapper's [`SpawnWrapper::after_call`] notes, in order.
pub fn after_call(wrappers: &[Arc<dyn SpawnWrapper>]) -> Vec<String> {
    wrappers
        .iter()
        .flat_map(|wrapper| wrapper.after_call())
        .collect()
}
