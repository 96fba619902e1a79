//! `--session NAME`: run through a persistent [`Session`] whose state (cwd,
//! variables, functions, aliases, options) is kept in a file between
//! separate `bashtool` processes, so a person can try sessions from a
//! terminal. Without it, each call gets a fresh shell ([`LocalExec`]).

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use bashtool_core::{CommandExec, ToolConfig};
use bashtool_env_local::{LocalConfig, LocalExec, Session, SessionConfig};

/// Longest session name.
const MAX_NAME_CHARS: usize = 64;

/// Where the state of session `name` is kept:
/// `$BASHTOOL_STATE_DIR/sessions/<name>.sh`, else under `$XDG_STATE_HOME/bashtool`,
/// else `~/.local/state/bashtool`.
pub fn snapshot_path(name: &str) -> anyhow::Result<PathBuf> {
    anyhow::ensure!(
        !name.is_empty()
            && name.chars().count() <= MAX_NAME_CHARS
            && !name.starts_with('.')
            && name
                .chars()
                .all(|character| character.is_ascii_alphanumeric() || "._-".contains(character)),
        "--session {name:?}: use 1 to {MAX_NAME_CHARS} letters, digits, '.', '_' or '-'"
    );
    // No fallback to a shared directory: a snapshot is sourced at start, so
    // one planted by another user would run as us.
    let sessions = bashtool_env_local::default_state_dir()?.join("sessions");
    bashtool_env_local::ensure_private_dir(&sessions)
        .with_context(|| format!("preparing {}", sessions.display()))?;
    Ok(sessions.join(format!("{name}.sh")))
}

/// The environment of one CLI invocation.
pub enum Exec {
    Stateless(LocalExec),
    Session(Session),
    /// `--remote`: commands (and a named session) live over there.
    Remote(bashtool_env_remote::RemoteExec),
}

impl Exec {
    /// A session when `session` names one (and `tool` then tells the model
    /// that state persists), else a fresh shell per call.
    pub fn new(
        session: Option<&str>,
        tool: &mut ToolConfig,
        local: LocalConfig,
    ) -> anyhow::Result<Self> {
        let Some(name) = session else {
            return Ok(Self::Stateless(LocalExec::new(local)));
        };
        let path = snapshot_path(name)?;
        tool.persistent_session = true;
        let config = SessionConfig {
            local,
            ..SessionConfig::default()
        };
        let session = Session::with_snapshot_path(config, path)
            .with_context(|| format!("starting session {name}"))?;
        Ok(Self::Session(session))
    }

    /// The environment's jobs (background and interactive).
    pub fn jobs(&self) -> Arc<dyn bashtool_core::Jobs> {
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
                let limit = remote.config().remote_kill_grace + crate::remote::CLOSE_MARGIN;
                remote.shutdown(limit).await;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_names_are_file_names() {
        assert!(snapshot_path("demo-1.x_y").is_ok());
        for bad in ["", "../x", "a/b", ".hidden", "sp ace"] {
            assert!(snapshot_path(bad).is_err(), "{bad}");
        }
        assert!(
            snapshot_path("demo")
                .expect("path")
                .ends_with("sessions/demo.sh")
        );
    }
}
