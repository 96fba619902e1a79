//! `bashtool-sandbox`: the OS sandbox of bashtool, a `Wrapper` of
//! `bashtool-process` that confines every process launched through it.
//!
//! Each [`Sandbox`] has a realm of its own (`realm.rs`): a pid namespace
//! with its own `/proc` (the launching process and the rest of the host are
//! invisible), a mount namespace where git's code-running files are
//! read-only, the launching program's state is hidden, and `/dev/shm` and
//! the terminals are private, an IPC namespace, and with the network off a
//! network namespace with only a loopback; with the network limited to
//! allowed domains, that namespace and a proxy outside it (`proxy/`) that
//! lets through only connections to those domains. Reads anywhere; writes only
//! beneath the writable roots (Landlock); the system calls that would undo
//! the rest denied (seccomp); root keeps only the capabilities a build
//! uses. All of it is inherited by whatever the command starts, setsid
//! escapees included, and everything left in the realm dies with it.
//!
//! It is not a policy on commands (bashtool-core's safety policy is), and
//! it does not start processes itself: `bashtool_process::launch` does,
//! with the sandbox among its wrappers. Linux only, but for its settings
//! ([`SandboxConfig`], the allowed domains), which build everywhere (the
//! relay build on macOS and Windows sends them to a `serve` on Linux).
//! When the kernel cannot
//! enforce the requested mode, [`Sandbox::new`] fails with an error naming
//! the missing feature: a command never runs silently unsandboxed. See
//! `docs/sandbox.md` for the design and measurements.
//!
//! ```no_run
//! # fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use bashtool_process::{ChildIo, Launch, Sink, Wrapper, launch};
//! use bashtool_sandbox::{Sandbox, SandboxConfig};
//!
//! let workspace = std::path::Path::new("/home/me/project");
//! let sandbox: Arc<dyn Wrapper> = Sandbox::new(&SandboxConfig::default(), workspace, None)?;
//! // `touch ~/.bashrc` is refused; writing in the workspace works.
//! let launched = launch(
//!     Launch {
//!         argv: vec!["bash".into(), "-c".into(), "touch ~/.bashrc".into()],
//!         env: std::env::vars_os().collect(),
//!         cwd: workspace.to_path_buf(),
//!     },
//!     &[sandbox],
//!     ChildIo { stderr: Sink::Pipe, ..ChildIo::null() },
//!     None,
//! )?;
//! # drop(launched);
//! # Ok(())
//! # }
//! ```

// The kernel's sandboxing interfaces: namespaces, mounts, Landlock,
// seccomp, capabilities, steps in a child that shares our memory. Every
// `unsafe` block says why it is sound.
#![warn(missing_docs)]
#![allow(unsafe_code)]
#![warn(clippy::undocumented_unsafe_blocks)]

// The settings, the allowed domains and the errors are plain data and
// build everywhere (the relay build on macOS and Windows reads the same
// `[sandbox]` and flags to send them to a `serve` on Linux); the sandbox
// itself is Linux only.
mod config;
mod domains;
mod error;

#[cfg(target_os = "linux")]
mod caches;
#[cfg(target_os = "linux")]
mod child;
#[cfg(target_os = "linux")]
mod git;
#[cfg(target_os = "linux")]
mod git_audit;
#[cfg(target_os = "linux")]
mod landlock;
#[cfg(target_os = "linux")]
mod mounts;
#[cfg(target_os = "linux")]
mod namespaces;
#[cfg(target_os = "linux")]
mod paths;
#[cfg(target_os = "linux")]
mod prepared;
#[cfg(target_os = "linux")]
mod probe;
#[cfg(target_os = "linux")]
mod proxy;
#[cfg(target_os = "linux")]
mod realm;
#[cfg(target_os = "linux")]
mod seccomp;
#[cfg(target_os = "linux")]
mod watch;

pub use config::{Network, NetworkMode, SandboxConfig, SandboxMode};
pub use domains::{AllowList, REGISTRIES, REGISTRIES_PRESET, normalize_domain};
pub use error::Error;
#[cfg(target_os = "linux")]
pub use paths::StatePaths;
#[cfg(target_os = "linux")]
pub use prepared::Sandbox;
#[cfg(target_os = "linux")]
pub use probe::{Capabilities, probe};
#[cfg(target_os = "linux")]
pub use proxy::PROXY_PORT;

/// Set in every sandboxed command's environment to the mode's name, so
/// scripts (and the model) can tell.
pub const SANDBOX_VARIABLE: &str = "BASHTOOL_SANDBOX";
