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
//! session, a server): [`launch()`] starts any process through the
//! [`SpawnWrapper`]s (the sandbox seam), [`OutputPump`] reads its pipes into
//! core's capture, [`ContainmentStrategy`] tracks and stops a tree,
//! [`LogDir`] manages log files, [`JobTable`] and [`RecordedJobs`] implement
//! the jobs port in this process and across processes.
//!
//! [`InteractiveJob`] runs a command in its own pseudo-terminal: it returns
//! when the command exits, when the kernel shows it waiting for input, or
//! at a yield time, and takes text and named [`Key`]s (see
//! `docs/interactive.md`).

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
mod clone_exec;
mod config;
mod containment;
mod editor_guards;
mod error;
mod exec;
mod exit_statuses;
mod fixed_width;
mod inherited_env;
mod interactive;
mod jobs;
mod kill;
mod logs;
mod owner;
mod posix_spawn;
mod program_path;
mod reader;
mod sandbox;
mod session;
mod spawn;
mod spawner;
mod state_dir;
mod tools;
mod wrap;

pub use config::{
    DEFAULT_KILL_GRACE, DEFAULT_MAX_LOG_BYTES, DEFAULT_MAX_LOG_FILE_BYTES, DEFAULT_MAX_LOG_FILES,
    LocalConfig, NO_EDITOR, NON_INTERACTIVE_ENV,
};
pub use containment::{Containment, ContainmentStrategy, SessionAndMarker};
pub use error::Error;
pub use exec::{DRAIN_AFTER_EXIT, FINAL_DRAIN, LEFTOVER_WAIT, LocalExec};
pub use interactive::{
    DEFAULT_COLUMNS, DEFAULT_ROWS, DEFAULT_SILENCE_FALLBACK, DEFAULT_TEXT_CAPACITY, DEFAULT_YIELD,
    Detection, INTERACTIVE_TERM, InteractiveJob, InteractiveOptions, JobExit,
    JobState as InteractiveState, KEY_NAMES, Key, MAX_COLUMNS, MAX_ROWS, PROBE_INTERVAL, Snapshot,
    TerminalModes, TerminalSize, TextRead, interactive_env, interactive_launch,
};
pub use jobs::{
    FINAL_LINE_PREFIX, JobRecord, JobStore, JobTable, RecordedJobs, Window, parse_final_line,
    read_after, read_last_lines, supervised_argv,
};
pub use kill::{
    MARKER_VARIABLE, ProcessInfo, ProcessTree, RunMarker, all_processes, is_alive, kill_survivors,
    process_info, signal_process,
};
pub use logs::{LogDir, LogHandle, LogWriter};
pub use owner::{OWNER_VARIABLE, Reaped, StopWithOwner, reap_orphans};
pub use reader::OutputPump;
pub use sandbox::{
    Capabilities, NetworkMode, SANDBOX_VARIABLE, Sandbox, SandboxConfig, SandboxMode, StatePaths,
    probe, sandbox_for, sandbox_info, wrappers_for,
};
pub use session::{Session, SessionConfig};
pub use spawn::{
    ChildIo, ExitStatus, MAX_INLINE_SCRIPT, Output, RootProcess, Sink, SpawnRequest, Spawned,
    child_environment, launch, resolve_cwd, spawn,
};
pub use spawner::Spawner;
pub use state_dir::{default_state_dir, ensure_private_dir, verify_private};
pub use tools::available_tools;
pub use wrap::{Launch, SpawnWrapper, Wrappers, apply_wrappers, need_pre_exec};
