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
    pub remote: crate::options::RemoteArgs,
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

/// Largest input read from stdin: what the MCP server accepts in one message.
const MAX_INPUT_BYTES: usize = 32 * 1024 * 1024;

/// The error result for input over [`MAX_INPUT_BYTES`].
fn too_large() -> ToolResult {
    let mut result = ToolResult::refused(
        "",
        "invalid_input",
        format!(
            "invalid input: the input is larger than {} MiB; a command may be at most {} KiB",
            MAX_INPUT_BYTES / (1024 * 1024),
            bashtool_core::MAX_COMMAND_BYTES / 1024
        ),
    );
    result.details.field = Some("input".to_owned());
    result
}

pub fn run(args: &CallArgs) -> anyhow::Result<ExitCode> {
    let mut bytes = Vec::new();
    std::io::stdin()
        .take(MAX_INPUT_BYTES as u64 + 1)
        .read_to_end(&mut bytes)?;
    let (config, exec) = crate::environment::for_invocation(&args.tool, &args.remote)?;
    let result = match serde_json::from_slice::<serde_json::Value>(&bytes) {
        // Nothing more is read: the writer gets EPIPE rather than a hang.
        _ if bytes.len() > MAX_INPUT_BYTES => too_large(),
        Err(error) => not_json(&error.to_string()),
        Ok(input) => {
            // One call: a current-thread runtime reads the output on this thread,
            // with no worker threads to start or to hand each chunk between.
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            runtime.block_on(async {
                let tool = BashTool::new(config, exec.command_exec())
                    .with_no_approval_hint(crate::approvals::CALL_HINT);
                let cancel = tokio_util::sync::CancellationToken::new();
                crate::signals::cancel_on_signals(cancel.clone())?;
                let context = bashtool_core::CallContext {
                    cancel,
                    on_output: None,
                };
                let result = tool.call_with(&input, context).await;
                if let Err(error) = exec.finish().await {
                    eprintln!("bashtool: warning: {error:#}");
                }
                anyhow::Ok(result)
            })?
        }
    };
    let mut stdout = std::io::stdout().lock();
    serde_json::to_writer(&mut stdout, &result)?;
    writeln!(stdout)?;
    Ok(ExitCode::SUCCESS)
}
