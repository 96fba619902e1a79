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
//! `bashtool jobs --remote` reads the jobs recorded over there
//! ([`recorded_jobs`]). `bashtool serve` chooses per connection, from what
//! the client asks (`serve/environment.rs`).

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use bashtool_core::{CommandExec, Jobs, ToolConfig};
use bashtool_env_local::{LocalConfig, LocalExec, Session, SessionConfig};
use bashtool_env_remote::{JobsSource, RemoteConfig, RemoteExec, SessionRequest};

use crate::config::seconds;
use crate::options::{RemoteArgs, ToolArgs};
use crate::session::snapshot_path;

/// How long closing a connection may take beyond the kill grace: the server
/// stops what it started and saves a named session before it exits.
pub const CLOSE_MARGIN: Duration = Duration::from_secs(3);

/// The environment of one CLI invocation.
pub enum Exec {
    /// A fresh shell per call.
    Stateless(LocalExec),
    /// One persistent shell.
    Session(Session),
    /// `--remote`: commands (and a named session) live over there.
    Remote(RemoteExec),
}

impl Exec {
    /// The environment's jobs (background and interactive).
    pub fn jobs(&self) -> Arc<dyn Jobs> {
        match self {
            Self::Stateless(exec) => Arc::new(exec.clone()),
            Self::Session(session) => Arc::new(session.clone()),
            Self::Remote(remote) => Arc::new(remote.clone()),
        }
    }

    pub fn command_exec(&self) -> Arc<dyn CommandExec> {
        match self {
            Self::Stateless(exec) => Arc::new(exec.clone()),
            Self::Session(session) => Arc::new(session.clone()),
            Self::Remote(remote) => Arc::new(remote.clone()),
        }
    }

    /// Ends the session's shell and saves its state for the next
    /// invocation, and waits for the SIGKILLs scheduled for leftovers that
    /// ignored SIGTERM (they would die with this process otherwise).
    /// Background jobs are kept: they outlive `run` and `call`.
    pub async fn finish(&self) -> anyhow::Result<()> {
        match self {
            Self::Stateless(exec) => exec.shutdown().await,
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
    let Some(line) = &remote.remote else {
        let (mut config, local) = tool.local_settings(&file)?;
        let exec = local_invocation(tool.session.as_deref(), &mut config, local)?;
        return Ok((config, exec));
    };
    // `--cwd` names a directory over there, so it is not checked here.
    let mut config = tool.tool_config(&file, tool.cwd.clone())?;
    config.persistent_session = tool.session.is_some();
    let mut remote_config = RemoteConfig {
        session: tool
            .session
            .clone()
            .map(|name| SessionRequest { name: Some(name) }),
        working_directory: tool.cwd.clone(),
        // As locally: a background job outlives this process, and `bashtool
        // jobs --remote` finds it in the records over there.
        keep_jobs: true,
        ..RemoteConfig::default()
    };
    if let Some(grace) = tool.kill_grace {
        remote_config.remote_kill_grace = seconds("--kill-grace", grace, 600.0)?;
    }
    Ok((
        config,
        Exec::Remote(RemoteExec::command(line, remote_config)),
    ))
}

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
pub fn recorded_jobs(line: &str) -> RemoteExec {
    let config = RemoteConfig {
        jobs: JobsSource::Recorded,
        keep_jobs: true,
        ..RemoteConfig::default()
    };
    RemoteExec::command(line, config)
}
