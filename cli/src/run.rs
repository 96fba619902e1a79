//! `bashtool run`: run a command through the tool from a terminal, with its
//! output streamed live.

use std::io::Write as _;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use bashtool_core::{BashTool, CallContext, Details, OutputChunk, Stream, ToolResult};
use clap::{Args, ValueEnum};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::exit;
use crate::options::ToolArgs;

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ModeArg {
    Default,
    Slow,
    Background,
}

/// Run a command through the tool and stream its output
///
/// Exit status is the command's (124 on timeout, 130 on Ctrl-C, 126 when
/// refused by the policy, 2 on invalid input).
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  bashtool run 'ls -la'\n  bashtool run --mode slow -- cargo test\n  \
bashtool run --timeout 5 --json -- 'sleep 10'\n  bashtool run --env RUST_LOG=debug -- ./build.sh"
)]
pub struct RunArgs {
    #[command(flatten)]
    pub tool: ToolArgs,
    #[command(flatten)]
    pub remote: crate::remote::RemoteArgs,
    /// default (30 s timeout), slow (15 min) or background (detached)
    #[arg(long, value_enum)]
    pub mode: Option<ModeArg>,
    /// Timeout in seconds (1 to 1800); overrides the mode's
    #[arg(long, value_name = "SECONDS")]
    pub timeout: Option<u64>,
    /// Add an environment variable (repeatable)
    #[arg(long = "env", value_name = "KEY=VALUE")]
    pub env: Vec<String>,
    /// Print only the JSON result, as `bashtool call` would
    #[arg(long, conflicts_with = "model_text")]
    pub json: bool,
    /// Print only the text the model would see (shortened), not the live output
    #[arg(long)]
    pub model_text: bool,
    /// The command (words are joined with spaces)
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    pub command: Vec<String>,
}

fn tool_input(args: &RunArgs) -> anyhow::Result<Value> {
    let mut input = Map::new();
    input.insert("command".into(), json!(args.command.join(" ")));
    if let Some(mode) = args.mode {
        let name = match mode {
            ModeArg::Default => "default",
            ModeArg::Slow => "slow",
            ModeArg::Background => "background",
        };
        input.insert("mode".into(), json!(name));
    }
    if let Some(timeout) = args.timeout {
        input.insert("timeout".into(), json!(timeout));
    }
    if !args.env.is_empty() {
        let mut environment = Map::new();
        for pair in &args.env {
            let (key, value) = pair
                .split_once('=')
                .with_context(|| format!("--env {pair}: expected KEY=VALUE"))?;
            environment.insert(key.to_owned(), json!(value));
        }
        input.insert("environment".into(), Value::Object(environment));
    }
    Ok(Value::Object(input))
}

/// A short status for a person: how it ended, how long, where the log is.
fn summary(details: &Details) -> String {
    let status = if details.timed_out {
        format!(
            "timed out after {}s",
            details.timeout_seconds.unwrap_or_default()
        )
    } else if details.cancelled {
        "cancelled".to_owned()
    } else if let Some(signal) = &details.signal {
        format!("terminated by signal {signal}")
    } else {
        details.exit_code.map_or_else(
            || "exit code unknown".to_owned(),
            |code| format!("exit code {code}"),
        )
    };
    let mut line = format!("[{status} · {} ms", details.execution_time_ms);
    if let Some(log) = &details.log_file {
        line.push_str(&format!(" · log: {log}"));
    }
    line.push(']');
    for note in &details.notes {
        line.push_str(&format!("\n[{note}]"));
    }
    line
}

fn print_chunk(chunk: &OutputChunk) {
    // Best effort: a closed terminal must not stop the command early.
    let _ = match chunk.stream {
        Stream::Stdout => {
            let mut stdout = std::io::stdout().lock();
            stdout
                .write_all(chunk.text.as_bytes())
                .and_then(|()| stdout.flush())
        }
        Stream::Stderr => std::io::stderr().lock().write_all(chunk.text.as_bytes()),
    };
}

pub fn run(args: &RunArgs) -> anyhow::Result<ExitCode> {
    let input = tool_input(args)?;
    let (config, exec) = crate::remote::cli_exec(&args.tool, &args.remote)?;
    let live = !args.json && !args.model_text;
    let runtime = tokio::runtime::Runtime::new()?;
    let result: ToolResult = runtime.block_on(async {
        let tool = BashTool::new(config, exec.command_exec());
        let cancel = CancellationToken::new();
        let context = CallContext {
            cancel: cancel.clone(),
            on_output: live.then(|| Arc::new(print_chunk) as bashtool_core::OutputSink),
        };
        // Ctrl-C stops the command's whole process tree, not just bashtool.
        let interrupt = cancel.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                interrupt.cancel();
            }
        });
        let result = tool.call_with(&input, context).await;
        if let Err(error) = exec.finish().await {
            eprintln!("bashtool: warning: {error:#}");
        }
        result
    });
    let mut stdout = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer(&mut stdout, &result)?;
        writeln!(stdout)?;
    } else if args.model_text || result.details.pid.is_some() {
        writeln!(stdout, "{}", result.text())?;
    } else if result.details.error_kind.is_some() {
        eprintln!("bashtool: {}", result.text());
    } else {
        stdout.flush()?;
        eprintln!("{}", summary(&result.details));
    }
    Ok(ExitCode::from(exit::status_of(&result.details)))
}
