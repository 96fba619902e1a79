//! What the model gets back: text content, `is_error`, and structured details.

use serde::{Deserialize, Serialize};

use crate::environment::SandboxInfo;
use crate::exec::ShellState;
use crate::jobs::JobInfo;
use crate::policy::Rule;

/// A piece of content for the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Content {
    /// Text for the model.
    Text {
        /// The text.
        text: String,
    },
}

impl Content {
    /// Text content.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into() }
    }

    /// The text of this content.
    pub fn as_text(&self) -> &str {
        match self {
            Self::Text { text } => text,
        }
    }
}

/// Per-command details of a batch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchItemDetails {
    /// The command as the model sent it.
    pub command: String,
    /// Its exit code, if it exited.
    pub exit_code: Option<i32>,
    /// The signal that ended it.
    pub signal: Option<String>,
    /// True when it ran to completion with exit code 0.
    pub success: bool,
    /// The timeout stopped it.
    pub timed_out: bool,
    /// It was cancelled.
    pub cancelled: bool,
    /// It did not run: the batch was cancelled before it.
    pub skipped: bool,
    /// How long it took.
    pub execution_time_ms: u64,
    /// The full log (a path where the command ran).
    pub log_file: Option<String>,
    /// The text was shortened.
    pub truncated: bool,
    /// Lines of output in all.
    pub total_lines: u64,
    /// Bytes of output in all.
    pub total_bytes: u64,
}

/// Structured facts about the call (seed 004's metadata); becomes MCP
/// `structuredContent`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Details {
    /// The command as the model sent it.
    pub command: String,
    /// Its exit code, if it exited.
    pub exit_code: Option<i32>,
    /// The signal that ended it.
    pub signal: Option<String>,
    /// True when it ran to completion with exit code 0.
    pub success: bool,
    /// The timeout stopped it.
    pub timed_out: bool,
    /// It was cancelled.
    pub cancelled: bool,
    /// How long it took.
    pub execution_time_ms: u64,
    /// Where it ran.
    pub working_directory: Option<String>,
    /// The full log (a path where the command ran).
    pub log_file: Option<String>,
    /// The text was shortened.
    pub truncated: bool,
    /// Lines of output in all.
    pub total_lines: u64,
    /// Bytes of output in all.
    pub total_bytes: u64,
    /// The timeout that stopped it.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub timeout_seconds: Option<u64>,
    /// The root process of a background job.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub pid: Option<u32>,
    /// That process's pid as the commands see it, when a sandbox numbers
    /// its processes in a pid namespace of their own.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub pid_in_sandbox: Option<u32>,
    /// The output file of a background job.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub output_file: Option<String>,
    /// Why nothing ran: `invalid_input`, `blocked`, `not_approved`, `spawn_failed`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub error_kind: Option<String>,
    /// The policy rule that blocked the command.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub rule: Option<Rule>,
    /// The invalid input field.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub field: Option<String>,
    /// Where a persistent shell stands.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub shell: Option<ShellState>,
    /// What the environment wants the model to know.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub notes: Vec<String>,
    /// Each command of a batch.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub batch: Option<Vec<BatchItemDetails>>,
    /// The job a background or interactive call started, or a jobs call is
    /// about.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub job: Option<String>,
    /// That job's state: `running`, `awaiting_input`, `exited`, ...
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub state: Option<String>,
    /// Where the next read of that job's output continues.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub next_cursor: Option<u64>,
    /// Every job (the jobs tool's `list`).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub jobs: Option<Vec<JobInfo>>,
    /// Where the command ran: `local`, `remote: ssh devbox`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub environment: Option<String>,
    /// The sandbox the command ran in.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub sandbox: Option<SandboxInfo>,
    /// The questions put to a person for this call (outside the sandbox,
    /// past a policy rule) and their answers.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub approvals: Vec<ApprovalDetails>,
    /// The resource limits the command ran under.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub limits: Option<crate::limits::LimitsInfo>,
}

/// One question put to a person and the answer (see [`crate::Approval`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalDetails {
    /// `sandbox` (run without it) or `policy` (run past `rule`).
    pub kind: String,
    /// The policy rule let through or not.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub rule: Option<Rule>,
    /// The command asked about.
    pub command: String,
    /// `allow_once`, `allow_session` (asked now), `session_grant` (allowed
    /// earlier in the session, not asked again), `denied`, `cancelled`,
    /// `no_answer` or `not_asked`.
    pub answer: String,
    /// Who answered (`the user, asked through the MCP client`).
    pub by: String,
}

/// The result of one tool call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolResult {
    /// What the model reads.
    pub content: Vec<Content>,
    /// True unless the command succeeded.
    pub is_error: bool,
    /// Structured facts (MCP `structuredContent`).
    pub details: Details,
}

impl ToolResult {
    /// All text content joined: what the model reads.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .map(Content::as_text)
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// An error result where nothing ran.
    pub fn refused(command: &str, kind: &str, message: impl Into<String>) -> Self {
        Self {
            content: vec![Content::text(message)],
            is_error: true,
            details: Details {
                command: command.to_owned(),
                error_kind: Some(kind.to_owned()),
                ..Details::default()
            },
        }
    }
}
