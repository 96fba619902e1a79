//! `bashtool run`: run a command through the tool from a terminal, with its
//! output streamed live.

use std::io::Write as _;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

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
    /// In a terminal: answer its prompts on stdin, line by line
    Interactive,
}

/// Run a command through the tool and stream its output
///
/// One argument is the script, as is (`bashtool run 'ls | wc -l'`); several
/// are one command whose words are quoted for bash, as `exec` would pass
/// them (`bashtool run -- printf '[%s]\n' "a b"`). Flags go before the
/// command; `--` ends them.
///
/// Exit status is the command's, or bashtool's when it stopped or never
/// ran it: 124 on timeout, 130 on Ctrl-C, 141 when our stdout closed and
/// the command was stopped; 126 when refused by the policy, 65 when the
/// policy could not parse it, 125 when the environment could not run it
/// (a remote that cannot be reached or refuses, a sandbox that cannot be
/// enforced), 2 on invalid input or usage.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  bashtool run 'ls -la'\n  bashtool run --mode slow -- cargo test\n  \
bashtool run --timeout 5 --json -- 'sleep 10'\n  bashtool run --env RUST_LOG=debug -- ./build.sh"
)]
pub struct RunArgs {
    #[command(flatten)]
    pub tool: ToolArgs,
    #[command(flatten)]
    pub remote: crate::options::RemoteArgs,
    /// default (30 s timeout), slow (15 min), background (detached) or interactive (in a terminal; its prompts are answered with the lines typed on stdin)
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
    /// Run this command without the sandbox, in a fresh shell, once you approve it on the terminal (as the model's `outside_sandbox`)
    #[arg(long)]
    pub outside_sandbox: bool,
    /// The sentence shown with the question (as the model's `justification`)
    #[arg(long, value_name = "TEXT")]
    pub justification: Option<String>,
    #[command(flatten)]
    pub approvals: crate::approvals::ApprovalArgs,
    /// The script (one argument), or a command and its arguments (quoted for bash)
    #[arg(required = true, trailing_var_arg = true)]
    pub command: Vec<String>,
}

/// Characters that need no quoting in a bash word.
fn is_plain(character: char) -> bool {
    character.is_ascii_alphanumeric() || "_-+=%@:,./".contains(character)
}

/// One word quoted for bash: as is when plain, else in single quotes.
fn quote(word: &str) -> String {
    if !word.is_empty() && word.chars().all(is_plain) {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// The script to run: one argument as is, several as one quoted command.
fn script(words: &[String]) -> String {
    match words {
        [script] => script.clone(),
        words => words
            .iter()
            .map(|word| quote(word))
            .collect::<Vec<_>>()
            .join(" "),
    }
}

fn tool_input(args: &RunArgs) -> anyhow::Result<Value> {
    let mut input = Map::new();
    input.insert("command".into(), json!(script(&args.command)));
    if let Some(mode) = args.mode {
        let name = match mode {
            ModeArg::Default => "default",
            ModeArg::Slow => "slow",
            ModeArg::Background => "background",
            ModeArg::Interactive => "interactive",
        };
        input.insert("mode".into(), json!(name));
    }
    if let Some(timeout) = args.timeout {
        input.insert("timeout".into(), json!(timeout));
    }
    if args.outside_sandbox {
        input.insert("outside_sandbox".into(), json!(true));
    }
    if let Some(justification) = &args.justification {
        input.insert("justification".into(), json!(justification));
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

/// Prints live output; when our stdout is closed (`bashtool run ... | head`)
/// nobody reads the output any more, so the command is stopped, as a shell
/// pipeline's writer would be by SIGPIPE.
fn printer(cancel: CancellationToken, closed: Arc<AtomicBool>) -> bashtool_core::OutputSink {
    Arc::new(move |chunk: &OutputChunk| match chunk.stream {
        Stream::Stdout => {
            if closed.load(Ordering::Relaxed) {
                return;
            }
            let mut stdout = std::io::stdout().lock();
            let written = stdout
                .write_all(chunk.text.as_bytes())
                .and_then(|()| stdout.flush());
            if written.is_err_and(|error| error.kind() == std::io::ErrorKind::BrokenPipe) {
                closed.store(true, Ordering::Relaxed);
                cancel.cancel();
            }
        }
        // Best effort: stderr is where the status goes; a closed one loses it.
        Stream::Stderr => {
            let _ = std::io::stderr().lock().write_all(chunk.text.as_bytes());
        }
    })
}

/// `run --mode interactive`: shows what the program shows and answers it
/// with the lines typed on our stdin (each followed by Enter) until it
/// ends; end of input or a signal stops it. Returns the last result.
async fn converse(
    mut result: ToolResult,
    jobs: &bashtool_core::JobsTool,
    cancel: &CancellationToken,
) -> ToolResult {
    loop {
        let Some(id) = result.details.job.clone() else {
            return result;
        };
        if !matches!(
            result.details.state.as_deref(),
            Some("running" | "awaiting_input")
        ) {
            // The program's own ending decides our exit status.
            result.details.success =
                result.details.exit_code == Some(0) && result.details.signal.is_none();
            result.is_error = !result.details.success;
            return result;
        }
        {
            let mut stdout = std::io::stdout().lock();
            let _ = writeln!(stdout, "{}", result.text());
            let _ = stdout.flush();
        }
        let next = if result.details.state.as_deref() == Some("awaiting_input") {
            let line = tokio::task::spawn_blocking(|| {
                let mut line = String::new();
                match std::io::stdin().read_line(&mut line) {
                    Ok(0) | Err(_) => None,
                    Ok(_) => Some(line.trim_end_matches('\n').to_owned()),
                }
            });
            let line = tokio::select! {
                line = line => line.ok().flatten(),
                () = cancel.cancelled() => None,
            };
            match line {
                Some(line) => {
                    json!({"action": "write", "job": id, "text": line, "keys": ["Enter"]})
                }
                None => json!({"action": "stop", "job": id}),
            }
        } else if cancel.is_cancelled() {
            json!({"action": "stop", "job": id})
        } else {
            json!({"action": "read", "job": id, "since": result.details.next_cursor.unwrap_or(0)})
        };
        let stop = next["action"] == "stop";
        result = jobs.call_with(&next, cancel.clone()).await;
        if stop {
            result.details.success = false;
            result.is_error = true;
            return result;
        }
        if result.details.state.as_deref() == Some("running") && next["action"] == "read" {
            let waited = jobs
                .call(&json!({"action": "wait", "job": id, "timeout": 1}))
                .await;
            if waited.details.state.as_deref() != Some("running") {
                result = jobs.call(&json!({"action": "read", "job": id, "since": result.details.next_cursor.unwrap_or(0)})).await;
            }
        }
    }
}

pub fn run(args: &RunArgs) -> anyhow::Result<ExitCode> {
    let input = tool_input(args)?;
    let (mut config, exec) = crate::environment::for_invocation(&args.tool, &args.remote)?;
    let interactive = matches!(args.mode, Some(ModeArg::Interactive));
    config.fields.interactive = interactive;
    config.jobs_tool = interactive;
    let live = !args.json && !args.model_text && !interactive;
    let stdout_closed = Arc::new(AtomicBool::new(false));
    // One call: a current-thread runtime reads the output on this thread,
    // with no worker threads to start or to hand each chunk between.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let asking = crate::approvals::for_run(&args.approvals, &args.tool, &args.remote)?;
    let result: ToolResult = runtime.block_on(async {
        let tool = asking.tool(BashTool::new(config, exec.command_exec()));
        let cancel = CancellationToken::new();
        let context = CallContext {
            cancel: cancel.clone(),
            on_output: live.then(|| printer(cancel.clone(), Arc::clone(&stdout_closed))),
        };
        // Ctrl-C, SIGTERM and SIGHUP stop the command's whole process
        // tree, not just bashtool.
        if let Err(error) = crate::signals::cancel_on_signals(cancel.clone()) {
            eprintln!("bashtool: warning: signals will not stop the command: {error:#}");
        }
        let mut result = tool.call_with(&input, context).await;
        if interactive {
            result = converse(
                result,
                &bashtool_core::JobsTool::new(tool.config().clone(), exec.jobs()),
                &cancel,
            )
            .await;
        }
        if let Err(error) = exec.finish().await {
            eprintln!("bashtool: warning: {error:#}");
        }
        asking.finish().await;
        result
    });
    if stdout_closed.load(Ordering::Relaxed) {
        eprintln!("{}", summary(&result.details));
        eprintln!("bashtool: stdout was closed, so the command was stopped");
        return Ok(ExitCode::from(exit::STDOUT_CLOSED));
    }
    let mut stdout = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer(&mut stdout, &result)?;
        writeln!(stdout)?;
    } else if args.model_text || result.details.pid.is_some() {
        writeln!(stdout, "{}", result.text())?;
    } else if result.details.error_kind.is_some() {
        eprintln!("bashtool: {}", result.text());
    } else {
        // The reader may have gone after the last chunk: the status still
        // goes to stderr.
        let _ = stdout.flush();
        eprintln!("{}", summary(&result.details));
    }
    Ok(ExitCode::from(exit::status_of(&result.details)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(words: &[&str]) -> Vec<String> {
        words.iter().map(|word| (*word).to_owned()).collect()
    }

    #[test]
    fn one_argument_is_the_script_and_several_are_quoted_words() {
        assert_eq!(script(&words(&["ls | wc -l"])), "ls | wc -l");
        assert_eq!(
            script(&words(&["printf", "[%s]\\n", "a b", "it's", ""])),
            r"printf '[%s]\n' 'a b' 'it'\''s' ''"
        );
        assert_eq!(
            script(&words(&["cargo", "test", "--", "-q"])),
            "cargo test -- -q"
        );
        assert_eq!(script(&words(&["-x"])), "-x");
        assert_eq!(script(&words(&["--weird", "a b"])), "--weird 'a b'");
    }
}
