//! `bashtool jobs`: list, read, wait on and stop the background jobs that
//! bashtool processes of this user started (an MCP server, `bashtool call`
//! or `run` with mode "background"). It runs in a process of its own, so it
//! works from the job records on disk through the same jobs port and the
//! same `bash_jobs` tool the model uses.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
#[cfg(target_os = "linux")]
use std::time::Duration;

use bashtool_core::{JobsTool, ToolConfig};
#[cfg(target_os = "linux")]
use bashtool_env_local::{JobStore, RecordedJobs};
use clap::{Args, Subcommand};
use serde_json::{Value, json};

/// List, read, wait on and stop background jobs started by bashtool
///
/// Jobs are recorded in $BASHTOOL_STATE_DIR, else $XDG_STATE_HOME/bashtool,
/// else ~/.local/state/bashtool (jobs.json). A job started by `bashtool
/// call` or `run` outlives that process; an MCP server stops its jobs when
/// it exits unless started with --keep-jobs.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  bashtool jobs\n  bashtool jobs read j1a2b3c4 --lines 100\n  \
bashtool jobs read j1a2b3c4 --since 0\n  bashtool jobs wait j1a2b3c4 --timeout 60\n  \
bashtool jobs stop j1a2b3c4 --kill-grace 5\n  bashtool jobs prune\n  \
bashtool jobs --remote 'ssh devbox bashtool serve' list"
)]
pub struct JobsArgs {
    /// Directory of the job records [default: see above]
    #[arg(long, value_name = "DIR", global = true)]
    pub state_dir: Option<PathBuf>,
    /// Print the structured result as JSON
    #[arg(long, global = true)]
    pub json: bool,
    /// The jobs recorded where COMMAND LINE's `bashtool serve` runs (started there by `run`/`call --remote` or a server): COMMAND LINE runs with `sh -c` here, e.g. 'ssh devbox bashtool serve' or 'docker exec -i box bashtool serve'
    #[arg(long, value_name = "COMMAND LINE")]
    pub remote: Option<String>,
    /// The jobs recorded where COMMAND LINE opens a POSIX shell, e.g. 'ssh devbox' or 'docker exec -i box sh': bashtool starts its own `bashtool serve` there, as `run --remote-shell` does
    #[arg(long, value_name = "COMMAND LINE", conflicts_with = "remote")]
    pub remote_shell: Option<String>,
    /// With --remote-shell: the Linux build of bashtool to upload (a static one runs anywhere: x86_64-unknown-linux-musl) [default: this bashtool, on Linux]
    #[arg(long, value_name = "PATH", requires = "remote_shell")]
    pub serve_binary: Option<PathBuf>,
    #[command(subcommand)]
    pub action: Option<JobsAction>,
}

#[derive(Debug, Subcommand)]
pub enum JobsAction {
    /// List the jobs with their status (the default)
    List,
    /// Print a job's output: its last lines, or the window after a cursor
    #[command(alias = "output")]
    Read {
        /// The job id
        job: String,
        /// The last N lines
        #[arg(long, value_name = "N", conflicts_with = "since")]
        lines: Option<usize>,
        /// The output after this cursor (0 for the start, then the printed next_cursor)
        #[arg(long, value_name = "CURSOR")]
        since: Option<u64>,
    },
    /// Wait for a job to end
    Wait {
        /// The job id
        job: String,
        /// Seconds to wait
        #[arg(long, value_name = "SECONDS", default_value_t = 30)]
        timeout: u64,
    },
    /// Stop a job: SIGTERM to its process tree, SIGKILL after the grace
    Stop {
        /// The job id
        job: String,
        /// Seconds between SIGTERM and SIGKILL
        #[arg(
            long = "kill-grace",
            alias = "grace",
            value_name = "SECONDS",
            default_value_t = 2.0
        )]
        grace: f64,
    },
    /// Type text and keys into an interactive job (only the process that
    /// holds its terminal can: see docs/interactive.md)
    Write {
        /// The job id
        job: String,
        /// Text to type
        #[arg(default_value = "")]
        text: String,
        /// A key pressed after the text (repeatable): Enter, Tab, Esc, Up, C-c, ...
        #[arg(long = "key", value_name = "KEY")]
        keys: Vec<String>,
    },
    /// Forget the jobs that have ended
    Prune,
}

pub fn run(args: &JobsArgs) -> anyhow::Result<ExitCode> {
    let flags = crate::options::RemoteArgs {
        remote: args.remote.clone(),
        remote_shell: args.remote_shell.clone(),
        serve_binary: args.serve_binary.clone(),
    };
    if let Some(remote) = crate::remote::Remote::from_flags(&flags, Vec::new(), None)? {
        return remote_jobs(args, &remote);
    }
    local_jobs(args)
}

/// The jobs recorded on this machine.
#[cfg(target_os = "linux")]
fn local_jobs(args: &JobsArgs) -> anyhow::Result<ExitCode> {
    let dir = match &args.state_dir {
        Some(dir) => dir.clone(),
        None => bashtool_env_local::default_state_dir()?,
    };
    let grace = match &args.action {
        Some(JobsAction::Stop { grace, .. }) => {
            crate::config::seconds("--kill-grace", *grace, 600.0)?
        }
        _ => Duration::from_secs(2),
    };
    let jobs = RecordedJobs::new(JobStore::new(dir), grace);
    let Some(input) = tool_input(args) else {
        let forgotten = jobs.prune()?;
        writeln!(std::io::stdout(), "forgot {forgotten} ended jobs")?;
        return Ok(ExitCode::SUCCESS);
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut config = ToolConfig {
        redactor: default_redactor(),
        ..ToolConfig::default()
    };
    config.fields.interactive = true;
    let tool = JobsTool::new(config, Arc::new(jobs));
    let result = runtime.block_on(tool.call(&input));
    print_result(args, &result)
}

/// The relay build records no jobs of its own.
#[cfg(not(target_os = "linux"))]
fn local_jobs(_: &JobsArgs) -> anyhow::Result<ExitCode> {
    Err(crate::relay::needs_remote())
}

/// `--remote` or `--remote-shell`: the same tool on the jobs recorded over
/// there.
fn remote_jobs(args: &JobsArgs, remote: &crate::remote::Remote) -> anyhow::Result<ExitCode> {
    let Some(input) = tool_input(args) else {
        let flag = match remote {
            crate::remote::Remote::Serve(_) => "--remote",
            crate::remote::Remote::Shell { .. } => "--remote-shell",
        };
        anyhow::bail!("prune is not available with {flag}; run `bashtool jobs prune` over there");
    };
    let remote = crate::environment::recorded_jobs(remote);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let config = ToolConfig {
        redactor: default_redactor(),
        ..ToolConfig::default()
    };
    let tool = JobsTool::new(config, Arc::new(remote.clone()));
    let result = runtime.block_on(async {
        let result = tool.call(&input).await;
        remote.shutdown(crate::environment::CLOSE_MARGIN).await;
        result
    });
    print_result(args, &result)
}

/// What a reader of job outputs masks: the shapes and this process's
/// variables that the default policy withholds (the files are masked as
/// they are written by the processes that started the jobs; this catches
/// what reached them otherwise).
fn default_redactor() -> Option<Arc<bashtool_core::Redactor>> {
    crate::redact::redactor(
        &bashtool_core::RedactSettings::default(),
        &bashtool_core::EnvPolicy::default(),
        &std::collections::BTreeMap::new(),
    )
}

/// The `bash_jobs` input for the action; `None` for prune, which is not a tool action.
fn tool_input(args: &JobsArgs) -> Option<Value> {
    Some(match args.action.as_ref().unwrap_or(&JobsAction::List) {
        JobsAction::List => json!({"action": "list"}),
        JobsAction::Read { job, lines, since } => {
            let mut input = json!({"action": "read", "job": job});
            if let Some(lines) = lines {
                input["lines"] = json!(lines);
            }
            if let Some(since) = since {
                input["since"] = json!(since);
            }
            input
        }
        JobsAction::Wait { job, timeout } => {
            json!({"action": "wait", "job": job, "timeout": timeout})
        }
        JobsAction::Stop { job, .. } => json!({"action": "stop", "job": job}),
        JobsAction::Write { job, text, keys } => {
            json!({"action": "write", "job": job, "text": text, "keys": keys})
        }
        JobsAction::Prune => return None,
    })
}

fn print_result(args: &JobsArgs, result: &bashtool_core::ToolResult) -> anyhow::Result<ExitCode> {
    let mut stdout = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer(&mut stdout, result)?;
        writeln!(stdout)?;
    } else if result.is_error {
        eprintln!("bashtool: {}", result.text());
    } else {
        writeln!(stdout, "{}", result.text())?;
    }
    Ok(if result.is_error {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}
