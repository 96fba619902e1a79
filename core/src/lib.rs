//! `bashtool-core`: the pure part of a bash tool for LLM agents.
//!
//! It holds the tools' specs (generated from [`ToolConfig`]), input
//! validation, the safety policy on the bash AST, the call's state machine,
//! output cleaning, the bounded [`OutputBuffer`] and the model-facing
//! shortening, the two tools ([`BashTool`] and the `bash_jobs`
//! [`JobsTool`]), and the ports an environment implements: [`CommandExec`]
//! (run a command), [`Jobs`] (background and interactive jobs) and
//! [`Approval`]. It does not spawn processes, touch files or read clocks:
//! `bashtool-env-local` runs real commands, `bashtool-env-remote` runs them
//! on another machine, `bashtool-env-mock` scripts them for tests.
//!
//! ```no_run
//! # async fn demo(exec: std::sync::Arc<dyn bashtool_core::CommandExec>) {
//! use bashtool_core::{BashTool, ToolConfig};
//! let tool = BashTool::new(ToolConfig::default(), exec);
//! let spec = tool.spec(); // give name, description and input_schema to the model
//! let result = tool.call(serde_json::json!({"command": "cargo test"})).await;
//! println!("{}", result.text());
//! # }
//! ```
//!
//! An environment receives each command's output through the
//! [`OutputCapture`] in [`SpawnOptions::output`]: it pushes raw bytes, and
//! core cleans and bounds them with the tool's own [`OutputConfig`].

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod approval;
mod asking;
mod config;
mod env_policy;
mod environment;
mod error;
mod exec;
mod input;
mod invocation;
mod jobs;
mod limits;
mod output;
mod policy;
mod redact;
mod registry;
mod report;
mod result;
mod sandbox_note;
mod spec;
mod tool;

#[cfg(feature = "mock")]
pub use approval::MockApproval;
pub use approval::{Approval, ApprovalAnswer, ApprovalKind, ApprovalRequest, Refusal};
pub use config::{
    CHARACTERS_PER_TOKEN, HEAD_PERCENT, InputFields, MAX_BATCH_COMMANDS, MAX_CHARS_PER_LINE,
    MAX_COMMAND_BYTES, MAX_OUTPUT_TOKENS, OutputConfig, SALIENT_PERCENT, Shortening, ToolConfig,
};
pub use env_policy::{DEFAULT_EXCLUDES, EnvPolicy};
pub use environment::{EnvironmentInfo, SandboxInfo};
pub use error::{Error, ExecError};
#[cfg(feature = "mock")]
pub use exec::MockCommandExec;
pub use exec::{
    BackgroundJob, CommandExec, CommandResult, ExecMode, InteractiveStatus, ShellState,
    SpawnOptions,
};
pub use input::{
    BOTH_COMMAND_FIELDS, Commands, InputError, Mode, NO_COMMAND_FIELD, ToolInput,
    is_valid_variable_name, validate_input,
};
pub use invocation::{Invocation, InvocationMsg, InvocationState};
#[cfg(feature = "mock")]
pub use jobs::MockJobs;
pub use jobs::{
    DEFAULT_TAIL_LINES, DEFAULT_WAIT_SECS, DEFAULT_YIELD_SECS, JOBS_TOOL_NAME, JobError, JobInfo,
    JobInput, JobOutput, JobState, Jobs, JobsTool, MAX_TAIL_LINES, MAX_WAIT_SECS, ReadFrom,
    human_runtime, info_line, jobs_tool_spec, state_text,
};
pub use limits::{
    CpuLimit, DEFAULT_PIDS_LIMIT, Limit, LimitError, LimitEvents, LimitKind, LimitSettings,
    LimitsInfo, MAX_MEMORY_LIMIT, MAX_PIDS_LIMIT, MIN_MEMORY_LIMIT, format_size, limit_notes,
    parse_size,
};
pub use output::{
    FormattedOutput, OMISSION_MARKER_EXAMPLE, OutputBuffer, OutputCapture, OutputChunk, OutputLine,
    OutputSink, RawTap, Stream, StreamCleaner, abbreviate_line, clean_text,
    collapse_carriage_returns, format_bytes, format_output, format_output_with_budget,
};
pub use policy::{
    DEFAULT_DENY_PATTERNS, GIT_ADD_MESSAGE, GIT_PUSH_FORCE_MESSAGE, PolicyConfig,
    RM_CRITICAL_MESSAGE, Rule, Violation, check as check_policy,
};
pub use redact::{MIN_SECRET_CHARS, RedactMode, RedactSettings, RedactStream, Redactor};
pub use registry::{CreateToolContext, TOOL_NAMES, Tool, create_tool, tool_specs};
pub use report::CappedLog;
pub use result::{ApprovalDetails, BatchItemDetails, Content, Details, ToolResult};
pub use sandbox_note::{explain_denial, explain_denial_at};
pub use spec::{ToolSpec, description, input_schema, tool_spec, tool_spec_for};
pub use tool::{BashTool, CallContext};
