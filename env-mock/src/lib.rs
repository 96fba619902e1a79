//! `bashtool-env-mock`: a scriptable fake [`CommandExec`] and
//! [`Jobs`](bashtool_core::Jobs) for deterministic tests of the bash tool
//! and of what embeds it. It runs no process; scripted as the contract
//! says, it keeps the ports' port-level promises (the contract suite in
//! `bashtool-tests` runs them against it).
//!
//! [`ScriptedExec`] records every call and answers with a [`Reply`]: output
//! chunks sent through the sink, an exit code or signal, after a delay or
//! never (until cancelled). Delays use tokio's clock, so tests run with
//! `#[tokio::test(start_paused = true)]` and never really sleep.
//! [`ScriptedJobs`] holds jobs whose output and end a test sets. For
//! expectations in the mockall style, [`MockCommandExec`] is re-exported.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! use std::sync::Arc;
//! use bashtool_core::{BashTool, ToolConfig};
//! use bashtool_env_mock::{Reply, ScriptedExec};
//! let exec = ScriptedExec::replying(|_command| Reply::new().stdout("hi\n"));
//! let tool = BashTool::new(ToolConfig::default(), Arc::new(exec.clone()));
//! let result = tool.call(serde_json::json!({"command": "echo hi"})).await;
//! assert_eq!(result.text(), "stdout:\nhi\nexit code 0");
//! assert_eq!(exec.calls()[0].command, "echo hi");
//! # }
//! ```

#![forbid(unsafe_code)]

use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bashtool_core::{
    BackgroundJob, CommandExec, CommandResult, EnvironmentInfo, ExecError, ExecMode, ShellState,
    SpawnOptions, Stream,
};

mod jobs;

pub use jobs::ScriptedJobs;

pub use bashtool_core::{MockCommandExec, MockJobs};

/// What a scripted command does.
#[derive(Debug, Clone, Default)]
pub struct Reply {
    chunks: Vec<(Stream, String)>,
    exit_code: Option<i32>,
    signal: Option<String>,
    delay: Duration,
    never: bool,
    log_file: Option<PathBuf>,
    notes: Vec<String>,
    background: Option<BackgroundJob>,
    shell: Option<ShellState>,
    error: Option<String>,
    missing_directory: bool,
}

impl Reply {
    /// Exit 0 with no output.
    pub fn new() -> Self {
        Self {
            exit_code: Some(0),
            ..Self::default()
        }
    }

    /// A stdout chunk, sent through the sink in order.
    pub fn stdout(mut self, text: impl Into<String>) -> Self {
        self.chunks.push((Stream::Stdout, text.into()));
        self
    }

    /// A stderr chunk, sent through the sink in order.
    pub fn stderr(mut self, text: impl Into<String>) -> Self {
        self.chunks.push((Stream::Stderr, text.into()));
        self
    }

    pub fn exit(mut self, code: i32) -> Self {
        self.exit_code = Some(code);
        self
    }

    /// Ended by a signal (`SIGKILL`), no exit code.
    pub fn signal(mut self, signal: impl Into<String>) -> Self {
        self.signal = Some(signal.into());
        self.exit_code = None;
        self
    }

    /// Finish after `delay` of tokio time, after sending the chunks.
    pub fn delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// Never finish on its own: only a timeout or cancel ends it.
    pub fn never(mut self) -> Self {
        self.never = true;
        self
    }

    pub fn log_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.log_file = Some(path.into());
        self
    }

    pub fn note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(note.into());
        self
    }

    /// Started in the background as job `id`.
    pub fn background(mut self, id: &str, pid: u32, output_file: impl Into<PathBuf>) -> Self {
        self.background = Some(BackgroundJob {
            id: id.to_owned(),
            pid: Some(pid),
            pid_in_sandbox: None,
            output_file: Some(output_file.into()),
        });
        self
    }

    pub fn shell(mut self, shell: ShellState) -> Self {
        self.shell = Some(shell);
        self
    }

    /// The environment fails to run the command at all.
    pub fn spawn_error(mut self, message: impl Into<String>) -> Self {
        self.error = Some(message.into());
        self
    }

    /// The environment reports the working directory missing.
    pub fn missing_directory(mut self) -> Self {
        self.missing_directory = true;
        self
    }
}

/// One recorded call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedCall {
    pub command: String,
    pub cwd: Option<PathBuf>,
    pub timeout: Option<Duration>,
    pub env: BTreeMap<String, String>,
    pub mode: ExecMode,
}

type BoxFuture = Pin<Box<dyn Future<Output = Result<CommandResult, ExecError>> + Send>>;
type Handler = dyn Fn(String, SpawnOptions) -> BoxFuture + Send + Sync;

/// A scriptable [`CommandExec`]. Clones share the handler and the record.
#[derive(Clone)]
pub struct ScriptedExec {
    handler: Arc<Handler>,
    calls: Arc<Mutex<Vec<RecordedCall>>>,
}

impl std::fmt::Debug for ScriptedExec {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("ScriptedExec")
            .field("calls", &self.calls())
            .finish_non_exhaustive()
    }
}

impl ScriptedExec {
    /// Full control: the handler gets the command and the options (with the
    /// sink and the cancellation token) and returns the result.
    pub fn new<F, Fut>(handler: F) -> Self
    where
        F: Fn(String, SpawnOptions) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CommandResult, ExecError>> + Send + 'static,
    {
        Self {
            handler: Arc::new(move |command, options| Box::pin(handler(command, options))),
            calls: Arc::new(Mutex::new(Vec::new())),
        }
    }

    /// Answers each command with the reply `script` gives for it.
    pub fn replying(script: impl Fn(&str) -> Reply + Send + Sync + 'static) -> Self {
        Self::new(move |command, options| {
            let reply = script(&command);
            play(reply, options)
        })
    }

    /// Every call so far, in order.
    pub fn calls(&self) -> Vec<RecordedCall> {
        self.calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

#[async_trait::async_trait]
impl CommandExec for ScriptedExec {
    async fn spawn(
        &self,
        command: &str,
        options: SpawnOptions,
    ) -> Result<CommandResult, ExecError> {
        self.calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(RecordedCall {
                command: command.to_owned(),
                cwd: options.cwd.clone(),
                timeout: options.timeout,
                env: options.env.clone(),
                mode: options.mode,
            });
        (self.handler)(command.to_owned(), options).await
    }

    fn environment(&self) -> EnvironmentInfo {
        EnvironmentInfo {
            name: "mock".to_owned(),
            sandbox: None,
            tools: Vec::new(),
            limits: None,
        }
    }
}

/// Plays a reply like an environment would: chunks as raw bytes into core's
/// output capture, then the delay, raced against timeout and cancel.
pub async fn play(reply: Reply, options: SpawnOptions) -> Result<CommandResult, ExecError> {
    if let Some(message) = reply.error {
        return Err(ExecError::Other { message });
    }
    if reply.missing_directory {
        return Err(ExecError::MissingDirectory {
            path: options.cwd.clone().unwrap_or_default(),
        });
    }
    // Into core's capture, as raw bytes, like a real environment.
    for (stream, text) in &reply.chunks {
        options.output.push(*stream, text.as_bytes());
    }
    let finish = async {
        if reply.never {
            std::future::pending::<()>().await;
        } else {
            tokio::time::sleep(reply.delay).await;
        }
    };
    let deadline = async {
        match options.timeout {
            Some(timeout) if options.mode == ExecMode::Foreground => {
                tokio::time::sleep(timeout).await;
            }
            _ => std::future::pending::<()>().await,
        }
    };
    let start = tokio::time::Instant::now();
    // Biased: a token cancelled before the command finishes wins, as it
    // would against a real process.
    let (timed_out, cancelled) = tokio::select! {
        biased;
        () = options.cancel.cancelled() => (false, true),
        () = deadline => (true, false),
        () = finish => (false, false),
    };
    let output = options.output.finish();
    let ended_early = timed_out || cancelled;
    Ok(CommandResult {
        exit_code: if ended_early { None } else { reply.exit_code },
        signal: if ended_early {
            Some("SIGTERM".to_owned())
        } else {
            reply.signal
        },
        duration: start.elapsed(),
        timed_out,
        cancelled,
        output,
        log_file: reply.log_file,
        notes: reply.notes,
        background: reply.background,
        interactive: None,
        shell: reply.shell,
        working_directory: options.cwd,
    })
}
