//! `bashtool-core`: the pure part of a bash tool for LLM agents.
//!
//! It holds the tool's spec (generated from [`ToolConfig`]), input
//! validation, the safety policy on the bash AST, the call's state machine,
//! the bounded [`OutputBuffer`] and the model-facing shortening, and the
//! ports an environment implements ([`CommandExec`], [`Approval`]). It does
//! not spawn processes, touch files or read clocks: `bashtool-env-local` runs
//! real commands, `bashtool-env-mock` scripted ones.
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

mod config;
mod error;
mod exec;
mod input;
mod invocation;
pub mod output;
pub mod policy;
mod registry;
mod report;
mod result;
mod sandbox_note;
mod spec;
mod tool;

pub use config::{
    CHARACTERS_PER_TOKEN, HEAD_PERCENT, InputFields, MAX_BATCH_COMMANDS, MAX_CHARS_PER_LINE,
    MAX_COMMAND_BYTES, MAX_OUTPUT_TOKENS, OutputConfig, SALIENT_PERCENT, Shortening, ToolConfig,
};
pub use error::{Error, ExecError};
pub use exec::{
    Approval, ApproveAll, BackgroundJob, CommandExec, CommandResult, EnvironmentInfo, ExecMode,
    MockApproval, MockCommandExec, OutputChunk, OutputSink, SandboxInfo, ShellState, SpawnOptions,
    Stream,
};
pub use input::{
    BOTH_COMMAND_FIELDS, Commands, InputError, Mode, NO_COMMAND_FIELD, ToolInput,
    is_valid_variable_name, validate_input,
};
pub use invocation::{Invocation, InvocationMsg, InvocationState};
pub use output::{OutputBuffer, OutputLine, abbreviate_line, format_output};
pub use policy::{PolicyConfig, Rule, Violation};
pub use registry::{CreateToolContext, TOOL_NAMES, Tool, create_tool, tool_specs};
pub use result::{BatchItemDetails, Content, Details, ToolResult};
pub use sandbox_note::explain_denial;
pub use spec::{ToolSpec, description, input_schema, tool_spec};
pub use tool::{BashTool, CallContext, NOT_CONFIRMED};
