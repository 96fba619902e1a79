//! Where commands run: the CLI's choice of environment, and the code that
//! builds it.
//!
//! Locally, each call gets a fresh shell ([`LocalExec`]), or all calls go
//! to one persistent [`Session`]. With `--remote 'COMMAND LINE'` they run
//! in another environment: the line runs with `sh -c` here and must start
//! `bashtool serve` there (`ssh devbox bashtool serve`, `docker exec -i box
//! bashtool serve`, `kubectl exec -i pod -- bashtool serve`); the tool, its
//! policy and the shortening stay here, the processes, their logs and their
//! sessions live there.
//!
//! `run` and `call` get one environment per invocation ([`for_invocation`]);
//! `bashtool mcp` one per stdio server or HTTP session
//! ([`ServerEnvironment`]); `bashtool jobs --remote` reads the jobs recorded
//! over there ([`recorded_jobs`]). `bashtool serve` chooses per connection,
//! from what the client asks (`serve/environment.rs`); it and `mcp` tie
//! what they start to their own life ([`tie_to_this_process`]).

#[cfg(target_os = "linux")]
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

#[cfg(target_os = "linux")]
use anyhow::Context as _;
use bashtool_core::{CommandExec, Jobs, ToolConfig};
#[cfg(target_os = "linux")]
use bashtool_env_local::{LocalConfig, LocalExec, Session, SessionConfig};
use bashtool_env_remote::{JobsSource, RemoteConfig, RemoteExec, SessionRequest};

use crate::config::seconds;
use crate::options::{RemoteArgs, ToolArgs};
use crate::remote::Remote;
#[cfg(target_os = "linux")]
use crate::session::snapshot_path;

/// How long closing a connection may take beyond the kill grace: the server
/// stops what it started and saves a named session before it exits.
pub const CLOSE_MARGIN: Duration = Duration::from_secs(3);

/// The environment of one `run` or `call`, of an MCP server over stdio,
/// or of one of its HTTP sessions.
pub enum Exec {
    /// A fresh shell per call.
    #[cfg(target_os = "linux")]
    Stateless(LocalExec),
    /// One persistent shell.
    #[cfg(target_os = "linux")]
    Session(Session),
    /// `--remote`: commands (and a named session) live over there.
    Remote(RemoteExec),
    /// A server's environment that could not be set up: every call says
    /// why ([`Unavailable`]).
    Unavailable(Arc<Unavailable>),
}

/// The environment of a server whose own could not be set up (a sandbox
/// the kernel cannot enforce, a broken configuration): the server still
/// answers, and every call and job action fails with the reason, so the
/// client sees why instead of a closed connection.
#[derive(Debug)]
pub struct Unavailable {
    /// Why, for a person and the model.
    pub reason: String,
}

#[async_trait::async_trait]
impl CommandExec for Unavailable {
    async fn spawn(
        &self,
        _command: &str,
        _options: bashtool_core::SpawnOptions,
    ) -> Result<bashtool_core::CommandResult, bashtool_core::ExecError> {
        Err(bashtool_core::ExecError::Other {
            message: self.reason.clone(),
        })
    }

    fn environment(&self) -> bashtool_core::EnvironmentInfo {
        bashtool_core::EnvironmentInfo {
            name: "local".to_owned(),
            ..bashtool_core::EnvironmentInfo::default()
        }
    }
}

#[async_trait::async_trait]
impl Jobs for Unavailable {
    async fn list(&self) -> Vec<bashtool_core::JobInfo> {
        Vec::new()
    }

    async fn read(
        &self,
        _id: &str,
        _from: bashtool_core::ReadFrom,
        _max_bytes: usize,
    ) -> Result<bashtool_core::JobOutput, bashtool_core::JobError> {
        Err(self.job_error())
    }

    async fn wait(
        &self,
        _id: &str,
        _timeout: Duration,
        _cancel: tokio_util::sync::CancellationToken,
    ) -> Result<bashtool_core::JobInfo, bashtool_core::JobError> {
        Err(self.job_error())
    }

    async fn stop(&self, _id: &str) -> Result<bashtool_core::JobInfo, bashtool_core::JobError> {
        Err(self.job_error())
    }

    async fn stop_all(&self) {}
}

impl Unavailable {
    fn job_error(&self) -> bashtool_core::JobError {
        bashtool_core::JobError::Environment {
            message: self.reason.clone(),
        }
    }
}

impl Exec {
    /// The environment's jobs (background and interactive).
    pub fn jobs(&self) -> Arc<dyn Jobs> {
        match self {
            #[cfg(target_os = "linux")]
            Self::Stateless(exec) => Arc::new(exec.clone()),
            #[cfg(target_os = "linux")]
            Self::Session(session) => Arc::new(session.clone()),
            Self::Remote(remote) => Arc::new(remote.clone()),
            Self::Unavailable(unavailable) => Arc::clone(unavailable) as Arc<dyn Jobs>,
        }
    }

    pub fn command_exec(&self) -> Arc<dyn CommandExec> {
        match self {
            #[cfg(target_os = "linux")]
            Self::Stateless(exec) => Arc::new(exec.clone()),
            #[cfg(target_os = "linux")]
            Self::Session(session) => Arc::new(session.clone()),
            Self::Remote(remote) => Arc::new(remote.clone()),
            Self::Unavailable(unavailable) => Arc::clone(unavailable) as Arc<dyn CommandExec>,
        }
    }

    /// Ends the session's shell and saves its state for the next
    /// invocation, and waits for the SIGKILLs scheduled for leftovers that
    /// ignored SIGTERM (they would die with this process otherwise).
    /// Background jobs are kept: they outlive `run` and `call`.
    pub async fn finish(&self) -> anyhow::Result<()> {
        match self {
            #[cfg(target_os = "linux")]
            Self::Stateless(exec) => exec.shutdown().await,
            #[cfg(target_os = "linux")]
            Self::Session(session) => {
                session
                    .shutdown()
                    .await
                    .context("saving the session's state")?;
                session.background().shutdown().await;
            }
            Self::Remote(remote) => {
                let limit = remote.config().remote_kill_grace + CLOSE_MARGIN;
                remote.shutdown(limit).await;
            }
            Self::Unavailable(_) => {}
        }
        Ok(())
    }

    /// Ends a server's environment once its calls have stopped: saves the
    /// session's state, or closes the remote connection (giving the far
    /// side up to `limit` to stop what it started). Unlike [`Self::finish`]
    /// it does not wait for local leftovers: they are tied to the server's
    /// life ([`tie_to_this_process`]).
    pub async fn close(&self, limit: Duration) -> anyhow::Result<()> {
        match self {
            #[cfg(target_os = "linux")]
            Self::Stateless(_) => {}
            Self::Unavailable(_) => {}
            #[cfg(target_os = "linux")]
            Self::Session(session) => session.shutdown().await?,
            Self::Remote(remote) => remote.shutdown(limit).await,
        }
        Ok(())
    }
}

/// The environment of `run` and `call`, and the tool's settings for it:
/// remote with `--remote`, else local; a session when `--session` names
/// one (the tool then tells the model that state persists), else a fresh
/// shell per call.
pub fn for_invocation(tool: &ToolArgs, remote: &RemoteArgs) -> anyhow::Result<(ToolConfig, Exec)> {
    let file = tool.file()?;
    let Some(remote) = Remote::from_flags(remote, tool.serve_args(), None)? else {
        #[cfg(target_os = "linux")]
        {
            let (mut config, local) = tool.local_settings(&file)?;
            let exec = local_invocation(tool.session.as_deref(), &mut config, local)?;
            return Ok((config, exec));
        }
        #[cfg(not(target_os = "linux"))]
        return Err(crate::relay::needs_remote());
    };
    // `--cwd` names a directory over there, so it is not checked here.
    let mut config = tool.tool_config(&file, tool.cwd.clone())?;
    config.persistent_session = tool.session.is_some();
    // Masked over there with that side's variables (the settings travel in
    // `initialize`), and here with this side's.
    let redact = tool.redact_settings(&file)?;
    config.redactor = crate::redact::redactor(
        &redact,
        &tool.env_policy(&file),
        &std::collections::BTreeMap::new(),
    );
    let mut remote_config = RemoteConfig {
        session: tool
            .session
            .clone()
            .map(|name| SessionRequest { name: Some(name) }),
        working_directory: tool.cwd.clone(),
        // As locally: a background job outlives this process, and `bashtool
        // jobs --remote` finds it in the records over there.
        keep_jobs: true,
        // The sandbox flags apply over there.
        sandbox: tool.remote_sandbox(&file),
        allowed_domains: tool.sandbox.remote_allowed_domains(file.sandbox.as_ref())?,
        // Enforced over there: `serve` applies them.
        limits: tool.limit_settings(&file)?,
        redact: Some(redact),
        ..RemoteConfig::default()
    };
    if let Some(grace) = tool.kill_grace {
        remote_config.remote_kill_grace = seconds("--kill-grace", grace, 600.0)?;
    }
    Ok((config, Exec::Remote(remote.exec(remote_config))))
}

#[cfg(target_os = "linux")]
/// `--session NAME`: a persistent [`Session`] whose state (cwd, variables,
/// functions, aliases, options) is kept in a file between separate
/// `bashtool` processes, so a person can try sessions from a terminal.
/// Without it, each call gets a fresh shell.
fn local_invocation(
    session: Option<&str>,
    tool: &mut ToolConfig,
    local: LocalConfig,
) -> anyhow::Result<Exec> {
    let Some(name) = session else {
        return Ok(Exec::Stateless(LocalExec::new(local)));
    };
    let path = snapshot_path(name)?;
    tool.persistent_session = true;
    let config = SessionConfig {
        local,
        ..SessionConfig::default()
    };
    let session = Session::with_snapshot_path(config, path)
        .with_context(|| format!("starting session {name}"))?;
    Ok(Exec::Session(session))
}

/// The jobs of every bashtool process of the server's user, for `bashtool
/// jobs --remote`.
pub fn recorded_jobs(remote: &Remote) -> RemoteExec {
    let config = RemoteConfig {
        jobs: JobsSource::Recorded,
        keep_jobs: true,
        ..RemoteConfig::default()
    };
    remote.exec(config)
}

/// Where a server's commands run (`bashtool mcp`), from its flags and
/// config file: each stdio server or HTTP session opens its own.
pub struct ServerEnvironment {
    /// The local environment's settings; with `remote`, only the kill
    /// grace applies.
    #[cfg(target_os = "linux")]
    pub local: LocalConfig,
    /// The relay build's kill grace (the remote's, for the backstop).
    #[cfg(not(target_os = "linux"))]
    pub kill_grace: Duration,
    /// The relay build's `--limit` and `[limits]`, sent to the server.
    #[cfg(not(target_os = "linux"))]
    pub limits: bashtool_core::LimitSettings,
    /// `--remote`, `--remote-shell` or `remote = "..."`: the commands run
    /// over there.
    pub remote: Option<Remote>,
    /// A fresh shell per call instead of one persistent session.
    pub stateless: bool,
    /// `--session NAME`: with `remote`, a session over there.
    pub session_name: Option<String>,
    /// Where the named local session keeps its state between servers.
    #[cfg(target_os = "linux")]
    pub session_path: Option<PathBuf>,
    /// `--keep-jobs`: background jobs outlive the server.
    pub keep_jobs: bool,
    /// With `remote`: the sandbox to ask the server for (the sandbox flags
    /// and `[sandbox]`); `None`: the server's own settings.
    pub remote_sandbox: Option<bashtool_env_remote::SandboxRequest>,
    /// With `remote`: the domains its commands may reach
    /// (`--allow-domain`), empty for the server's own setting.
    pub remote_allowed_domains: Vec<String>,
    /// `--redact`, `--redact-env` and `[redact]`: with `remote`, sent to
    /// the server, which masks with its own variables.
    pub redact: bashtool_core::RedactSettings,
}

impl ServerEnvironment {
    /// The grace between SIGTERM and SIGKILL when a command is stopped.
    pub fn kill_grace(&self) -> Duration {
        #[cfg(target_os = "linux")]
        return self.local.kill_grace;
        #[cfg(not(target_os = "linux"))]
        return self.kill_grace;
    }

    /// The limits per command the server enforces (`--limit`, `[limits]`).
    pub fn limits(&self) -> bashtool_core::LimitSettings {
        #[cfg(target_os = "linux")]
        return self.local.limits;
        #[cfg(not(target_os = "linux"))]
        return self.limits;
    }

    /// Opens the environment for `tool`: with `remote`, connects at once,
    /// so that a wrong line fails at start with the transport's message.
    pub async fn open(&self, tool: &ToolConfig) -> anyhow::Result<Exec> {
        let Some(remote) = self.remote_exec(tool) else {
            #[cfg(target_os = "linux")]
            return self.open_local(tool);
            #[cfg(not(target_os = "linux"))]
            return Err(crate::relay::needs_remote());
        };
        remote.connect().await?;
        Ok(Exec::Remote(remote))
    }

    /// [`Self::open`] for a server that must answer its client whatever
    /// happens: when the environment cannot be opened, the reason, and an
    /// environment whose every call gives it: the remote one, not
    /// connected (each call tries again, and fails with the reason while
    /// the far side still refuses), or a local one that cannot run
    /// anything.
    pub async fn open_or_explain(&self, tool: &ToolConfig) -> (Exec, Option<String>) {
        match self.open(tool).await {
            Ok(exec) => (exec, None),
            Err(error) => {
                let reason = format!("{error:#}");
                tracing::error!(%reason, "the environment could not be opened; every call will say why");
                let exec = self.remote_exec(tool).map_or_else(
                    || {
                        Exec::Unavailable(Arc::new(Unavailable {
                            reason: reason.clone(),
                        }))
                    },
                    Exec::Remote,
                );
                (exec, Some(reason))
            }
        }
    }

    /// The remote environment, not connected yet; `None` without `remote`.
    fn remote_exec(&self, tool: &ToolConfig) -> Option<RemoteExec> {
        let remote = self.remote.as_ref()?;
        let config = RemoteConfig {
            session: (!self.stateless).then(|| SessionRequest {
                name: self.session_name.clone(),
            }),
            keep_jobs: self.keep_jobs,
            remote_kill_grace: self.kill_grace(),
            working_directory: tool.working_directory.clone(),
            sandbox: self.remote_sandbox.clone(),
            allowed_domains: self.remote_allowed_domains.clone(),
            limits: self.limits(),
            redact: Some(self.redact.clone()),
            // `--stateless`: the server keeps a shell started ahead of the
            // next call, as a local `mcp --stateless` does.
            warm_shells: usize::from(self.stateless),
            ..RemoteConfig::default()
        };
        Some(remote.exec(config))
    }

    /// The local environment: a fresh shell per call when stateless, else
    /// one persistent session.
    #[cfg(target_os = "linux")]
    pub fn open_local(&self, tool: &ToolConfig) -> anyhow::Result<Exec> {
        if self.stateless {
            return Ok(Exec::Stateless(LocalExec::new(self.local.clone())));
        }
        let config = SessionConfig {
            local: self.local.clone(),
            snapshot_path: self.session_path.clone(),
            telemetry: tool.shell_telemetry,
        };
        let session = Session::new(config).context("creating the session")?;
        Ok(Exec::Session(session))
    }
}

#[cfg(target_os = "linux")]
/// For a server (`mcp`, `serve`): a server killed with SIGKILL could not
/// stop its commands, so what such servers left is stopped now; and from
/// here on everything `local` starts is tied to this process's life (jobs
/// kept with `--keep-jobs` excepted).
pub fn tie_to_this_process(local: &mut LocalConfig) {
    let reaped = bashtool_env_local::reap_orphans();
    if reaped != bashtool_env_local::Reaped::default() {
        tracing::info!(?reaped, "stopped what servers that died had left");
    }
    local
        .wrappers
        .push(Arc::new(bashtool_process::StopWithOwner::new()));
}
