//! `bashtool jobs`: list, read and stop the background jobs that bashtool
//! processes started (an MCP server, `bashtool run --mode background`).
//!
//! This runs in a process of its own, so it works from the job records on
//! disk ([`records`]): liveness from the pid and its start time, output from
//! the output file, and stop by signalling the job's process group (each job
//! leads its own).

pub mod records;

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use bashtool_env_local::ProcessTree;
use clap::{Args, Subcommand};
use serde_json::json;

use records::{JobRecord, JobStore, read_tail};

/// List, read and stop background jobs started by bashtool
///
/// Jobs are recorded in $BASHTOOL_STATE_DIR, else $XDG_STATE_HOME/bashtool,
/// else ~/.local/state/bashtool (jobs.json). A job keeps running only as
/// long as the process that started it allows: an MCP server stops its jobs
/// when it exits unless started with --keep-jobs.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  bashtool jobs\n  bashtool jobs output 4242 --lines 100\n  \
bashtool jobs output 4242 --since 18230\n  bashtool jobs stop 4242\n  bashtool jobs prune"
)]
pub struct JobsArgs {
    /// Directory of the job records [default: see above]
    #[arg(long, value_name = "DIR", global = true)]
    pub state_dir: Option<PathBuf>,
    #[command(subcommand)]
    pub action: Option<JobsAction>,
}

#[derive(Debug, Subcommand)]
pub enum JobsAction {
    /// List the jobs with their status (the default)
    List {
        /// Print a JSON array
        #[arg(long)]
        json: bool,
    },
    /// Print a job's output: its last lines, or what came after an offset
    Output {
        pid: u32,
        /// The last N lines
        #[arg(long, value_name = "N", default_value_t = 50, conflicts_with = "since")]
        lines: usize,
        /// Everything after this byte offset (the next offset is printed on stderr)
        #[arg(long, value_name = "OFFSET")]
        since: Option<u64>,
    },
    /// Stop a job: SIGTERM to its process tree, SIGKILL after the grace
    Stop {
        pid: u32,
        /// Seconds between SIGTERM and SIGKILL
        #[arg(long, value_name = "SECONDS", default_value_t = 2.0)]
        grace: f64,
    },
    /// Forget the jobs that have ended
    Prune,
}

fn status_text(record: &JobRecord) -> String {
    if record.is_running() {
        "running".to_owned()
    } else {
        record.ending().unwrap_or_else(|| "ended".to_owned())
    }
}

fn find(store: &JobStore, pid: u32) -> anyhow::Result<JobRecord> {
    store
        .load()?
        .into_iter()
        .find(|record| record.pid == pid)
        .with_context(|| {
            format!(
                "no job with pid {pid} in {}; `bashtool jobs list` shows the known jobs",
                store.dir().display()
            )
        })
}

pub fn run(args: &JobsArgs) -> anyhow::Result<ExitCode> {
    let store = JobStore::new(args.state_dir.clone().unwrap_or_else(JobStore::default_dir));
    let mut stdout = std::io::stdout().lock();
    match args
        .action
        .as_ref()
        .unwrap_or(&JobsAction::List { json: false })
    {
        JobsAction::List { json } => {
            let records = store.load()?;
            if *json {
                let jobs: Vec<_> = records
                    .iter()
                    .map(|record| {
                        json!({
                            "pid": record.pid,
                            "command": record.command,
                            "output_file": record.output_file,
                            "working_directory": record.working_directory,
                            "running": record.is_running(),
                            "status": status_text(record),
                            "started_unix_ms": record.started_unix_ms,
                        })
                    })
                    .collect();
                writeln!(stdout, "{}", serde_json::to_string_pretty(&jobs)?)?;
            } else if records.is_empty() {
                writeln!(stdout, "no background jobs")?;
            } else {
                for record in &records {
                    writeln!(
                        stdout,
                        "{:>7}  {:<24}  {}\n         output: {}",
                        record.pid,
                        status_text(record),
                        record.command,
                        record.output_file.display()
                    )?;
                }
            }
        }
        JobsAction::Output { pid, lines, since } => {
            let record = find(&store, *pid)?;
            if let Some(offset) = since {
                let next = print_since(&mut stdout, &record, *offset)?;
                eprintln!("[next offset: {next}]");
            } else {
                print_tail(&mut stdout, &record, *lines)?;
            }
        }
        JobsAction::Stop { pid, grace } => {
            let record = find(&store, *pid)?;
            if !record.is_running() {
                writeln!(
                    stdout,
                    "job {pid} is not running ({})",
                    status_text(&record)
                )?;
                return Ok(ExitCode::SUCCESS);
            }
            let grace = crate::options::seconds("--grace", *grace, 600.0)?;
            stop_tree(&record, grace)?;
            writeln!(stdout, "job {pid}: {}", status_text(&record))?;
        }
        JobsAction::Prune => {
            let ended: Vec<u32> = store
                .load()?
                .iter()
                .filter(|record| !record.is_running())
                .map(|record| record.pid)
                .collect();
            store.remove(&ended)?;
            writeln!(stdout, "forgot {} ended jobs", ended.len())?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints what the job wrote after `offset`; returns the next offset.
fn print_since(
    stdout: &mut impl std::io::Write,
    record: &JobRecord,
    offset: u64,
) -> anyhow::Result<u64> {
    use std::io::{Seek as _, SeekFrom};
    let path = &record.output_file;
    let mut file =
        std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    file.seek(SeekFrom::Start(offset))?;
    let copied = std::io::copy(&mut file, stdout)?;
    stdout.flush()?;
    Ok(offset + copied)
}

/// Prints the job's last `lines` lines.
fn print_tail(
    stdout: &mut impl std::io::Write,
    record: &JobRecord,
    lines: usize,
) -> anyhow::Result<()> {
    let path = &record.output_file;
    // 64 KiB of tail per line asked for, at most 64 MiB.
    let budget = (lines as u64).saturating_mul(64 * 1024).min(64 << 20);
    let tail = read_tail(path, budget).with_context(|| format!("reading {}", path.display()))?;
    let all: Vec<&str> = tail.lines().collect();
    for line in &all[all.len().saturating_sub(lines)..] {
        writeln!(stdout, "{line}")?;
    }
    Ok(())
}

/// SIGTERM to the job's whole tree (its session and process group), then
/// SIGKILL to what is left after `grace`.
fn stop_tree(record: &JobRecord, grace: Duration) -> anyhow::Result<()> {
    let tree = ProcessTree::new(record.pid, None);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()?;
    runtime.block_on(tree.terminate(grace, false));
    Ok(())
}
