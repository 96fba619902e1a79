//! `bashtool mcp`: the MCP server (placeholder until the server lands).

use std::process::ExitCode;

use clap::Args;

/// Serve the bash tool over MCP (stdio)
#[derive(Debug, Args)]
pub struct McpArgs {}

pub fn run(_args: McpArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("the MCP server is not built yet")
}
