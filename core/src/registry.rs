//! The tool registry (a spec map and a constructor per tool): list the
//! specs and create a tool by name.

use std::sync::Arc;

use crate::config::ToolConfig;
use crate::error::Error;
use crate::exec::CommandExec;
use crate::spec::{ToolSpec, tool_spec};
use crate::tool::BashTool;

/// The names of the tools this crate provides.
pub const TOOL_NAMES: &[&str] = &["bash"];

/// What a tool needs from its embedder.
#[derive(Clone)]
pub struct CreateToolContext {
    /// The tool's configuration.
    pub config: ToolConfig,
    /// The environment that runs the commands.
    pub exec: Arc<dyn CommandExec>,
}

/// A created tool.
#[derive(Debug, Clone)]
pub enum Tool {
    /// The `bash` tool.
    Bash(BashTool),
}

/// The spec of every known tool, by name.
pub fn tool_specs(config: &ToolConfig) -> Vec<(&'static str, ToolSpec)> {
    vec![("bash", tool_spec(config))]
}

/// Creates a tool by its registry name.
pub fn create_tool(name: &str, context: CreateToolContext) -> Result<Tool, Error> {
    match name {
        "bash" => Ok(Tool::Bash(BashTool::new(context.config, context.exec))),
        other => Err(Error::UnknownTool {
            name: other.to_owned(),
            known: TOOL_NAMES.join(", "),
        }),
    }
}
