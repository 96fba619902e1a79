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
//! detached with their output in a file, in a [`JobTable`].
//!
//! Commands run with the caller's rights unless a [`Sandbox`] wraps every
//! launch ([`wrappers_for`] turns [`LocalConfig::sandbox`] into one): writes
//! only beneath the writable roots, protected git hooks and config, the
//! network on or off (see `docs/sandbox.md`).
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
//! The pieces are public for environments built on top (a persistent
//! session): [`spawn()`] starts a command, [`OutputPump`] reads its pipes,
//! [`StreamCleaner`] cleans text, [`ProcessTree`] finds and stops a tree,
//! [`LogDir`] manages log files.

mod call_log;
mod clean;
mod config;
mod error;
mod exec;
mod jobs;
mod kill;
mod logs;
mod posix_spawn;
mod reader;
mod sandbox;
mod session;
mod spawn;
mod wrap;

pub use clean::{StreamCleaner, clean_text, collapse_carriage_returns};
pub use config::{
    DEFAULT_KILL_GRACE, DEFAULT_MAX_LOG_BYTES, DEFAULT_MAX_LOG_FILES, LocalConfig, NO_EDITOR,
    NON_INTERACTIVE_ENV,
};
pub use error::Error;
pub use exec::{DRAIN_AFTER_EXIT, FINAL_DRAIN, LEFTOVER_WAIT, LocalExec};
pub use jobs::{JobInfo, JobOutput, JobRead, JobStatus, JobTable, MAX_JOB_READ};
pub use kill::{
    MARKER_VARIABLE, ProcessInfo, ProcessTree, RunMarker, all_processes, is_alive, kill_survivors,
    process_info, signal_process,
};
pub use logs::{LogDir, LogHandle, LogWriter};
pub use reader::OutputPump;
pub use sandbox::{
    Capabilities, NetworkMode, SANDBOX_VARIABLE, Sandbox, SandboxConfig, SandboxMode, probe,
    sandbox_info, wrappers_for,
};
pub use session::{Session, SessionConfig};
pub use spawn::{
    ExitStatus, MAX_INLINE_SCRIPT, Output, RootProcess, SpawnRequest, Spawned, resolve_cwd, spawn,
};
pub use wrap::{Launch, SpawnWrapper, Wrappers, apply_wrappers, need_pre_exec};
