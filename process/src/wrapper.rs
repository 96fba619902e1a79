//! The seam through which a sandbox, a parent-death signal or limits reach
//! every process started by [`crate::launch`].
//!
//! A [`Wrapper`] may, each optionally:
//! - rewrite what is launched ([`Wrapper::wrap`]), in the parent before the
//!   fork: prefix the program line, add or remove variables;
//! - take a step in a first child before the command's process is made
//!   ([`Wrapper::pre_fork`]): a step that changes where the caller's
//!   *children* go, such as joining a pid namespace;
//! - take a step in the command's process between fork and exec
//!   ([`Wrapper::pre_exec`]): Landlock, a seccomp filter, rlimits, a
//!   parent-death signal;
//! - offer a [`Spawner`], a thread that took its inheritable steps once, to
//!   make the command's process (the child then takes only
//!   [`Wrapper::pre_exec_on_spawner`]).
//!
//! Steps in a child run where the child shares our memory (a `clone` with
//! `CLONE_VM | CLONE_VFORK`, see `clone.rs`), not in a `fork`, which would
//! copy the page tables: that is why implementing the seam is `unsafe`.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use crate::command::Launch;
use crate::error::Error;
use crate::spawner::Spawner;

/// One step of how every process is launched.
///
/// # Safety
///
/// [`Wrapper::pre_fork`], [`Wrapper::pre_exec`] and
/// [`Wrapper::pre_exec_on_spawner`] run in a child that shares the parent's
/// memory until it execs, while the parent's other threads run on, with
/// every signal blocked. An implementation of them must:
/// - call only async-signal-safe functions (plain system calls);
/// - not allocate or free memory, take a lock, or touch anything another
///   thread may be using (the allocator's and stdio's locks may be held by
///   a thread that no longer runs in the child);
/// - write no memory but its own stack (the parent's memory is shared:
///   a write there is a write in the parent);
/// - act on the calling task only (system calls on data prepared
///   beforehand, in [`Wrapper::wrap`] or when the wrapper was made), and
///   return rather than exit or exec.
///
/// Breaking these rules corrupts the parent process: undefined behaviour.
pub unsafe trait Wrapper: Send + Sync + fmt::Debug {
    /// Rewrites what is launched. Runs in the parent before the spawn; may
    /// allocate and fail (the launch then fails with this error and nothing
    /// runs: a sandbox that cannot be applied is never silently skipped).
    fn wrap(&self, launch: &mut Launch) -> Result<(), Error> {
        let _ = launch;
        Ok(())
    }

    /// True when [`Wrapper::pre_exec`] must run in the child.
    fn needs_pre_exec(&self) -> bool {
        false
    }

    /// Runs in the command's process before exec, once it leads its own
    /// session, with every signal blocked, and before its stdio, its extra
    /// descriptors and its directory are put in place (so that a descriptor
    /// the step prepared cannot have been replaced by them). An error
    /// aborts the launch; the parent sees it as a spawn failure. See the
    /// trait's safety rules.
    fn pre_exec(&self) -> std::io::Result<()> {
        Ok(())
    }

    /// True when [`Wrapper::pre_fork`] must run.
    fn needs_pre_fork(&self) -> bool {
        false
    }

    /// Runs in a first child, which then makes the command's process (still
    /// our child: `CLONE_PARENT`) and exits. Skipped when the launch is made
    /// by this wrapper's spawner, whose thread took such steps itself. See
    /// the trait's safety rules.
    fn pre_fork(&self) -> std::io::Result<()> {
        Ok(())
    }

    /// A thread that has applied this wrapper's per-task steps to itself
    /// (see [`Spawner`]), for the launch about to start: that thread then
    /// makes the child, which runs [`Wrapper::pre_exec_on_spawner`] instead
    /// of `pre_fork` and `pre_exec`. `None` (the default, or when the
    /// thread cannot be had): the children take every step themselves.
    /// Only the first wrapper's spawner is used.
    fn spawner(&self) -> Option<Arc<Spawner>> {
        None
    }

    /// The steps left to a child made by [`Wrapper::spawner`]'s thread,
    /// under the trait's safety rules.
    fn pre_exec_on_spawner(&self) -> std::io::Result<()> {
        self.pre_exec()
    }

    /// What the wrapped processes live in, when it is more than the host's
    /// view: a pid namespace, a terminal multiplexer of their own (see
    /// [`Realm`]).
    fn realm(&self) -> Option<&dyn Realm> {
        None
    }

    /// False for a wrapper that ties the processes to this process's life
    /// (a parent-death signal): it must not apply to jobs meant to outlive
    /// it.
    fn applies_to_detached_jobs(&self) -> bool {
        true
    }
}

/// What a wrapper that puts its processes in a world of their own (a
/// sandbox's namespaces) tells the code that tracks and talks to them.
pub trait Realm: Send + Sync + fmt::Debug {
    /// The process that adopts a command's orphans once the command's own
    /// process is gone (the realm's init): the command's tree includes its
    /// children.
    fn adopter(&self) -> Option<u32>;

    /// The pid the host process `host_pid` has for the processes inside:
    /// `None` when it is not inside.
    fn inner_pid(&self, host_pid: u32) -> Option<u32>;

    /// The pseudo-terminal multiplexer a command's terminal must come from,
    /// so that it is a terminal the processes inside can see.
    fn terminal_multiplexer(&self) -> Option<PathBuf>;

    /// Called before each call a long-lived process inside runs (a
    /// session's shell): bring the realm up to date with the host. An
    /// error fails the call and nothing runs.
    fn before_call(&self) -> Result<(), Error>;

    /// Called after each call of a command inside: notes for the call's
    /// result (what the realm had to say about what the command did).
    fn after_call(&self) -> Vec<String>;
}

/// What a confinement (a sandbox) is, for reports: its mode, its network,
/// the roots commands may write to, the domains they may reach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    /// Its mode (`workspace-write`, `read-only`).
    pub mode: String,
    /// Its network (`on`, `off`, `allowlist`).
    pub network: String,
    /// The roots commands may write to.
    pub writable: Vec<PathBuf>,
    /// With the network `allowlist`: the domains commands may reach.
    pub allowed_domains: Vec<String>,
}

/// Where a new realm's processes will work, and what of the launching
/// program's own files the realm must hide, show read-only, or show to it
/// alone.
#[derive(Debug, Clone, Copy)]
pub struct RealmRequest<'a> {
    /// Where commands run by default (what a sandbox lets them write).
    pub workspace: &'a std::path::Path,
    /// Hidden whole (the program's state directory, its job records).
    pub hidden: &'a [PathBuf],
    /// Visible read-only even inside a hidden directory (the logs the
    /// model reads).
    pub shown: &'a [PathBuf],
    /// Visible and writable to this realm alone (a session's directory).
    pub private: &'a [PathBuf],
    /// What runs inside may outlive the program (detached jobs).
    pub kept: bool,
}

/// Makes the wrapper of a new realm (a sandbox of its own) for an
/// environment: once for a stateless environment, once for each session.
/// A sandbox's settings implement it; the environment says where.
pub trait Confinement: Send + Sync + fmt::Debug {
    /// A new realm's wrapper; an error when it cannot be enforced (never a
    /// silent fallback to running unconfined).
    fn confine(&self, request: &RealmRequest<'_>) -> Result<Arc<dyn Wrapper>, Error>;

    /// What the realms it makes for `workspace` are, without making one.
    fn summary(&self, workspace: &std::path::Path) -> Summary;

    /// A report of the realm `request` would get, for a person (what is
    /// writable, protected, hidden): it may make one to find out.
    fn describe(&self, request: &RealmRequest<'_>) -> Result<String, Error> {
        let summary = self.summary(request.workspace);
        Ok(format!(
            "mode: {}\nnetwork: {}\nwritable: {:?}\n",
            summary.mode, summary.network, summary.writable
        ))
    }
}

/// The wrappers of an environment, in the order they apply.
pub type Wrappers = Vec<Arc<dyn Wrapper>>;

/// Applies every wrapper's rewrite to `launch`, in order.
pub fn apply_wrappers(wrappers: &[Arc<dyn Wrapper>], launch: &mut Launch) -> Result<(), Error> {
    for wrapper in wrappers {
        wrapper.wrap(launch)?;
    }
    Ok(())
}

/// True when some wrapper needs a step in the child (never `posix_spawn`).
pub fn need_pre_exec(wrappers: &[Arc<dyn Wrapper>]) -> bool {
    wrappers.iter().any(|wrapper| wrapper.needs_pre_exec())
}

/// True when some wrapper needs a step before the command's process is
/// made (see [`Wrapper::pre_fork`]).
pub fn need_pre_fork(wrappers: &[Arc<dyn Wrapper>]) -> bool {
    wrappers.iter().any(|wrapper| wrapper.needs_pre_fork())
}

/// The first wrapper's realm, if any.
pub fn realm_of(wrappers: &[Arc<dyn Wrapper>]) -> Option<&dyn Realm> {
    wrappers.iter().find_map(|wrapper| wrapper.realm())
}
