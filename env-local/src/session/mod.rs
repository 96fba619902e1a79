//! Persistent shell sessions (seed 002): one long-lived bash per
//! conversation, so that `cd`, `export`, `source .venv/bin/activate`,
//! functions, aliases and options carry over from one call to the next.
//!
//! Design (see `docs/sessions.md` for the measurements):
//! - One `bash --noprofile --norc` per [`Session`], leading its own session
//!   and process group. Its stdin is a pipe that carries only driver lines;
//!   its own stdout/stderr are `/dev/null`.
//! - Statuses travel on a separate control pipe (fd 3) that the command
//!   cannot see, so no output can be mistaken for one.
//! - Each call: the command text goes to a file, which the shell `source`s at
//!   top level (no fork, no quoting, no size limit) with stdin `/dev/null` and
//!   stdout/stderr on two FIFOs made for this call. Processes the command
//!   leaves behind hold only this call's FIFOs, so their output can never
//!   leak into a later call.
//! - After each command the shell writes a snapshot of its state (builtins
//!   only). When the shell dies anyway (`exit`, `exec`, a kill, a timeout),
//!   the next call starts a new one from the newest complete snapshot.

mod driver;
mod procs;
mod protocol;
mod shell;
mod snapshot;
mod state;
mod telemetry;

use std::os::fd::AsFd as _;
use std::os::unix::fs::DirBuilderExt as _;
use std::os::unix::process::ExitStatusExt as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use bashtool_core::{
    CommandExec, CommandResult, ExecError, ExecMode, OutputCapture, ShellState, SpawnOptions,
    Stream,
};
use tokio::io::AsyncReadExt as _;
use tokio::net::unix::pipe;

use crate::{JobTable, LocalConfig, LocalExec, LogDir, NON_INTERACTIVE_ENV, RunMarker};
use protocol::Record;
use shell::{Shell, ShellSpec};

/// Largest read from one output pipe.
const READ_BUFFER: usize = 64 * 1024;
/// Most reads when draining a pipe after the command ended: a leftover that
/// writes without pause must not keep the call from returning.
const MAX_DRAIN_READS: usize = 64;

/// Configuration of a [`Session`].
#[derive(Debug, Clone)]
pub struct SessionConfig {
    /// Shell program (bash), start directory, extra environment, kill grace
    /// and output budget, as for [`LocalExec`]. Background calls go to a
    /// `LocalExec` with this configuration.
    pub local: LocalConfig,
    /// Keep the session's state in this file too: a new `Session` with the
    /// same path starts from it, and [`Session::shutdown`] saves to it. This
    /// is how `bashtool run --session NAME` carries state across processes.
    pub snapshot_path: Option<PathBuf>,
    /// Report where the shell stands after each call (cwd, git branch).
    pub telemetry: bool,
}

impl Default for SessionConfig {
    fn default() -> Self {
        Self {
            local: LocalConfig::default(),
            snapshot_path: None,
            telemetry: true,
        }
    }
}

/// A persistent shell: a [`CommandExec`] whose calls share the working
/// directory, variables, functions, aliases and shell options.
///
/// Calls run one at a time, in arrival order. Cloning is cheap and shares
/// the shell. Dropping the last clone kills the shell and everything left in
/// its session; use [`Session::shutdown`] to end it gracefully and save its
/// snapshot.
///
/// A command never breaks the session: when one fails, times out, is
/// cancelled, calls `exit` or `exec`, or the shell is killed from outside,
/// the call returns its own result and the next call gets a new shell with
/// the last saved state (`ShellState::restarted`).
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use bashtool_core::{BashTool, ToolConfig};
/// use bashtool_env_local::{Session, SessionConfig};
///
/// let session = Session::new(SessionConfig::default())?; // one per conversation
/// let config = ToolConfig { persistent_session: true, ..ToolConfig::default() };
/// let tool = BashTool::new(config, Arc::new(session.clone()));
/// tool.call(serde_json::json!({"command": "cd /tmp && export GREETING=hi"})).await;
/// let result = tool.call(serde_json::json!({"command": "echo $GREETING; pwd"})).await;
/// println!("{}", result.text()); // "stdout:\nhi\n/tmp\nexit code 0\n[cwd: /tmp]"
/// session.shutdown().await?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Session {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Session")
            .field("id", &self.inner.id)
            .field("dir", &self.inner.dir.path)
            .finish_non_exhaustive()
    }
}

struct Inner {
    config: SessionConfig,
    id: u64,
    dir: SessionDir,
    state: tokio::sync::Mutex<State>,
    /// Runs `mode: "background"` calls, and holds their job table.
    background: LocalExec,
    logs: Arc<LogDir>,
}

struct State {
    shell: Option<Shell>,
    /// The shell's cwd as last reported.
    cwd: PathBuf,
    /// A shell was running before: the next start is a restart.
    had_shell: bool,
    next_call: u64,
    /// Output FIFOs of the last call, for reuse when clean.
    spare_stdout: Option<CallPipe>,
    spare_stderr: Option<CallPipe>,
    /// Snapshot after every call: a command may have defined functions or
    /// aliases whose later use changes the state unseen.
    save_every_call: bool,
}

/// The session's private directory: driver, command file, FIFOs, snapshot
/// slots. On tmpfs when available: truncating a file on ext4 costs a flush
/// (~4 ms measured), which would dominate every call.
struct SessionDir {
    path: PathBuf,
}

impl SessionDir {
    fn create(id: u64) -> std::io::Result<Self> {
        let name = format!("bashtool-session-{}-{id}", std::process::id());
        Self::create_in(Path::new("/dev/shm"), &name)
            .or_else(|_| Self::create_in(&std::env::temp_dir(), &name))
    }

    fn create_in(base: &Path, name: &str) -> std::io::Result<Self> {
        let path = base.join(name);
        // Left over by an earlier process with our pid.
        let _ = std::fs::remove_dir_all(&path);
        std::fs::DirBuilder::new().mode(0o700).create(&path)?;
        let dir = Self { path };
        for (name, script) in driver::SCRIPTS {
            std::fs::write(dir.path.join(name), script)?;
        }
        Ok(dir)
    }
}

/// Removes the session directories of processes that are gone (a server
/// killed with SIGKILL cannot remove its own). Only directories owned by us
/// are touched. Returns how many were removed.
pub(crate) fn remove_stale_session_dirs() -> usize {
    use std::os::unix::fs::MetadataExt as _;
    let own = nix::unistd::geteuid().as_raw();
    let mut removed = 0;
    for base in [PathBuf::from("/dev/shm"), std::env::temp_dir()] {
        let Ok(entries) = std::fs::read_dir(&base) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(pid) = name
                .to_str()
                .and_then(|name| name.strip_prefix("bashtool-session-"))
                .and_then(|rest| rest.split('-').next())
                .and_then(|pid| pid.parse::<u32>().ok())
            else {
                continue;
            };
            let ours = std::fs::symlink_metadata(entry.path())
                .is_ok_and(|metadata| metadata.is_dir() && metadata.uid() == own);
            if ours
                && crate::kill::process_info(pid).is_none()
                && std::fs::remove_dir_all(entry.path()).is_ok()
            {
                removed += 1;
            }
        }
    }
    removed
}

impl Drop for SessionDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// How a call's wait ended.
enum Ending {
    Status {
        status: i32,
        jobs: Vec<u32>,
        cwd: PathBuf,
    },
    ShellExited(Option<std::process::ExitStatus>),
    TimedOut,
    Cancelled,
    /// The command (or the shell) stopped itself: it can never go on.
    Stopped,
}

/// One output stream of one call: a FIFO we read, and a write end we hold
/// until the command ended, so that EOF afterwards means no process of the
/// command holds it any more. A FIFO that reached EOF is reused by the next
/// call (nobody else can write to it); one still held by a leftover is
/// dropped, and its path removed, so that the leftover's output can never
/// reach a later call.
struct CallPipe {
    path: PathBuf,
    receiver: pipe::Receiver,
    sender: Option<pipe::Sender>,
    stream: Stream,
    /// EOF was seen after the last command: free of other writers.
    clean: bool,
    /// The read buffer, kept with the pipe: zeroing fresh 64 KiB buffers
    /// on every call cost more than the call's own reads.
    buffer: Vec<u8>,
}

impl Drop for CallPipe {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

impl CallPipe {
    fn create(path: PathBuf, stream: Stream) -> std::io::Result<Self> {
        let _ = std::fs::remove_file(&path);
        nix::unistd::mkfifo(
            &path,
            nix::sys::stat::Mode::S_IRUSR | nix::sys::stat::Mode::S_IWUSR,
        )?;
        let receiver = pipe::OpenOptions::new().open_receiver(&path)?;
        let sender = pipe::OpenOptions::new().open_sender(&path)?;
        Ok(Self {
            path,
            receiver,
            sender: Some(sender),
            stream,
            clean: false,
            buffer: vec![0_u8; READ_BUFFER],
        })
    }

    /// This pipe again for the next call if it is clean, else a new one.
    fn reuse_or_create(
        spare: Option<Self>,
        path: impl FnOnce() -> PathBuf,
        stream: Stream,
    ) -> std::io::Result<Self> {
        if let Some(mut pipe) = spare
            && pipe.clean
        {
            pipe.sender = Some(pipe::OpenOptions::new().open_sender(&pipe.path)?);
            pipe.clean = false;
            return Ok(pipe);
        }
        Self::create(path(), stream)
    }

    /// Hands raw bytes to core's capture, which cleans and bounds them.
    fn push(&self, bytes: &[u8], output: &OutputCapture) {
        output.push(self.stream, bytes);
    }

    /// Reads what is in the pipe without waiting. Returns true if some
    /// process still holds the write end (no EOF).
    fn drain(&mut self, output: &OutputCapture) -> bool {
        self.sender = None;
        let mut buffer = std::mem::take(&mut self.buffer);
        let held = self.drain_with(&mut buffer, output);
        self.buffer = buffer;
        held
    }

    fn drain_with(&mut self, buffer: &mut [u8], output: &OutputCapture) -> bool {
        for _ in 0..MAX_DRAIN_READS {
            // read(2) itself, not `try_read`: tokio answers WouldBlock from
            // its cached readiness without asking the kernel, which would
            // hide both the data and the EOF that are already there.
            match nix::unistd::read(self.receiver.as_fd(), buffer) {
                Ok(0) => {
                    self.clean = true;
                    return false;
                }
                Ok(count) => self.push(&buffer[..count], output),
                Err(nix::errno::Errno::EAGAIN) => return true,
                Err(nix::errno::Errno::EINTR) => {}
                Err(_) => return false,
            }
        }
        true
    }

    fn finish(&self, output: &OutputCapture) {
        // A character cut off by the end of the output becomes U+FFFD.
        output.end_stream(self.stream);
    }
}

impl Session {
    /// Creates a session. The shell starts with the first call.
    pub fn new(mut config: SessionConfig) -> Result<Self, ExecError> {
        static NEXT_ID: AtomicU64 = AtomicU64::new(1);
        // One sandbox for the shell and the session's jobs; one the kernel
        // cannot enforce is an error, never a silent fallback.
        let (local, sandbox, sandbox_error) = crate::exec::with_sandbox(config.local);
        if let Some(message) = sandbox_error {
            return Err(ExecError::Other { message });
        }
        config.local = local;
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let dir = SessionDir::create(id).map_err(|source| ExecError::Other {
            message: format!("could not create the session directory: {source}"),
        })?;
        let cwd = config.local.working_directory.clone();
        let background = LocalExec::prepared(config.local.clone(), sandbox, None);
        let logs = Arc::new(config.local.log_dir_handle());
        let restores_a_file = config.snapshot_path.is_some();
        Ok(Self {
            inner: Arc::new(Inner {
                config,
                id,
                dir,
                state: tokio::sync::Mutex::new(State {
                    shell: None,
                    cwd,
                    had_shell: false,
                    next_call: 1,
                    spare_stdout: None,
                    spare_stderr: None,
                    // A snapshot from an earlier process may hold functions.
                    save_every_call: restores_a_file,
                }),
                background,
                logs,
            }),
        })
    }

    /// A session that starts from the snapshot at `path` (if there is one)
    /// and saves to it on [`Session::shutdown`].
    pub fn with_snapshot_path(
        mut config: SessionConfig,
        path: impl Into<PathBuf>,
    ) -> Result<Self, ExecError> {
        config.snapshot_path = Some(path.into());
        Self::new(config)
    }

    pub fn config(&self) -> &SessionConfig {
        &self.inner.config
    }

    /// The background jobs started through this session
    /// (`mode: "background"`).
    pub fn jobs(&self) -> &JobTable {
        self.inner.background.jobs()
    }

    /// The environment that runs this session's background jobs.
    pub fn background(&self) -> &LocalExec {
        &self.inner.background
    }

    /// The pid of the shell behind the session, if one is running.
    pub async fn shell_pid(&self) -> Option<u32> {
        let state = self.inner.state.lock().await;
        state.shell.as_ref().map(|shell| shell.pid)
    }

    /// Ends the shell gracefully (its EXIT trap saves the state) and, with a
    /// snapshot path, saves the state there. Later calls start a new shell.
    pub async fn shutdown(&self) -> std::io::Result<()> {
        let mut state = self.inner.state.lock().await;
        if let Some(mut shell) = state.shell.take() {
            // `exit` runs the EXIT trap, which saves the final state.
            let _ = shell.send("builtin exit 0\n").await;
            let grace = self.inner.config.local.kill_grace;
            if tokio::time::timeout(grace, shell.wait()).await.is_err() {
                procs::kill_group_now(shell.pid);
                shell.wait().await;
            }
        }
        if let Some(path) = &self.inner.config.snapshot_path
            && let Some((newest, _)) = snapshot::newest(&snapshot::slots(&self.inner.dir.path))
        {
            snapshot::persist(&newest, path)?;
        }
        // A shell started after this is not a restart after a death.
        state.had_shell = false;
        Ok(())
    }

    /// Starts a shell if none is running. Returns true when this replaces
    /// one that died (the call's result says `restarted`).
    async fn ensure_shell(&self, state: &mut State) -> Result<bool, ExecError> {
        if let Some(shell) = &mut state.shell {
            if !shell.has_exited() {
                return Ok(false);
            }
            state.shell = None;
        }
        let inner = &self.inner;
        let config = &inner.config.local;
        let mut candidates = snapshot::slots(&inner.dir.path).to_vec();
        if !state.had_shell
            && let Some(path) = &inner.config.snapshot_path
            && snapshot::trusted(path)
        {
            candidates.push(path.clone());
        }
        // A filtered copy (see snapshot::restorable); a slot may be
        // overwritten by the new shell while it is still being read.
        let restore = snapshot::newest(&candidates).and_then(|(path, sequence)| {
            let text = std::fs::read_to_string(&path).ok()?;
            let copy = inner.dir.path.join("restore.sh");
            std::fs::write(&copy, snapshot::restorable(&text)).ok()?;
            Some((copy, sequence))
        });
        let cwd = if state.cwd.is_dir() {
            state.cwd.clone()
        } else {
            config.working_directory.clone()
        };
        let mut env: Vec<(String, String)> = config
            .env_policy
            .set
            .iter()
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect();
        if config.non_interactive {
            env.extend(
                NON_INTERACTIVE_ENV
                    .iter()
                    .map(|(key, value)| ((*key).to_owned(), (*value).to_owned())),
            );
        }
        env.extend(
            config
                .env
                .iter()
                .map(|(key, value)| (key.clone(), value.clone())),
        );
        let sequence = restore.as_ref().map_or(0, |(_, sequence)| *sequence);
        let startup = driver::startup_lines(
            &inner.dir.path,
            restore.as_ref().map(|(path, _)| path.as_path()),
            sequence,
        );
        let shell = Shell::start(ShellSpec {
            program: &config.shell,
            cwd: &cwd,
            env,
            clear_env: restore.is_some(),
            remove: std::env::vars_os()
                .map(|(name, _)| name)
                .filter(|name| !config.env_policy.inherits(&name.to_string_lossy()))
                .collect(),
            startup,
            wrappers: &config.wrappers,
        })
        .await?;
        let restarted = state.had_shell;
        state.shell = Some(shell);
        state.had_shell = true;
        Ok(restarted)
    }

    async fn run_foreground(
        &self,
        command: &str,
        options: &SpawnOptions,
    ) -> Result<CommandResult, ExecError> {
        let start = Instant::now();
        let inner = &self.inner;
        let mut state = inner.state.lock().await;
        let call_cwd = match &options.cwd {
            Some(cwd) => {
                let cwd = state.cwd.join(cwd);
                check_directory(&cwd)?;
                Some(cwd)
            }
            None => None,
        };
        let mut restarted = self.ensure_shell(&mut state).await?;
        let id = state.next_call;
        state.next_call += 1;
        let io_error = |source: std::io::Error| ExecError::Other {
            message: format!("could not prepare the session call: {source}"),
        };
        let command_file = inner.dir.path.join("command.sh");
        std::fs::write(&command_file, command).map_err(io_error)?;
        let dir = &inner.dir.path;
        let mut stdout = CallPipe::reuse_or_create(
            state.spare_stdout.take(),
            || dir.join(format!("out.{id}")),
            Stream::Stdout,
        )
        .map_err(io_error)?;
        let mut stderr = CallPipe::reuse_or_create(
            state.spare_stderr.take(),
            || dir.join(format!("err.{id}")),
            Stream::Stderr,
        )
        .map_err(io_error)?;
        let marker = RunMarker::new();
        let line = driver::call_line(&driver::CallLine {
            id,
            command_file: &command_file,
            stdout_fifo: &stdout.path,
            stderr_fifo: &stderr.path,
            cwd: call_cwd.as_deref(),
            env: &options.env,
            marker: marker.value(),
            save: {
                let effect = state::state_effect(command);
                state.save_every_call |= effect == state::StateEffect::Names;
                state.save_every_call || effect != state::StateEffect::None
            },
        });
        std::fs::write(inner.dir.path.join(driver::CALL_SCRIPT), line).map_err(io_error)?;
        let output = &options.output;
        let log = crate::call_log::CallLog::open(&inner.logs, output, command);

        let mut shell = state.shell.take().ok_or_else(|| ExecError::Other {
            message: "the session shell is not running".to_owned(),
        })?;
        if shell.send(driver::RUN_CALL).await.is_err() {
            // Died between the liveness check and the write: start anew once.
            drop(shell);
            restarted |= self.ensure_shell(&mut state).await?;
            shell = state.shell.take().ok_or_else(|| ExecError::Other {
                message: "the session shell is not running".to_owned(),
            })?;
            shell
                .send(driver::RUN_CALL)
                .await
                .map_err(|source| ExecError::Spawn {
                    program: inner.config.local.shell.display().to_string(),
                    source,
                })?;
        }

        let mut dropped = procs::KillCallOnDrop {
            shell_pid: shell.pid,
            marker: marker.clone(),
            armed: true,
        };
        let ending = wait_for_end(&mut shell, id, &mut stdout, &mut stderr, options).await;

        dropped.armed = false;
        let grace = inner.config.local.kill_grace;
        let mut notes = Vec::new();
        let mut exit_code = None;
        let mut signal = None;
        let (mut timed_out, mut cancelled) = (false, false);
        match ending {
            Ending::Status { status, jobs, cwd } => {
                exit_code = Some(status);
                state.cwd = cwd;
                let held_out = stdout.drain(output);
                let held_err = stderr.drain(output);
                if !jobs.is_empty() || held_out || held_err {
                    let leftovers = procs::leftovers(shell.pid, &marker);
                    let stopped = procs::stop(&leftovers, grace).await;
                    if stopped > 0 {
                        notes.push(leftover_note(stopped));
                    }
                    stdout.drain(output);
                    stderr.drain(output);
                }
                state.shell = Some(shell);
            }
            Ending::ShellExited(status) => {
                stdout.drain(output);
                stderr.drain(output);
                if let Some(status) = status {
                    exit_code = status.code();
                    signal = status.signal().map(signal_name);
                }
                // What the command (or an `exec`ed program) left running.
                let stopped = procs::stop(&procs::marked(&marker), grace).await;
                if stopped > 0 {
                    notes.push(leftover_note(stopped));
                }
                notes.push(
                    "the command ended the session's shell (exit, exec or a signal); the next call starts a new shell with the state saved last"
                        .to_owned(),
                );
            }
            Ending::TimedOut | Ending::Cancelled | Ending::Stopped => {
                timed_out = matches!(ending, Ending::TimedOut);
                cancelled = matches!(ending, Ending::Cancelled);
                if matches!(ending, Ending::Stopped) {
                    signal = Some("SIGSTOP".to_owned());
                    notes.push(
                        "the command stopped itself (SIGSTOP or a terminal stop signal); a stopped command can never go on here, so its process tree was stopped"
                            .to_owned(),
                    );
                }
                // The command may be a loop inside the shell itself: the
                // only sure stop is the shell's whole tree. Its EXIT trap
                // (run on SIGTERM) saves the state it reached.
                procs::stop_shell_tree(shell.pid, &marker, grace).await;
                shell.wait().await;
                stdout.drain(output);
                stderr.drain(output);
                notes.push(
                    "the session's shell was stopped with the command; the next call starts a new shell with the state saved last"
                        .to_owned(),
                );
            }
        }
        stdout.finish(output);
        stderr.finish(output);
        let output = output.finish();
        notes.extend(log.truncation_note());
        state.spare_stdout = Some(stdout);
        state.spare_stderr = Some(stderr);
        let shell_state = inner.config.telemetry.then(|| ShellState {
            git_branch: telemetry::git_branch(&state.cwd),
            cwd: state.cwd.clone(),
            restarted,
        });
        Ok(CommandResult {
            exit_code,
            signal,
            duration: start.elapsed(),
            timed_out,
            cancelled,
            output,
            log_file: log.path(),
            notes,
            background: None,
            interactive: None,
            shell: shell_state,
            working_directory: Some(call_cwd.unwrap_or_else(|| state.cwd.clone())),
        })
    }

    /// Background calls run outside the shell (they must outlive the call),
    /// but with its state: a fresh snapshot is handed to `bash -c` through
    /// `BASH_ENV`, and the job starts in the session's cwd.
    async fn run_background(
        &self,
        command: &str,
        mut options: SpawnOptions,
    ) -> Result<CommandResult, ExecError> {
        let inner = &self.inner;
        let mut state = inner.state.lock().await;
        self.ensure_shell(&mut state).await?;
        let cwd = match &options.cwd {
            Some(cwd) => state.cwd.join(cwd),
            None => state.cwd.clone(),
        };
        check_directory(&cwd)?;
        if let Some(shell) = &mut state.shell
            && shell.send(driver::SAVE_NOW).await.is_ok()
        {
            let _ = tokio::time::timeout(
                inner.config.local.kill_grace,
                shell.control.wait_for(|record| *record == Record::Saved),
            )
            .await;
        }
        let id = state.next_call;
        state.next_call += 1;
        if let Some((newest, _)) = snapshot::newest(&snapshot::slots(&inner.dir.path)) {
            let copy = inner.dir.path.join(format!("background-{id}.sh"));
            let env_file = inner.dir.path.join(format!("background-{id}.env"));
            // Filtered like a restore: the job must keep its own marker.
            let prepared = std::fs::read_to_string(&newest)
                .and_then(|text| std::fs::write(&copy, snapshot::restorable(&text)))
                .and_then(|()| {
                    std::fs::write(
                        &env_file,
                        format!(
                            "unset BASH_ENV\nbuiltin source {} </dev/null >/dev/null 2>&1\n",
                            driver::quote(&copy.to_string_lossy())
                        ),
                    )
                });
            if prepared.is_ok() {
                options.env.insert(
                    "BASH_ENV".to_owned(),
                    env_file.to_string_lossy().into_owned(),
                );
            }
        }
        options.cwd = Some(cwd);
        drop(state);
        inner.background.spawn(command, options).await
    }
}

#[async_trait::async_trait]
impl CommandExec for Session {
    async fn spawn(
        &self,
        command: &str,
        options: SpawnOptions,
    ) -> Result<CommandResult, ExecError> {
        match options.mode {
            ExecMode::Background => self.run_background(command, options).await,
            ExecMode::Foreground => self.run_foreground(command, &options).await,
            // A terminal of its own, outside the session's shell (which has
            // none), in the session's directory.
            ExecMode::Interactive => {
                let mut options = options;
                if options.cwd.is_none() {
                    options.cwd = Some(self.inner.state.lock().await.cwd.clone());
                }
                self.inner.background.spawn(command, options).await
            }
        }
    }

    fn environment(&self) -> bashtool_core::EnvironmentInfo {
        self.inner.background.environment_info()
    }
}

/// The session's background jobs, run by its [`LocalExec`].
#[async_trait::async_trait]
impl bashtool_core::Jobs for Session {
    async fn list(&self) -> Vec<bashtool_core::JobInfo> {
        bashtool_core::Jobs::list(&self.inner.background).await
    }

    async fn read(
        &self,
        id: &str,
        from: bashtool_core::ReadFrom,
        max_bytes: usize,
    ) -> Result<bashtool_core::JobOutput, bashtool_core::JobError> {
        bashtool_core::Jobs::read(&self.inner.background, id, from, max_bytes).await
    }

    async fn wait(
        &self,
        id: &str,
        timeout: std::time::Duration,
        cancel: tokio_util::sync::CancellationToken,
    ) -> Result<bashtool_core::JobInfo, bashtool_core::JobError> {
        bashtool_core::Jobs::wait(&self.inner.background, id, timeout, cancel).await
    }

    async fn stop(&self, id: &str) -> Result<bashtool_core::JobInfo, bashtool_core::JobError> {
        bashtool_core::Jobs::stop(&self.inner.background, id).await
    }

    async fn write(
        &self,
        id: &str,
        input: bashtool_core::JobInput,
        yield_after: std::time::Duration,
    ) -> Result<bashtool_core::JobOutput, bashtool_core::JobError> {
        bashtool_core::Jobs::write(&self.inner.background, id, input, yield_after).await
    }

    async fn stop_all(&self) {
        bashtool_core::Jobs::stop_all(&self.inner.background).await;
    }
}

/// Reads the call's output until its status arrives, the shell exits, the
/// deadline passes or the caller cancels.
async fn wait_for_end(
    shell: &mut Shell,
    id: u64,
    stdout: &mut CallPipe,
    stderr: &mut CallPipe,
    options: &SpawnOptions,
) -> Ending {
    let mut out_buffer = std::mem::take(&mut stdout.buffer);
    let mut err_buffer = std::mem::take(&mut stderr.buffer);
    let ending = wait_for_end_with(
        shell,
        id,
        (stdout, &mut out_buffer),
        (stderr, &mut err_buffer),
        options,
    )
    .await;
    stdout.buffer = out_buffer;
    stderr.buffer = err_buffer;
    ending
}

async fn wait_for_end_with(
    shell: &mut Shell,
    id: u64,
    (stdout, out_buffer): (&mut CallPipe, &mut [u8]),
    (stderr, err_buffer): (&mut CallPipe, &mut [u8]),
    options: &SpawnOptions,
) -> Ending {
    let output = &options.output;
    let deadline = options
        .timeout
        .map(|timeout| tokio::time::Instant::now() + timeout);
    let mut out_open = true;
    let mut err_open = true;
    loop {
        let sleep = async {
            match deadline {
                Some(deadline) => tokio::time::sleep_until(deadline).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            records = shell.control.read_records() => {
                for record in records {
                    if let Record::Status { id: record_id, status, jobs, cwd } = record
                        && record_id == id
                    {
                        return Ending::Status { status, jobs, cwd };
                    }
                }
            }
            read = stdout.receiver.read(out_buffer), if out_open => match read {
                Ok(0) | Err(_) => out_open = false,
                Ok(count) => stdout.push(&out_buffer[..count], output),
            },
            read = stderr.receiver.read(err_buffer), if err_open => match read {
                Ok(0) | Err(_) => err_open = false,
                Ok(count) => stderr.push(&err_buffer[..count], output),
            },
            () = shell.root.exited(), if shell.reaped.is_none() => {
                return Ending::ShellExited(shell.wait().await);
            }
            () = sleep => return Ending::TimedOut,
            () = options.cancel.cancelled() => return Ending::Cancelled,
            () = crate::exec::stopped(shell.pid) => return Ending::Stopped,
        }
    }
}

fn check_directory(path: &Path) -> Result<(), ExecError> {
    match std::fs::metadata(path) {
        Ok(metadata) if metadata.is_dir() => Ok(()),
        Ok(_) => Err(ExecError::NotADirectory {
            path: path.to_path_buf(),
        }),
        Err(_) => Err(ExecError::MissingDirectory {
            path: path.to_path_buf(),
        }),
    }
}

fn leftover_note(count: usize) -> String {
    if count == 1 {
        "1 leftover process was stopped; servers belong in mode \"background\"".to_owned()
    } else {
        format!("{count} leftover processes were stopped; servers belong in mode \"background\"")
    }
}

fn signal_name(signal: i32) -> String {
    nix::sys::signal::Signal::try_from(signal).map_or_else(
        |_| format!("signal {signal}"),
        |signal| signal.as_str().to_owned(),
    )
}
