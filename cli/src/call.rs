//! `bashtool call`: one JSON tool input on stdin, one JSON result on stdout,
//! exactly as a model would send and receive it.

use std::io::{Read as _, Write as _};
use std::process::ExitCode;

use bashtool_core::{BashTool, ToolResult};
use clap::Args;

use crate::options::ToolArgs;

/// Run one tool call: read the model's JSON input from stdin, print the JSON result
///
/// Exit status is 0 whenever a result was printed, error results included.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  echo '{\"command\": \"ls -la\"}' | bashtool call\n  \
echo '{\"commands\": [\"cd src\", \"ls\"], \"timeout\": 10}' | bashtool call"
)]
pub struct CallArgs {
    #[command(flatten)]
    pub tool: ToolArgs,
    #[command(flatten)]
    pub remote: crate::remote::RemoteArgs,
}

/// The error result for input that is not JSON at all.
fn not_json(error: &str) -> ToolResult {
    let mut result = ToolResult::refused(
        "",
        "invalid_input",
        format!(
            "invalid input: the input is not valid JSON ({error}); send an object such as {{\"command\": \"ls\"}}"
        ),
    );
    result.details.field = Some("input".to_owned());
    result
}

pub fn run(args: &CallArgs) -> anyhow::Result<ExitCode> {
    let mut bytes = Vec::new();
    std::io::stdin().read_to_end(&mut bytes)?;
    let (config, exec) = crate::remote::cli_exec(&args.tool, &args.remote)?;
    let result = match serde_json::from_slice::<serde_json::Value>(&bytes) {
        Err(error) => not_json(&error.to_string()),
        Ok(input) => {
            let runtime = tokio::runtime::Runtime::new()?;
            runtime.block_on(async {
                let tool = BashTool::new(config, exec.command_exec());
                let result = tool.call(input).await;
                if let Err(error) = exec.finish().await {
                    eprintln!("bashtool: warning: {error:#}");
                }
                result
            })
        }
    };
    let mut stdout = std::io::stdout().lock();
    serde_json::to_writer(&mut stdout, &result)?;
    writeln!(stdout)?;
    Ok(ExitCode::SUCCESS)
}
