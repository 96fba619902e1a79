//! [`LocalExec`]: the production [`CommandExec`].

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bashtool_core::{
    BackgroundJob, CommandExec, CommandResult, ExecError, ExecMode, OutputBuffer, SpawnOptions,
};
use nix::sys::signal::Signal;
use tokio_util::sync::CancellationToken;

use crate::config::LocalConfig;
use crate::jobs::JobTable;
use crate::kill::{ProcessInfo, ProcessTree, RunMarker, kill_survivors, signal_process};
use crate::logs::{LogDir, LogHandle};
use crate::reader::OutputPump;
use crate::spawn::{self, ExitStatus, Output, RootProcess, SpawnRequest};

/// After the command's main process exits, how long we wait for the pipes
/// to close. Data written before the exit is already in the pipes; what keeps
/// them open longer is a leftover process (`server &`), and we must not wait
/// for it.
pub const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(100);
/// How long leftovers get to end after SIGTERM before the call returns
/// (those still running get SIGKILL after the kill grace, in the background).
pub const LEFTOVER_WAIT: Duration = Duration::from_millis(100);
/// How long to keep reading after the tree was stopped: a process outside
/// the tree (an escapee after a normal exit) may hold the pipes open.
pub const FINAL_DRAIN: Duration = Duration::from_millis(50);

/// Runs commands as real processes. Cheap to clone; clones share the log
/// directory and the job table.
#[derive(Clone, Debug)]
pub struct LocalExec {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    config: LocalConfig,
    logs: LogDir,
    jobs: JobTable,
}

/// How the wait for a foreground command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    Exited,
    TimedOut,
    Cancelled,
}

/// Stops a command's tree if its call is dropped before it finished.
struct KillOnDrop {
    tree: ProcessTree,
    root: Option<RootProcess>,
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(root) = self.root.take() {
            // The root is unreaped, so the group id is still ours. No grace
            // here: a dropped future cannot wait.
            self.tree.kill_now(true);
            drop(root);
        }
    }
}

impl LocalExec {
    pub fn new(config: LocalConfig) -> Self {
        let logs = LogDir::new(
            config.effective_log_dir(),
            config.max_log_files,
            config.max_log_bytes,
        );
        let jobs = JobTable::new(config.kill_grace, config.keep_jobs_on_drop);
        Self {
            inner: Arc::new(Inner { config, logs, jobs }),
        }
    }

    pub fn config(&self) -> &LocalConfig {
        &self.inner.config
    }

    pub fn jobs(&self) -> &JobTable {
        &self.inner.jobs
    }

    /// The directory of log and job output files.
    pub fn log_dir(&self) -> &Path {
        self.inner.logs.path()
    }

    /// Stops every background job (unless they are configured to outlive
    /// the environment, in which case it does nothing).
    pub async fn shutdown(&self) {
        if !self.inner.config.keep_jobs_on_drop {
            self.inner.jobs.stop_all().await;
        }
    }

    async fn run_foreground(
        &self,
        command: &str,
        options: SpawnOptions,
    ) -> Result<CommandResult, ExecError> {
        let started = Instant::now();
        let config = &self.inner.config;
        let cwd = spawn::resolve_cwd(&config.working_directory, options.cwd.as_deref())?;
        let marker = RunMarker::new();
        let request = SpawnRequest::from_config(config, command, &cwd, &options.env, &marker);
        let spawned = spawn::spawn(&request, Output::Pipes)?;
        let tree = ProcessTree::new(spawned.root.pid(), Some(marker.clone()));
        let mut guard = KillOnDrop {
            tree: tree.clone(),
            root: Some(spawned.root),
        };
        let mut notes = Vec::new();
        let (output, log) = match self.inner.logs.create_log(command) {
            Ok((writer, handle)) => (
                OutputBuffer::with_log(&config.output, Box::new(writer), command),
                Some(handle),
            ),
            Err(error) => {
                notes.push(format!(
                    "no log file: could not create one in {}: {error}",
                    self.inner.logs.path().display()
                ));
                (OutputBuffer::new(&config.output), None)
            }
        };
        let mut pump = OutputPump::new(
            spawned.stdout,
            spawned.stderr,
            output,
            options.on_output.clone(),
        );
        let root = guard.root.as_ref().ok_or_else(|| ExecError::Other {
            message: "internal error: the command's process handle is missing".to_owned(),
        })?;
        let stop_reading = CancellationToken::new();
        let reading_done = CancellationToken::new();
        let reading = async {
            pump.run(&stop_reading).await;
            reading_done.cancel();
        };
        let control = async {
            let ending = wait_for_end(root, &options).await;
            let outcome = match ending {
                Ending::Exited => {
                    tokio::select! {
                        () = reading_done.cancelled() => {}
                        () = tokio::time::sleep(DRAIN_AFTER_EXIT) => {}
                    }
                    stop_leftovers(&tree).await
                }
                Ending::TimedOut | Ending::Cancelled => {
                    tree.terminate(config.kill_grace, true).await;
                    Leftovers::default()
                }
            };
            tokio::select! {
                () = reading_done.cancelled() => {}
                () = tokio::time::sleep(FINAL_DRAIN) => {}
            }
            stop_reading.cancel();
            (ending, outcome)
        };
        let ((), (ending, leftovers)) = tokio::join!(reading, control);
        let status = root.status();
        let mut output = pump.finish();
        let root = guard.root.take();
        drop(guard);
        if let Some(mut root) = root {
            if leftovers.survivors.is_empty() {
                root.try_reap();
            } else {
                escalate_later(root, tree, leftovers.survivors.clone(), config.kill_grace);
            }
        }
        if leftovers.count > 0 {
            notes.push(leftover_note(leftovers.count));
        }
        let log_file = finish_log(&self.inner.logs, log, &mut output, &mut notes);
        Ok(CommandResult {
            exit_code: match status {
                ExitStatus::Code(code) => Some(code),
                _ => None,
            },
            signal: status.signal_name(),
            duration: started.elapsed(),
            timed_out: ending == Ending::TimedOut,
            cancelled: ending == Ending::Cancelled,
            output,
            log_file,
            notes,
            background: None,
            shell: None,
            working_directory: Some(cwd),
        })
    }

    fn run_background(
        &self,
        command: &str,
        options: &SpawnOptions,
    ) -> Result<CommandResult, ExecError> {
        let started = Instant::now();
        let config = &self.inner.config;
        let cwd = spawn::resolve_cwd(&config.working_directory, options.cwd.as_deref())?;
        let mut notes = Vec::new();
        let (output_file, file) = match self.inner.logs.create_job_output(command) {
            Ok(created) => created,
            Err(error) => {
                // The log directory is unusable: the job still needs a file.
                let fallback = LogDir::new(
                    std::env::temp_dir().join(format!("bashtool-jobs-{}", std::process::id())),
                    1,
                    u64::MAX,
                );
                let created = fallback.create_job_output(command).map_err(|fallback_error| {
                    ExecError::Other {
                        message: format!(
                            "could not create an output file for the background job: {error}; {fallback_error}"
                        ),
                    }
                })?;
                notes.push(format!(
                    "the log directory {} is unusable ({error}); the output file is elsewhere",
                    self.inner.logs.path().display()
                ));
                created
            }
        };
        let marker = RunMarker::new();
        let request = SpawnRequest::from_config(config, command, &cwd, &options.env, &marker);
        let spawned = match spawn::spawn(&request, Output::File(file)) {
            Ok(spawned) => spawned,
            Err(error) => {
                let _ = std::fs::remove_file(&output_file);
                return Err(error);
            }
        };
        let pid = spawned.root.pid();
        let tree = ProcessTree::new(pid, Some(marker));
        self.inner.jobs.add(
            spawned.root,
            tree,
            command,
            output_file.clone(),
            spawned.script_file,
        );
        let mut output = OutputBuffer::new(&config.output);
        output.finish();
        Ok(CommandResult {
            exit_code: None,
            signal: None,
            duration: started.elapsed(),
            timed_out: false,
            cancelled: false,
            output,
            log_file: None,
            notes,
            background: Some(BackgroundJob { pid, output_file }),
            shell: None,
            working_directory: Some(cwd),
        })
    }
}

#[async_trait::async_trait]
impl CommandExec for LocalExec {
    async fn spawn(
        &self,
        command: &str,
        options: SpawnOptions,
    ) -> Result<CommandResult, ExecError> {
        match options.mode {
            ExecMode::Foreground => self.run_foreground(command, options).await,
            ExecMode::Background => self.run_background(command, &options),
        }
    }
}

async fn wait_for_end(root: &RootProcess, options: &SpawnOptions) -> Ending {
    let deadline = async {
        match options.timeout {
            Some(timeout) => tokio::time::sleep(timeout).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        biased;
        () = root.exited() => Ending::Exited,
        () = options.cancel.cancelled() => Ending::Cancelled,
        () = deadline => Ending::TimedOut,
    }
}

#[derive(Debug, Default)]
struct Leftovers {
    /// Processes of the command's session still running after it exited.
    count: usize,
    /// Those that outlived SIGTERM for [`LEFTOVER_WAIT`].
    survivors: Vec<ProcessInfo>,
}

/// Stops what the command left running in its session (`sleep 30 &`).
/// Escapees that called `setsid` are left alone after a normal exit: that
/// is how one deliberately starts a daemon.
async fn stop_leftovers(tree: &ProcessTree) -> Leftovers {
    let members = tree.members(false);
    if members.is_empty() {
        return Leftovers::default();
    }
    tree.signal_group(Signal::SIGTERM);
    for member in &members {
        if Some(member.group) != tree.root_pid() {
            signal_process(member, Signal::SIGTERM);
        }
    }
    let deadline = tokio::time::Instant::now() + LEFTOVER_WAIT;
    let mut survivors = members.clone();
    while !survivors.is_empty() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
        survivors = tree.members(false);
    }
    Leftovers {
        count: members.len(),
        survivors,
    }
}

/// SIGKILL for leftovers that ignored SIGTERM, after the grace, without
/// holding up the call. The root stays unreaped until then, so the group id
/// cannot be reused by another process meanwhile.
fn escalate_later(
    root: RootProcess,
    tree: ProcessTree,
    survivors: Vec<ProcessInfo>,
    grace: Duration,
) {
    let task = async move {
        tokio::time::sleep(grace).await;
        tree.signal_group(Signal::SIGKILL);
        kill_survivors(&survivors, None);
        drop(root);
    };
    if let Ok(handle) = tokio::runtime::Handle::try_current() {
        drop(handle.spawn(task));
    }
}

fn leftover_note(count: usize) -> String {
    let (processes, were) = if count == 1 {
        ("process", "was")
    } else {
        ("processes", "were")
    };
    format!(
        "{count} leftover {processes} still running after the command exited {were} stopped; \
         run servers and watchers with mode \"background\""
    )
}

/// The log file to report, and notes about it.
fn finish_log(
    logs: &LogDir,
    log: Option<LogHandle>,
    output: &mut OutputBuffer,
    notes: &mut Vec<String>,
) -> Option<PathBuf> {
    let log = log?;
    if output.log_error().is_some() {
        // The report says the log failed; a partial file would mislead.
        logs.discard(&log.path);
        return None;
    }
    if let Some(note) = log.truncation_note() {
        notes.push(note);
    }
    Some(log.path)
}
