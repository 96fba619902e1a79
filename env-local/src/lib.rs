//! `bashtool-env-local`: the real-process environment of the bash tool.
//!
//! [`LocalExec`] implements [`bashtool_core::CommandExec`] with real `bash`
//! processes on Linux: each command runs as `bash -c <command>` in a new
//! session (its own process group, no controlling terminal), stdin
//! `/dev/null`, a non-interactive environment (pagers off, editors and
//! prompts fail at once). It never hangs on a leftover process holding the
//! output pipe, stops the whole process tree (setsid escapees included) on
//! timeout and cancel, keeps memory bounded whatever the output size, and
//! streams every call's cleaned output to a log file. Background jobs run
//! detached under a supervisor that records how they ended, with their
//! output in a file; [`LocalExec`] implements the [`bashtool_core::Jobs`]
//! port over them.
//!
//! Commands run confined by [`LocalConfig::confinement`], a sandbox's
//! settings (`bashtool-sandbox`, by default workspace-write): this
//! environment makes its sandbox from them, and each session its own (see
//! `docs/sandbox.md`). Processes start through `bashtool-process`, the one
//! launch path; this crate is the orchestration on top of it: stateless
//! calls, sessions, jobs, interactive screens, logs.
//!
//! ```no_run
//! # async fn demo() {
//! use std::sync::Arc;
//! use bashtool_core::{BashTool, ToolConfig};
//! use bashtool_env_local::{LocalConfig, LocalExec};
//!
//! let exec = LocalExec::new(LocalConfig::default());
//! let tool = BashTool::new(ToolConfig::default(), Arc::new(exec.clone()));
//! let result = tool.call(serde_json::json!({"command": "echo hi"})).await;
//! println!("{}", result.text()); // "stdout:\nhi\nexit code 0"
//! exec.shutdown().await;
//! # }
//! ```
//!
//! [`Session`] is the persistent kind: one long-lived bash per conversation,
//! so that the cwd, variables, functions and aliases carry over between calls
//! (see `docs/sessions.md`).
//!
//! [`RecordedJobs`] implements the jobs port across processes (`bashtool
//! jobs`), over the records a [`JobStore`] keeps; [`LogDir`] is the log
//! directory, capped across processes.
//!
//! [`InteractiveJob`] runs a command in its own pseudo-terminal: it returns
//! when the command exits, when the kernel shows it waiting for input, or
//! at a yield time, and takes text and named [`Key`]s (see
//! `docs/interactive.md`).

#![warn(missing_docs)]
#![forbid(unsafe_code)]

// Linux only (process groups, /proc, pidfd_open, bash): one clear error
// naming the OS elsewhere, rather than a screen of unresolved symbols.
#[cfg(target_os = "macos")]
compile_error!(
    "bashtool-env-local runs only on Linux, not on macOS: it needs process groups, /proc, pidfd_open (Linux 5.3+) and bash"
);
#[cfg(target_os = "windows")]
compile_error!(
    "bashtool-env-local runs only on Linux, not on Windows: it needs process groups, /proc, pidfd_open (Linux 5.3+) and bash"
);
#[cfg(all(
    not(target_os = "linux"),
    not(target_os = "macos"),
    not(target_os = "windows")
))]
compile_error!(
    "bashtool-env-local runs only on Linux, not on this OS: it needs process groups, /proc, pidfd_open (Linux 5.3+) and bash"
);

mod call_log;
mod config;
mod confine;
mod denial;
mod editor_guards;
mod error;
mod exec;
mod inherited_env;
mod interactive;
mod jobs;
mod limits;
mod log_writer;
mod logs;
mod orphans;
mod reader;
mod realm;
mod redact_filter;
mod session;
mod spawn;
mod state_dir;
mod tools;

pub use config::{
    DEFAULT_KILL_GRACE, DEFAULT_MAX_LOG_BYTES, DEFAULT_MAX_LOG_FILE_BYTES, DEFAULT_MAX_LOG_FILES,
    LocalConfig,
};
pub use confine::{describe_sandbox, sandbox_info};
pub use error::Error;
pub use exec::LocalExec;
pub use interactive::{
    Detection, InteractiveJob, InteractiveOptions, JobState as InteractiveState, Key,
    PROBE_INTERVAL, Snapshot, interactive_launch,
};
pub use jobs::{JobStore, RecordedJobs};
pub use limits::limits_info;
pub use logs::LogDir;
pub use orphans::{Reaped, reap_orphans};
pub use redact_filter::run_redact_filter;
pub use session::{Session, SessionConfig};
pub use state_dir::{default_state_dir, ensure_private_dir};
pub use tools::available_tools;
