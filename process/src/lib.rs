//! `bashtool-process`: the one way bashtool starts a process, and the
//! process-tree tracker that stops everything it started.
//!
//! [`launch`] starts a program as the leader of a new session with its
//! standard streams on pipes, files, `/dev/null` or a pseudo-terminal
//! ([`launch_on_terminal`]), through `posix_spawn`, or through a `clone`
//! child that shares our memory until it execs when a [`Wrapper`] (a
//! sandbox, a parent-death signal) must take steps in it. It returns a
//! [`RootProcess`], a handle that tells when the process exited without
//! reaping it, so that its process group cannot be reused while the tree is
//! being stopped. [`ProcessTree`] finds the tree (the session, processes
//! carrying a [`RunMarker`], their descendants, the orphans a sandbox's
//! init adopted) and stops it: SIGTERM, a grace, SIGKILL.
//!
//! It is not a sandbox (see `bashtool-sandbox`, which implements
//! [`Wrapper`]) and it runs no shell of its own. Linux only.
//!
//! ```no_run
//! # async fn demo() -> Result<(), bashtool_process::Error> {
//! use bashtool_process::{ChildIo, Launch, Sink, launch};
//!
//! let launched = launch(
//!     Launch {
//!         argv: vec!["sh".into(), "-c".into(), "echo hi".into()],
//!         env: vec![("PATH".into(), "/usr/bin:/bin".into())],
//!         cwd: "/".into(),
//!     },
//!     &[],
//!     ChildIo { stdout: Sink::Pipe, ..ChildIo::null() },
//!     None,
//! )?;
//! launched.root.exited().await;
//! assert!(launched.root.reap_now());
//! # Ok(())
//! # }
//! ```

// The kernel's process interface: `clone`, `posix_spawn`, pidfds, steps in
// a child that shares our memory. Every `unsafe` block says why it is
// sound; implementing the `Wrapper` seam is itself `unsafe`.
#![warn(missing_docs)]
#![allow(unsafe_code)]
#![warn(clippy::undocumented_unsafe_blocks)]

mod cgroup;
mod clone;
mod command;
mod containment;
mod current;
mod error;
mod exit_statuses;
mod fd;
pub mod fixed_width;
mod helper;
mod launch;
mod owner;
mod pinned;
mod posix_spawn;
mod program_path;
mod pty;
mod root;
mod spawner;
mod tree;
mod wrapper;

pub use cgroup::{
    CgroupContainment, CgroupHost, CgroupLimits, CgroupVersion, Cgroups, CommandCgroup, Controller,
    CounterFile, Counters, Hierarchy, JoinCgroup, join_first, sweep_lingering_cgroups,
};
pub use command::{ChildIo, Launch, Sink};
pub use containment::{Containment, ContainmentStrategy, SessionAndMarker};
pub use current::{NotSingleThreaded, release_free_memory, remove_env_var};
pub use error::Error;
pub use exit_statuses::keep_exit_statuses;
pub use fd::{EpollSet, OwnsDescriptor, Registered, open_pidfd, pidfd_send_signal, register};
pub use helper::{ChildSteps, HelperEnd, fork_helper, reap_child, run_in_helper, wait_with_peak};
pub use launch::{Launched, launch};
pub use owner::{OWNER_VARIABLE, Reaped, StopWithOwner, reap_orphans};
pub use pinned::PinnedProcess;
pub use program_path::resolve as resolve_program;
pub use pty::{
    DEFAULT_COLUMNS, DEFAULT_ROWS, MAX_COLUMNS, MAX_ROWS, Pty, TerminalModes, TerminalSize,
    launch_on_terminal,
};
pub use root::{ExitStatus, RootProcess};
pub use spawner::Spawner;
pub use tree::{
    MARKER_VARIABLE, MARKER_WIDTH, ProcessInfo, ProcessTree, RunMarker, all_processes,
    group_is_empty, is_alive, kill_survivors, process_info, signal_process, stopped_with_children,
};
pub use wrapper::{
    Confinement, Realm, RealmRequest, Summary, Wrapper, Wrappers, apply_wrappers, need_pre_exec,
    need_pre_fork, realm_of,
};
