//! The ports: how the pure tool asks an environment to run a command
//! ([`CommandExec`]) and to approve one ([`Approval`]).

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::environment::EnvironmentInfo;
use crate::error::ExecError;
use crate::output::{OutputBuffer, OutputCapture, OutputSink};

/// How the command is run: in the foreground with a timeout, or detached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExecMode {
    /// Wait for the command, up to its timeout.
    #[default]
    Foreground,
    /// Return at once with a pid and an output file; the job runs on.
    Background,
    /// Run in a terminal; return when it exits, waits for input, or at
    /// [`SpawnOptions::yield_after`]; a job that runs on is reached through
    /// the jobs port (`write`, `read`, `stop`).
    Interactive,
}

/// What the tool asks of the environment for one command.
#[derive(Clone, Default)]
pub struct SpawnOptions {
    /// Where to run. `None`: the environment's own default directory.
    pub cwd: Option<PathBuf>,
    /// Deadline for a foreground command. `None`: no deadline.
    pub timeout: Option<Duration>,
    /// Variables added to (and overriding) the environment for this call.
    pub env: BTreeMap<String, String>,
    /// Cancelled by the caller (abort, client cancel, Ctrl-C): the environment
    /// stops the whole process tree and returns what it has, `cancelled: true`.
    pub cancel: CancellationToken,
    /// Core's end of the output. The environment pushes raw bytes into it as
    /// they arrive, may attach its log writer, and returns
    /// [`OutputCapture::finish`] as [`CommandResult::output`]. Core cleans,
    /// bounds and forwards the text to the live sink the capture was made with.
    pub output: OutputCapture,
    /// Foreground (with the timeout), background or interactive.
    pub mode: ExecMode,
    /// Interactive mode: when to return if the program neither exits nor
    /// waits for input. `None`: the environment's default (10 s).
    pub yield_after: Option<Duration>,
}

impl fmt::Debug for SpawnOptions {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("SpawnOptions")
            .field("cwd", &self.cwd)
            .field("timeout", &self.timeout)
            .field("env", &self.env)
            .field("cancelled", &self.cancel.is_cancelled())
            .field("output", &self.output)
            .field("mode", &self.mode)
            .field("yield_after", &self.yield_after)
            .finish()
    }
}

impl SpawnOptions {
    /// Runs the command in `cwd`.
    pub fn current_dir(mut self, cwd: impl Into<PathBuf>) -> Self {
        self.cwd = Some(cwd.into());
        self
    }

    /// Stops the command's tree after `timeout`.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Adds a variable for this call.
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.insert(key.into(), value.into());
        self
    }

    /// Stops the command's tree when `cancel` is cancelled.
    pub fn cancel(mut self, cancel: CancellationToken) -> Self {
        self.cancel = cancel;
        self
    }

    /// A capture with the default output settings that sends the cleaned
    /// text to `sink` as it arrives.
    pub fn on_output(mut self, sink: OutputSink) -> Self {
        self.output = OutputCapture::new(&crate::config::OutputConfig::default(), Some(sink));
        self
    }

    /// Where the output goes (made by the tool from its `ToolConfig`).
    pub fn output(mut self, capture: OutputCapture) -> Self {
        self.output = capture;
        self
    }

    /// Foreground or background.
    pub fn mode(mut self, mode: ExecMode) -> Self {
        self.mode = mode;
        self
    }
}

/// A job started with [`ExecMode::Background`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackgroundJob {
    /// The job's id for the jobs port (`bash_jobs`): opaque to the tool.
    pub id: String,
    /// Its root process where the environment runs it, if it has one.
    pub pid: Option<u32>,
    /// The same process's pid as the environment's commands see it, when
    /// that differs (a sandbox's pid namespace numbers its own processes):
    /// what the model is told to `kill`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub pid_in_sandbox: Option<u32>,
    /// Where the environment keeps its full output (a path on its host).
    pub output_file: Option<PathBuf>,
}

/// An interactive job that was still running when its call returned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InteractiveStatus {
    /// Its id for the jobs port.
    pub job: String,
    /// `running` or `awaiting_input`.
    pub state: crate::jobs::JobState,
    /// The rendered terminal screen, for a full-screen program.
    pub screen: Option<String>,
    /// How waiting for input was decided when not from the kernel.
    pub detection_note: Option<String>,
}

/// Where a persistent shell stands after a call (the prompt as telemetry).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ShellState {
    /// The shell's working directory.
    pub cwd: PathBuf,
    /// The git branch checked out there, if any.
    pub git_branch: Option<String>,
    /// The shell behind the session died and was started anew for this call.
    pub restarted: bool,
}

/// What the environment reports after running a command. A non-zero exit is
/// a normal result, not an error: the model needs the output.
#[derive(Debug)]
pub struct CommandResult {
    /// The exit code; `None` when the command ended by a signal or did not end.
    pub exit_code: Option<i32>,
    /// Name of the signal that ended the command (`SIGKILL`), if any.
    pub signal: Option<String>,
    /// How long the call took.
    pub duration: Duration,
    /// The timeout stopped it.
    pub timed_out: bool,
    /// The caller cancelled it.
    pub cancelled: bool,
    /// The retained output (bounded head/tail windows) and its totals.
    pub output: OutputBuffer,
    /// The full log, where the environment keeps it (a path on its host).
    pub log_file: Option<PathBuf>,
    /// What the environment wants the model to know (leftover processes
    /// stopped, log file unavailable, ...). One line each.
    pub notes: Vec<String>,
    /// Set when the command was started in the background.
    pub background: Option<BackgroundJob>,
    /// Set when an interactive command was still running at the yield.
    pub interactive: Option<InteractiveStatus>,
    /// Where a persistent shell stands after the call.
    pub shell: Option<ShellState>,
    /// The directory the command ran in, as the environment resolved it.
    pub working_directory: Option<PathBuf>,
}

impl CommandResult {
    /// A finished command with the given exit code and the retained output.
    pub fn exited(exit_code: i32, output: OutputBuffer) -> Self {
        Self {
            exit_code: Some(exit_code),
            signal: None,
            duration: Duration::ZERO,
            timed_out: false,
            cancelled: false,
            output,
            log_file: None,
            notes: Vec::new(),
            background: None,
            interactive: None,
            shell: None,
            working_directory: None,
        }
    }

    /// True when the command ran to completion with exit code 0.
    pub fn success(&self) -> bool {
        self.exit_code == Some(0) && self.signal.is_none() && !self.timed_out && !self.cancelled
    }
}

/// Runs commands. Implemented by `bashtool-env-local` (real processes) and
/// `bashtool-env-mock` (scripted).
///
/// Contract:
/// - `spawn` returns `Ok` for every command that started, whatever its exit
///   status, signal, timeout or cancellation; `Err` only when it could not
///   run at all (missing directory, shell not found, spawn failure).
/// - On `options.cancel`, the environment stops the command's whole process
///   tree and returns promptly with `cancelled: true` and the output so far.
/// - On `options.timeout`, the same with `timed_out: true`.
/// - Dropping the returned future stops the command's process tree too.
/// - Calls are independent: many may run at once on one environment, except
///   on a session, which runs them one at a time in arrival order.
#[cfg_attr(feature = "mock", mockall::automock)]
#[async_trait::async_trait]
pub trait CommandExec: Send + Sync {
    /// Runs `command` as the contract above says.
    async fn spawn(&self, command: &str, options: SpawnOptions)
    -> Result<CommandResult, ExecError>;

    /// Where and how commands run. Called when the tool is built and for
    /// each result; keep it cheap (compute once, return a clone).
    fn environment(&self) -> EnvironmentInfo {
        EnvironmentInfo::default()
    }
}
