//! `bashtool schema`: the tool definition in the shape each API expects.

use std::io::Write as _;
use std::process::ExitCode;

use bashtool_core::{ToolConfig, tool_spec};
use clap::{Args, ValueEnum};
use serde_json::{Value, json};

use crate::config::FileConfig;

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
///
/// With --format mcp it is exactly the `bash` tool `bashtool mcp` serves in
/// `tools/list` with the same config file, --cwd, --stateless and sandbox
/// flags: the
/// server's environment is set up for it (its sandbox, the working
/// directory, the programs found) and closed again. The other formats
/// describe the tool alone, from the config file.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  bashtool schema\n  bashtool schema --format openai\n  bashtool schema --format mcp --cwd ~/project"
)]
pub struct SchemaArgs {
    #[arg(long, value_enum, default_value_t = Format::Anthropic)]
    pub format: Format,
    /// Describe a persistent session (state carries over between calls) [default for --format mcp, as `bashtool mcp` serves one]
    #[arg(long, conflicts_with = "stateless")]
    pub session: bool,
    /// Describe a fresh shell per call, as `bashtool call` and `bashtool mcp --stateless` give
    #[arg(long)]
    pub stateless: bool,
    /// TOML config file whose settings the definition follows, as in `bashtool mcp` [default: $XDG_CONFIG_HOME/bashtool/config.toml, if it exists]
    #[arg(long, value_name = "FILE", env = "BASHTOOL_CONFIG")]
    pub config: Option<std::path::PathBuf>,
    /// Working directory shown to the model as <pwd>
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<std::path::PathBuf>,
    /// With --format mcp: the output schema `bashtool mcp --output-schema` serves (compact or full)
    #[arg(long, value_enum, default_value_t = crate::mcp::tools::OutputSchema::Compact)]
    pub output_schema: crate::mcp::tools::OutputSchema,
    // With --format mcp: the sandbox of the server described.
    #[command(flatten)]
    pub sandbox: crate::sandbox::SandboxArgs,
}

pub fn definition(
    config: &ToolConfig,
    format: Format,
    output_schema: crate::mcp::tools::OutputSchema,
) -> Value {
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
        Format::Mcp => crate::mcp::tools::bash_tool_json(config, output_schema),
    }
}

/// `bashtool mcp`'s flags for what `args` asks.
fn mcp_args(args: &SchemaArgs) -> crate::mcp::McpArgs {
    #[derive(clap::Parser)]
    struct Mcp {
        #[command(flatten)]
        mcp: crate::mcp::McpArgs,
    }
    let mut flags: Vec<std::ffi::OsString> = vec!["mcp".into()];
    if args.stateless {
        flags.push("--stateless".into());
    }
    if let Some(cwd) = &args.cwd {
        flags.extend(["--cwd".into(), cwd.clone().into_os_string()]);
    }
    if let Some(config) = &args.config {
        flags.extend(["--config".into(), config.clone().into_os_string()]);
    }
    if let Some(mode) = args.sandbox.sandbox {
        flags.extend(["--sandbox".into(), mode.name().into()]);
    }
    if let Some(network) = args.sandbox.network {
        flags.extend(["--network".into(), network.name().into()]);
    }
    for directory in &args.sandbox.writable {
        flags.extend(["--writable".into(), directory.clone().into_os_string()]);
    }
    if matches!(args.output_schema, crate::mcp::tools::OutputSchema::Full) {
        flags.extend(["--output-schema".into(), "full".into()]);
    }
    <Mcp as clap::Parser>::parse_from(flags).mcp
}

pub fn run(args: &SchemaArgs) -> anyhow::Result<ExitCode> {
    if matches!(args.format, Format::Mcp) {
        let tool = crate::mcp::served_bash_tool(&mcp_args(args))?;
        let text = serde_json::to_string_pretty(&tool)?;
        writeln!(std::io::stdout().lock(), "{text}")?;
        return Ok(ExitCode::SUCCESS);
    }
    let (file, _) = FileConfig::load(args.config.as_deref())?;
    let mut config = ToolConfig {
        working_directory: args.cwd.clone(),
        ..ToolConfig::default()
    };
    file.apply_to_tool(&mut config)?;
    let stateless = args.stateless || file.stateless.unwrap_or(false);
    config.persistent_session = args.session && !stateless;
    config.withholds_env = file.environment.drops_any();
    let text = serde_json::to_string_pretty(&definition(&config, args.format, args.output_schema))?;
    writeln!(std::io::stdout().lock(), "{text}")?;
    Ok(ExitCode::SUCCESS)
}
