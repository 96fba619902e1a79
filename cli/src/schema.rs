//! `bashtool schema`: the tool definition in the shape each API expects.

use std::io::Write as _;
use std::process::ExitCode;

use bashtool_core::{ToolConfig, tool_spec};
use clap::{Args, ValueEnum};
use serde_json::{Value, json};

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Format {
    /// {name, description, input_schema} (Anthropic Messages API)
    Anthropic,
    /// {type: "function", function: {name, description, parameters}}
    Openai,
    /// {name, description, inputSchema, outputSchema, annotations} (MCP tools/list)
    Mcp,
}

/// Print the tool definition (name, description, input schema) as JSON
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  bashtool schema\n  bashtool schema --format openai")]
pub struct SchemaArgs {
    #[arg(long, value_enum, default_value_t = Format::Anthropic)]
    pub format: Format,
    /// Describe a persistent session (state carries over between calls)
    #[arg(long)]
    pub session: bool,
    /// Working directory shown to the model as <pwd>
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<std::path::PathBuf>,
}

pub fn definition(config: &ToolConfig, format: Format) -> Value {
    let spec = tool_spec(config);
    match format {
        Format::Anthropic => json!({
            "name": spec.name,
            "description": spec.description,
            "input_schema": spec.input_schema,
        }),
        Format::Openai => json!({
            "type": "function",
            "function": {
                "name": spec.name,
                "description": spec.description,
                "parameters": spec.input_schema,
            },
        }),
        Format::Mcp => crate::mcp::tools::bash_tool_json(config),
    }
}

pub fn run(args: &SchemaArgs) -> anyhow::Result<ExitCode> {
    let config = ToolConfig {
        working_directory: args.cwd.clone(),
        persistent_session: args.session,
        ..ToolConfig::default()
    };
    let text = serde_json::to_string_pretty(&definition(&config, args.format))?;
    writeln!(std::io::stdout().lock(), "{text}")?;
    Ok(ExitCode::SUCCESS)
}
