//! What a call sees of an interactive job.

/// Where a job stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobState {
    /// Working (or blocked on something other than the terminal).
    Running,
    /// Its foreground processes wait for typed input.
    AwaitingInput,
    /// Ended; terminal state.
    Exited(JobExit),
}

impl JobState {
    /// `running`, `awaiting_input` or `exited`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::AwaitingInput => "awaiting_input",
            Self::Exited(_) => "exited",
        }
    }
}

/// How a job ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobExit {
    /// The exit code of the command's root process, if it exited.
    pub code: Option<i32>,
    /// The signal that ended it (`SIGKILL`), if one did.
    pub signal: Option<String>,
    /// The job's timeout stopped it.
    pub timed_out: bool,
    /// [`crate::InteractiveJob::stop`] stopped it.
    pub stopped: bool,
    /// Processes besides the root that were still running at the end and
    /// were stopped.
    pub leftovers: usize,
}

/// How [`JobState::AwaitingInput`] was decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detection {
    /// The kernel showed the foreground processes blocked reading the
    /// terminal.
    Kernel,
    /// The kernel would not tell (no ptrace access to the processes):
    /// the job printed nothing for the silence time, which is a guess.
    SilenceTimer,
}

/// What a call sees of a job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// Where the job stands.
    pub state: JobState,
    /// The text printed since the previous snapshot (cleaned, lines
    /// collapsed), as a line-oriented program shows it.
    pub text: String,
    /// Stream offset after `text`, for [`crate::InteractiveJob::read`].
    pub cursor: u64,
    /// Bytes of text printed since the previous snapshot that no longer fit
    /// in memory (they are in the log file).
    pub dropped: u64,
    /// The rendered screen, when the program draws a full screen (alternate
    /// screen or cursor addressing): then it, not `text`, is what a person
    /// sees.
    pub screen: Option<String>,
    /// The terminal hides typed text now (echo off in line mode: a password
    /// prompt).
    pub echo_off: bool,
    /// Input sent just before this snapshot went in with echo off: it was
    /// neither shown nor logged.
    pub input_hidden: bool,
    /// How `AwaitingInput` was decided (`None` in other states).
    pub detection: Option<Detection>,
}
