//! Persistent shell sessions: one long-lived bash per
//! conversation, so that `cd`, `export`, `source .venv/bin/activate`,
//! functions, aliases and options carry over from one call to the next.
//!
//! Design (see `docs/sessions.md` for the measurements):
//! - One `bash --noprofile --norc -c <driver>` per [`Session`], leading its
//!   own session and process group, its stdin/stdout/stderr `/dev/null`.
//!   The driver is a loop that reads requests from a FIFO and writes
//!   records to another, opening each per use: the command never holds
//!   either, so no output and no descriptor game can forge a status.
//! - Each call: the command text goes to a file, which the shell `source`s at
//!   top level (no fork, no quoting, no size limit) with stdin `/dev/null` and
//!   stdout/stderr on two FIFOs made for this call. Processes the command
//!   leaves behind hold only this call's FIFOs, so their output can never
//!   leak into a later call.
//! - Ordinary shell text cannot take the driver over (see `scripts/init.sh`),
//!   and a shell a command poisoned anyway is replaced by one restored
//!   without the poison (`snapshot::restorable`).
//! - After each command the shell writes a snapshot of its state (builtins
//!   only). When the shell dies anyway (`exit`, `exec`, a kill, a timeout),
//!   the next call starts a new one from the newest complete snapshot.

mod background;
mod call;
mod call_pipe;
mod dir;
mod driver;
mod lock;
mod nonce;
mod procs;
mod protocol;
mod shell;
mod snapshot;
mod state;
mod telemetry;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bashtool_core::{CommandExec, CommandResult, ExecError, ExecMode, SpawnOptions};

use crate::config::NON_INTERACTIVE_ENV;
use crate::jobs::JobTable;
use crate::logs::LogDir;
use crate::{LocalConfig, LocalExec};
use call_pipe::CallPipes;
use dir::SessionDir;
pub(crate) use dir::remove_stale_session_dirs;
use lock::SnapshotLock;
use shell::{Shell, ShellSpec};

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
    /// From that restore until the save (or drop), the session holds an
    /// exclusive lock on `<path>.lock`: a second session on the same path
    /// waits for it (up to its call's timeout), so no update is lost.
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
    /// The cgroup of the session's shell (its limits, shared by its calls,
    /// which the shell runs itself), if commands get one. Declared after
    /// `state`, so that the shell is killed before the cgroup is released.
    cgroup: Option<crate::limits::CallCgroup>,
}

struct State {
    shell: Option<Shell>,
    /// The shell's cwd as last reported.
    cwd: PathBuf,
    /// A shell was running before: the next start is a restart.
    had_shell: bool,
    next_call: u64,
    /// The output FIFOs, kept for the next call while clean (made with
    /// the first call: they need the runtime).
    pipes: Option<CallPipes>,
    /// Snapshot after every call: a command may have defined functions or
    /// aliases whose later use changes the state unseen.
    save_every_call: bool,
    /// Held from the restore of `snapshot_path` until it is saved back.
    snapshot_lock: Option<SnapshotLock>,
    /// Finds the git branch for the telemetry.
    head: telemetry::HeadReader,
}

impl Session {
    /// Creates a session. The shell starts with the first call.
    pub fn new(mut config: SessionConfig) -> Result<Self, ExecError> {
        static NEXT_ID: AtomicU64 = AtomicU64::new(1);
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let dir = SessionDir::create(id).map_err(|source| ExecError::Other {
            message: format!("could not create the session directory: {source}"),
        })?;
        // One sandbox for the shell and the session's jobs, in which the
        // session's directory is visible and no other session's is; one
        // the kernel cannot enforce is an error, never a silent fallback.
        let (local, sandbox, sandbox_error) =
            crate::confine::with_sandbox(config.local, std::slice::from_ref(&dir.path));
        if let Some(message) = sandbox_error {
            return Err(ExecError::Other { message });
        }
        config.local = local;
        let cwd = config.local.working_directory.clone();
        // Its foreground calls go to the session's shell: no warm shells.
        let background = LocalExec::prepared(
            LocalConfig {
                warm_shells: 0,
                ..config.local.clone()
            },
            sandbox,
            None,
        );
        let logs = Arc::new(config.local.log_dir_handle());
        let cgroup = background.limits().for_job()?;
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
                    pipes: None,
                    // A snapshot from an earlier process may hold functions.
                    save_every_call: restores_a_file,
                    snapshot_lock: None,
                    head: telemetry::HeadReader::default(),
                }),
                background,
                logs,
                cgroup,
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

    /// The settings it was made with.
    pub fn config(&self) -> &SessionConfig {
        &self.inner.config
    }

    /// The background jobs started through this session
    /// (`mode: "background"`).
    pub fn jobs(&self) -> &JobTable {
        self.inner.background.jobs()
    }

    /// The environment that runs this session's background and interactive
    /// jobs.
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
            let _ = shell.send(&driver::exit_now(&self.inner.dir.key)).await;
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
        // Saved: another session may take the file now.
        state.snapshot_lock = None;
        // A shell started after this is not a restart after a death.
        state.had_shell = false;
        Ok(())
    }

    /// Starts a shell if none is running. Returns true when this replaces
    /// one that died (the call's result says `restarted`). `lock_wait`
    /// bounds the wait for another session that holds the snapshot path.
    async fn ensure_shell(
        &self,
        state: &mut State,
        lock_wait: Option<Duration>,
    ) -> Result<bool, ExecError> {
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
        {
            if state.snapshot_lock.is_none() {
                state.snapshot_lock = Some(SnapshotLock::acquire(path, lock_wait).await?);
            }
            // A snapshot is run as code: only one that is ours and private.
            if snapshot::trusted(path) {
                candidates.push(path.clone());
            }
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
        let startup = driver::startup_script(
            &inner.dir.path,
            restore.as_ref().map(|(path, _)| path.as_path()),
            sequence,
        );
        let limited = inner
            .cgroup
            .as_ref()
            .map(|cgroup| cgroup.wrappers(&config.wrappers));
        let shell = Shell::start(ShellSpec {
            program: &config.shell,
            cwd: &cwd,
            env,
            clear_env: restore.is_some(),
            editor_guards: config.non_interactive,
            remove: std::env::vars_os()
                .map(|(name, _)| name)
                .filter(|name| !config.env_policy.inherits(&name.to_string_lossy()))
                .collect(),
            startup,
            dir: &inner.dir.path,
            wrappers: limited.as_deref().unwrap_or(&config.wrappers),
        })
        .await?;
        let restarted = state.had_shell;
        state.shell = Some(shell);
        state.had_shell = true;
        Ok(restarted)
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
            ExecMode::Foreground => {
                let mut result = self.run_foreground(command, &options).await?;
                // Its background and interactive calls run in `background`,
                // which explains their denials itself.
                crate::denial::explain(&mut result, self.inner.background.sandbox_info());
                Ok(result)
            }
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

/// The session's background and interactive jobs, run by its [`LocalExec`].
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
        timeout: Duration,
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
        yield_after: Duration,
    ) -> Result<bashtool_core::JobOutput, bashtool_core::JobError> {
        bashtool_core::Jobs::write(&self.inner.background, id, input, yield_after).await
    }

    async fn stop_all(&self) {
        bashtool_core::Jobs::stop_all(&self.inner.background).await;
    }
}
