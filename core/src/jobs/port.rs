//! The jobs port: background and interactive jobs by an opaque id.
//!
//! A job is started through [`crate::CommandExec::spawn`] with
//! [`crate::ExecMode::Background`] (its result carries the id); everything
//! after that goes through [`Jobs`]. Reads use a cursor, the byte offset of
//! the job's cleaned output, so that a reader that passes back each
//! `next_cursor` sees every byte exactly once, whatever the window size.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

/// How a job stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobState {
    /// Still running.
    Running,
    /// Running and blocked reading its terminal (interactive jobs).
    AwaitingInput,
    /// Ended with an exit code.
    Exited,
    /// Ended by a signal.
    Signaled,
    /// Ended, but how is unknown (its owner died before it could record it).
    Ended,
}

impl JobState {
    /// True while the job's process is alive.
    pub fn is_running(self) -> bool {
        matches!(self, Self::Running | Self::AwaitingInput)
    }

    /// The name the model sees (`running`, `awaiting_input`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::AwaitingInput => "awaiting_input",
            Self::Exited => "exited",
            Self::Signaled => "signaled",
            Self::Ended => "ended",
        }
    }
}

/// What an environment knows about one job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobInfo {
    /// Opaque id, unique in the environment.
    pub id: String,
    /// The command line it runs.
    pub command: String,
    /// How it stands.
    pub state: JobState,
    /// Its exit code, once it exited.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub exit_code: Option<i32>,
    /// The signal that ended it.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub signal: Option<String>,
    /// How long it ran (so far).
    pub runtime_ms: u64,
    /// Its root process where it runs, if it has one.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub pid: Option<u32>,
    /// Where the environment keeps its full output (a path on its host).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub output_file: Option<String>,
    /// Runs in a terminal and takes input (`write`).
    #[serde(default)]
    pub interactive: bool,
}

/// Where a read starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadFrom {
    /// At this cursor (0, or the `next_cursor` of the previous read): the
    /// window that follows it, never skipping anything.
    Cursor(u64),
    /// The last `lines` lines; what comes before is reported as skipped.
    Tail {
        /// How many lines.
        lines: usize,
    },
}

/// A window of a job's cleaned output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobOutput {
    /// The job as it stood when read.
    pub job: JobInfo,
    /// Whole lines (the last one may be unfinished if the job is still
    /// writing it), cleaned like the bash tool's output.
    pub text: String,
    /// Where `text` starts.
    pub cursor: u64,
    /// Pass this to the next read to continue right after `text`.
    pub next_cursor: u64,
    /// Bytes between the reader's position and `cursor` that this read did
    /// not return (a tail read); 0 for a cursor read.
    pub skipped: u64,
    /// Output after `next_cursor` was already there when this was read.
    pub more: bool,
    /// The rendered terminal screen, for an interactive full-screen program.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub screen: Option<String>,
    /// Input was sent while the terminal had echo off: it was not logged.
    #[serde(default)]
    pub echo_off_input: bool,
    /// How `awaiting_input` was decided when not from the kernel (a silence
    /// timer), so the model knows it is a guess.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub detection_note: Option<String>,
}

/// Input for an interactive job: text first, then the keys in order.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct JobInput {
    /// Text to type; `\n` presses Enter.
    pub text: String,
    /// Key names: `Enter`, `Tab`, `Esc`, `Up`, `C-c`, `F1`, ...
    pub keys: Vec<String>,
}

/// Why a jobs call did nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JobError {
    /// No job has this id.
    #[error("no job with id `{id}`; use action \"list\" to see the jobs")]
    UnknownJob {
        /// The id asked for.
        id: String,
    },
    /// Input was sent to a job without a terminal.
    #[error(
        "job `{id}` is not interactive: only jobs started with mode \"interactive\" take input"
    )]
    NotInteractive {
        /// The job.
        id: String,
    },
    /// Input was sent to a job that has ended.
    #[error("job `{id}` has ended; it takes no more input")]
    Ended {
        /// The job.
        id: String,
    },
    /// The request itself is wrong.
    #[error("invalid {field}: {message}")]
    InvalidInput {
        /// The input field at fault.
        field: String,
        /// What is wrong and what is allowed.
        message: String,
    },
    /// The environment could not do it (a file unreadable, a connection lost).
    #[error("{message}")]
    Environment {
        /// What went wrong.
        message: String,
    },
}

/// Background and interactive jobs of one environment.
///
/// Contract:
/// - ids are opaque strings, unique in the environment;
/// - [`Jobs::read`] with [`ReadFrom::Cursor`] returns at most `max_bytes`
///   (whole lines, except a single line longer than that) starting exactly at
///   the cursor, and `next_cursor` right after it: reading on from each
///   `next_cursor` sees every byte once, except where the environment caps
///   a job's output by dropping its middle: a cursor there gets the window
///   from the marker that says what was dropped;
/// - [`Jobs::wait`] returns when the job ends, at `timeout`, or on `cancel`,
///   with the job's state then; it never stops the job;
/// - [`Jobs::stop`] stops the job's whole process tree and returns once it
///   is gone; stopping an ended job returns its info unchanged; a job that
///   could not be stopped (its processes may not be signalled from here,
///   or it outlived SIGKILL) is an error that says why, never its info;
/// - [`Jobs::write`] sends input to an interactive job and returns what it
///   printed until it waits for input again, ends, or `yield_after` passes.
#[cfg_attr(feature = "mock", mockall::automock)]
#[async_trait::async_trait]
pub trait Jobs: Send + Sync {
    /// Every job of the environment, oldest first.
    async fn list(&self) -> Vec<JobInfo>;
    /// A window of a job's output (see the contract above).
    async fn read(&self, id: &str, from: ReadFrom, max_bytes: usize)
    -> Result<JobOutput, JobError>;
    /// Waits for a job to end, at most `timeout`, or until `cancel`.
    async fn wait(
        &self,
        id: &str,
        timeout: Duration,
        cancel: CancellationToken,
    ) -> Result<JobInfo, JobError>;
    /// Stops a job's whole process tree.
    async fn stop(&self, id: &str) -> Result<JobInfo, JobError>;
    /// Types `input` into an interactive job and returns what it shows next.
    /// Environments without interactive jobs keep this default.
    async fn write(
        &self,
        id: &str,
        input: JobInput,
        yield_after: Duration,
    ) -> Result<JobOutput, JobError> {
        let _ = (input, yield_after);
        Err(JobError::NotInteractive { id: id.to_owned() })
    }
    /// Stops every job still running (server shutdown).
    async fn stop_all(&self);
}
