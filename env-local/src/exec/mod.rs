//! [`LocalExec`]: the production [`CommandExec`].

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bashtool_core::{
    CommandExec, CommandResult, EnvironmentInfo, ExecError, ExecMode, SpawnOptions,
};
use nix::sys::signal::Signal;
use tokio_util::sync::CancellationToken;

mod background;
mod interactive;
mod jobs_port;
mod warm;

use crate::call_log::CallLog;
use crate::config::LocalConfig;
use crate::jobs::{InteractiveJobs, JobStore, JobTable};
use crate::logs::LogDir;
use crate::reader::OutputPump;
use crate::spawn::{self, SpawnRequest};
use bashtool_process::Containment;
use bashtool_process::{ExitStatus, RootProcess};
use bashtool_process::{ProcessInfo, RunMarker, group_is_empty, kill_survivors, signal_process};

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
    logs: Arc<LogDir>,
    jobs: JobTable,
    interactive: InteractiveJobs,
    environment: EnvironmentInfo,
    /// Why the sandbox asked for cannot be enforced: every call fails.
    sandbox_error: Option<String>,
    /// The cgroups of its commands (and why limits asked for cannot be
    /// had: every call fails then too).
    limits: crate::limits::Limits,
    /// SIGKILLs scheduled for leftovers that ignored SIGTERM; shutdown waits
    /// for them, so a short-lived process (`bashtool call`) cannot exit
    /// before they land.
    escalations: std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>,
    /// Shells started ahead of stateless calls (`config.warm_shells`).
    warm: Option<Arc<warm::WarmShells>>,
    /// Foreground calls running now: warm shells are started ahead only
    /// while at most one runs (see `warm`).
    calls_running: AtomicUsize,
}

/// Counts a foreground call as running while it lives; the last call to
/// end fills the warm shells again (the only refill after a start).
struct RunningCall<'a> {
    exec: &'a LocalExec,
}

impl<'a> RunningCall<'a> {
    fn enter(exec: &'a LocalExec) -> Self {
        exec.inner.calls_running.fetch_add(1, Ordering::AcqRel);
        Self { exec }
    }
}

impl Drop for RunningCall<'_> {
    fn drop(&mut self) {
        if self.exec.inner.calls_running.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.exec.fill_warm_shells();
        }
    }
}

impl Inner {
    /// Whether a warm shell may be started now: at most one call runs.
    fn may_start_warm_shell(&self) -> bool {
        self.calls_running.load(Ordering::Acquire) <= 1
    }
}

/// How the wait for a foreground command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    Exited,
    TimedOut,
    Cancelled,
    /// The command stopped itself (`kill -STOP $$`, a terminal stop): it
    /// can never go on here, so waiting would only run out the timeout.
    Stopped,
}

/// How often a running command is checked for having stopped itself.
const STOPPED_CHECK: Duration = Duration::from_millis(200);

/// Completes once `pid` or one of its children is stopped (state `T`):
/// a shell waiting for a stopped child waits forever without job control.
pub(crate) async fn stopped(pid: u32) {
    loop {
        tokio::time::sleep(STOPPED_CHECK).await;
        if bashtool_process::stopped_with_children(pid) {
            return;
        }
    }
}

/// Stops a command's tree if its call is dropped before it finished.
struct KillOnDrop {
    tree: Arc<dyn Containment>,
    root: Option<RootProcess>,
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(root) = self.root.take() {
            // The root is unreaped, so the group id is still ours. No grace
            // here: a dropped future cannot wait.
            self.tree.kill_now();
            drop(root);
        }
    }
}

impl LocalExec {
    /// An environment with `config`. The sandbox `config.sandbox` asks for
    /// is prepared here, once; if the kernel cannot enforce it, every call
    /// fails with an error that names the missing feature and the setting
    /// that turns the sandbox off (never a silent fallback).
    pub fn new(config: LocalConfig) -> Self {
        let (config, sandbox, sandbox_error) = crate::confine::with_sandbox(config, &[]);
        Self::prepared(config, sandbox, sandbox_error)
    }

    /// An environment whose sandbox is already among `config.wrappers`.
    pub(crate) fn prepared(
        config: LocalConfig,
        sandbox: Option<bashtool_core::SandboxInfo>,
        sandbox_error: Option<String>,
    ) -> Self {
        let logs = Arc::new(config.log_dir_handle());
        let store = config.job_records.clone().map(JobStore::new);
        let jobs = JobTable::new(config.kill_grace, config.keep_jobs_on_drop, store);
        let limits = crate::limits::Limits::prepare(&config.limits);
        let environment = EnvironmentInfo {
            name: "local".to_owned(),
            sandbox,
            tools: crate::tools::available_tools(),
            limits: limits.info(),
        };
        let warm = if sandbox_error.is_none() && limits.error().is_none() {
            warm::WarmShells::for_config(&config)
        } else {
            None
        };
        let exec = Self {
            inner: Arc::new(Inner {
                config,
                logs,
                jobs,
                interactive: InteractiveJobs::default(),
                environment,
                escalations: std::sync::Mutex::new(Vec::new()),
                sandbox_error,
                limits,
                warm,
                calls_running: AtomicUsize::new(0),
            }),
        };
        exec.fill_warm_shells();
        exec
    }

    /// Starts warm shells until the pool is full, on a blocking thread of
    /// the current runtime (none outside one: the first call starts its own
    /// shell), if at most one call runs: with more in flight, the CPU is
    /// what limits them, and a warm shell's start is only extra work for it.
    ///
    /// A launch blocks until the shell has exec'd (with the sandbox, on its
    /// spawner thread): on an async worker it held that worker, and the
    /// answer of the call that had just ended waited behind it.
    fn fill_warm_shells(&self) {
        let Some(warm) = &self.inner.warm else {
            return;
        };
        if !warm.has_room() || !self.inner.may_start_warm_shell() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if !warm.claim_fill() {
            return;
        }
        // A weak reference: an environment dropped meanwhile starts none.
        let inner = Arc::downgrade(&self.inner);
        runtime.spawn_blocking(move || {
            if let Some(inner) = inner.upgrade()
                && let Some(warm) = &inner.warm
            {
                warm.fill(&inner.config, &inner.limits, || {
                    inner.may_start_warm_shell()
                });
            }
        });
    }

    /// The settings it was made with.
    pub fn config(&self) -> &LocalConfig {
        &self.inner.config
    }

    /// The cgroups of its commands.
    pub(crate) fn limits(&self) -> &crate::limits::Limits {
        &self.inner.limits
    }

    /// Its background jobs.
    pub fn jobs(&self) -> &JobTable {
        &self.inner.jobs
    }

    /// The directory of log and job output files.
    pub fn log_dir(&self) -> &Path {
        self.inner.logs.path()
    }

    /// Stops every background job (unless they are configured to outlive
    /// the environment), and waits for the SIGKILLs scheduled for leftovers
    /// that ignored SIGTERM.
    pub async fn shutdown(&self) {
        if let Some(warm) = &self.inner.warm {
            warm.clear();
        }
        if !self.inner.config.keep_jobs_on_drop {
            self.inner.jobs.stop_all().await;
        }
        // A terminal lives in this process: its job cannot outlive it.
        self.inner.interactive.stop_all().await;
        let pending: Vec<tokio::task::JoinHandle<()>> = std::mem::take(
            &mut *self
                .inner
                .escalations
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        for handle in pending {
            let _ = handle.await;
        }
    }

    async fn run_foreground(
        &self,
        command: &str,
        options: SpawnOptions,
    ) -> Result<CommandResult, ExecError> {
        let started = Instant::now();
        let _running = RunningCall::enter(self);
        let config = &self.inner.config;
        let cwd = spawn::resolve_cwd(&config.working_directory, options.cwd.as_deref())?;
        let warm = match &self.inner.warm {
            Some(warm) if warm::WarmShells::fits(config, command, &cwd, &options.env) => {
                warm.start(command, &cwd).await
            }
            _ => None,
        };
        let (spawned, marker, cgroup) = if let Some(started) = warm {
            (started.spawned, started.marker, started.cgroup)
        } else {
            let marker = RunMarker::new();
            let cgroup = self.inner.limits.for_call()?;
            let wrappers = cgroup
                .as_ref()
                .map(|cgroup| cgroup.wrappers(&config.wrappers));
            let mut request =
                SpawnRequest::from_config(config, command, &cwd, &options.env, &marker);
            if let Some(wrappers) = &wrappers {
                request.wrappers = wrappers;
            }
            (spawn::spawn(&request)?, marker, cgroup)
        };
        // The next call's shell starts when this one has ended (the
        // `RunningCall` guard): started while it runs, its start-up took
        // the CPU the call and its answer needed.
        let mut tree = config.containment.contain(
            spawned.root.pid(),
            &marker,
            crate::realm::adopter(&config.wrappers),
        );
        if let Some(cgroup) = &cgroup {
            tree = cgroup.contain(tree, spawned.root.pid());
        }
        let mut guard = KillOnDrop {
            tree: Arc::clone(&tree),
            root: Some(spawned.root),
        };
        let mut notes = Vec::new();
        let log = CallLog::open(&self.inner.logs, &options.output, command);
        let mut pump = OutputPump::new(spawned.stdout, spawned.stderr, options.output.clone());
        let root = guard.root.as_ref().ok_or_else(|| ExecError::Other {
            message: "internal error: the command's process handle is missing".to_owned(),
        })?;
        let stop_reading = CancellationToken::new();
        let reading_done = CancellationToken::new();
        let pipes_closed = reading_done.clone();
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
                    // The common case, nothing left behind, costs one
                    // syscall instead of a scan of /proc.
                    // Nothing left needs no scan: the group is empty and
                    // the pipes closed. A `set -m` job has a group of its
                    // own but still holds the pipes: then scan the session.
                    if root.reap_now() && group_is_empty(root.pid()) && pipes_closed.is_cancelled()
                    {
                        Leftovers::default()
                    } else {
                        stop_leftovers(tree.as_ref(), root.pid()).await
                    }
                }
                Ending::TimedOut | Ending::Cancelled | Ending::Stopped => {
                    tree.terminate(config.kill_grace).await;
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
        let output = pump.finish();
        let root = guard.root.take();
        drop(guard);
        if let Some(mut root) = root {
            if leftovers.survivors.is_empty() {
                root.try_reap();
            } else {
                let handle = escalate_later(
                    root,
                    Arc::clone(&tree),
                    leftovers.survivors.clone(),
                    config.kill_grace,
                );
                let mut escalations = self
                    .inner
                    .escalations
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                escalations.retain(|pending| !pending.is_finished());
                escalations.extend(handle);
            }
        }
        if leftovers.count > 0 {
            notes.push(leftover_note(leftovers.count));
        }
        if ending == Ending::Stopped {
            notes.push(
                "the command stopped itself (SIGSTOP or a terminal stop signal); a stopped command can never go on here, so its process tree was stopped"
                    .to_owned(),
            );
        }
        // The call's hold on its cgroup ends here: an empty one is kept for
        // the next call.
        drop(tree);
        if let Some(cgroup) = cgroup {
            // 137: a shell's report of a child killed by SIGKILL.
            let killed = matches!(
                status,
                ExitStatus::Signal(Signal::SIGKILL) | ExitStatus::Code(137)
            );
            notes.extend(cgroup.notes(killed));
        }
        notes.extend(crate::realm::after_call(&config.wrappers));
        let log_file = finish_log(&self.inner.logs, &log, &output, &mut notes);
        Ok(CommandResult {
            exit_code: match status {
                ExitStatus::Code(code) => Some(code),
                _ => None,
            },
            signal: if ending == Ending::Stopped {
                Some("SIGSTOP".to_owned())
            } else {
                status.signal_name()
            },
            duration: started.elapsed(),
            timed_out: ending == Ending::TimedOut,
            cancelled: ending == Ending::Cancelled,
            output,
            log_file,
            notes,
            background: None,
            interactive: None,
            shell: None,
            working_directory: Some(cwd),
        })
    }

    /// Why the sandbox asked for cannot be enforced here, if it cannot
    /// (then every call fails with this message).
    pub fn sandbox_error(&self) -> Option<&str> {
        self.inner.sandbox_error.as_deref()
    }

    /// The sandbox in force, as the model is told about it.
    pub(crate) fn sandbox_info(&self) -> Option<&bashtool_core::SandboxInfo> {
        self.inner.environment.sandbox.as_ref()
    }

    /// What this environment tells the model about itself.
    pub fn environment_info(&self) -> EnvironmentInfo {
        self.inner.environment.clone()
    }
}

#[async_trait::async_trait]
impl CommandExec for LocalExec {
    async fn spawn(
        &self,
        command: &str,
        options: SpawnOptions,
    ) -> Result<CommandResult, ExecError> {
        if let Some(message) = self
            .inner
            .sandbox_error
            .as_deref()
            .or_else(|| self.inner.limits.error())
        {
            return Err(ExecError::Other {
                message: message.to_owned(),
            });
        }
        let mut result = match options.mode {
            ExecMode::Foreground => self.run_foreground(command, options).await,
            ExecMode::Background => self.run_background(command, &options).await,
            ExecMode::Interactive => self.run_interactive(command, &options).await,
        }?;
        // A denial is explained, so the model (and the user) can act
        // without strace.
        crate::denial::explain(&mut result, self.sandbox_info());
        Ok(result)
    }

    fn environment(&self) -> EnvironmentInfo {
        self.environment_info()
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
        () = stopped(root.pid()) => Ending::Stopped,
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
async fn stop_leftovers(tree: &dyn Containment, root_pid: u32) -> Leftovers {
    let members = tree.members(false);
    if members.is_empty() {
        return Leftovers::default();
    }
    // Root unreaped: the group id is still the command's.
    let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(root_pid as i32), Signal::SIGTERM);
    for member in &members {
        if member.group != root_pid {
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
    tree: Arc<dyn Containment>,
    survivors: Vec<ProcessInfo>,
    grace: Duration,
) -> Option<tokio::task::JoinHandle<()>> {
    let task = async move {
        tokio::time::sleep(grace).await;
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(root.pid() as i32),
            Signal::SIGKILL,
        );
        kill_survivors(&survivors, None);
        drop(tree);
        drop(root);
    };
    tokio::runtime::Handle::try_current()
        .ok()
        .map(|handle| handle.spawn(task))
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
    log: &CallLog,
    output: &bashtool_core::OutputBuffer,
    notes: &mut Vec<String>,
) -> Option<PathBuf> {
    let path = log.path()?;
    if output.log_error().is_some() {
        // The report says the log failed; a partial file would mislead.
        logs.discard(&path);
        return None;
    }
    if let Some(note) = log.truncation_note() {
        notes.push(note);
    }
    Some(path)
}
