//! What a connection runs its commands with, chosen at `initialize` from the
//! server's flags and the client's request: a fresh shell per call
//! (`LocalExec`), the connection's own session, or a named session kept in
//! a file (it survives reconnects).

use std::sync::Arc;
use std::time::Duration;

use bashtool_core::{CommandExec, Jobs, RedactSettings, Redactor};
use bashtool_env_local::{JobStore, LocalConfig, LocalExec, RecordedJobs, Session, SessionConfig};
use bashtool_env_remote::protocol::{
    Capabilities, InitializeParams, InitializeResult, JobsSource, MAX_WARM_SHELLS,
    PROTOCOL_VERSION, SessionInfo,
};
use bashtool_sandbox::{AllowList, Network, SandboxConfig, SandboxMode};

/// The server's flags that shape an environment.
#[derive(Debug, Clone)]
pub struct Settings {
    pub local: LocalConfig,
    /// The sandbox of `local` (flags over the file), which a client's
    /// request (`initialize`'s `sandbox` and `allowed_domains`) changes for
    /// its connection.
    pub sandbox: SandboxConfig,
    /// `--session NAME`.
    pub session: Option<String>,
    /// `--keep-jobs`.
    pub keep_jobs: bool,
    /// `--redact`, `--redact-env`, `[redact]`: what a client that does not
    /// say gets.
    pub redact: RedactSettings,
}

/// The environment of one connection.
pub struct Environment {
    pub exec: Arc<dyn CommandExec>,
    pub jobs: Arc<dyn Jobs>,
    pub local: LocalExec,
    pub session: Option<Session>,
    pub keep_jobs: bool,
    /// Masks secrets in what this connection sends and keeps: this side's
    /// variables' values and the shapes (the client cannot know them).
    pub redactor: Option<Arc<Redactor>>,
}

/// The server's sandbox with its network limited to the client's domains:
/// only narrower than the server's own setting, never wider.
fn with_allowed_domains(
    server: &SandboxConfig,
    domains: &[String],
) -> anyhow::Result<SandboxConfig> {
    let asked = AllowList::parse(domains)?;
    anyhow::ensure!(
        server.mode != SandboxMode::Off,
        "the client asked to limit the network to allowed domains, but this server runs without a \
         sandbox (--sandbox off), which cannot enforce them; start `bashtool serve` with a sandbox"
    );
    match server.effective_network() {
        Network::On => {}
        Network::Off => anyhow::bail!(
            "the client asked for allowed domains, but this server's network is off \
             (--network off), which reaches nothing; the client cannot widen it"
        ),
        Network::Allowlist => {
            let own = server.allow_list()?;
            anyhow::ensure!(
                own.covers(&asked),
                "the client asked for allowed domains ({}) beyond this server's own ({}); a \
                 client can only narrow the server's list",
                asked.patterns().join(", "),
                own.patterns().join(", ")
            );
        }
    }
    let limited = SandboxConfig {
        allowed_domains: domains.to_vec(),
        ..server.clone()
    };
    limited.validate()?;
    Ok(limited)
}

impl Environment {
    /// Opens the environment `params` asks for, within what `settings` allow.
    pub fn open(
        settings: &Settings,
        params: &InitializeParams,
    ) -> anyhow::Result<(Self, InitializeResult)> {
        let requested = params.session.as_ref();
        let name = match (&settings.session, requested.and_then(|s| s.name.as_ref())) {
            (Some(flag), Some(asked)) if flag != asked => anyhow::bail!(
                "this server serves session {flag:?} (its --session); the client asked for session {asked:?}"
            ),
            (Some(flag), _) => Some(flag.clone()),
            (None, asked) => asked.cloned(),
        };
        let persistent = name.is_some() || requested.is_some();
        // The session's driver is a bash program: with another shell (`sh`
        // where there is no bash) only fresh shells per call can work.
        anyhow::ensure!(
            !persistent
                || settings
                    .local
                    .shell
                    .file_name()
                    .is_some_and(|name| name == "bash"),
            "a persistent session needs bash, and commands here run with {} (no bash on this machine?): use a fresh shell per call (`mcp --stateless`, or no --session), or install bash",
            settings.local.shell.display()
        );
        let keep_jobs = settings.keep_jobs || params.keep_jobs;
        // The client's limits, its own `--limit` capping them; one that
        // cannot be enforced here fails the handshake, naming why.
        let limits = params.limits.capped_by(settings.local.limits);
        crate::limits::check_enforceable(&limits)?;
        let mut local_config = LocalConfig {
            keep_jobs_on_drop: keep_jobs,
            limits,
            ..settings.local.clone()
        };
        if let Some(directory) = &params.working_directory {
            let directory = local_config.working_directory.join(directory);
            anyhow::ensure!(
                directory.is_dir(),
                "working directory {} does not exist on the server's side",
                directory.display()
            );
            local_config.working_directory = directory;
        }
        // The client's sandbox flags first, then its allowed domains, which
        // can only narrow what that sandbox lets through.
        let mut sandbox = None;
        if let Some(request) = &params.sandbox {
            sandbox = Some(crate::sandbox::with_request(
                &settings.sandbox,
                request,
                &local_config.working_directory,
            )?);
        }
        if !params.allowed_domains.is_empty() {
            let base = sandbox.as_ref().unwrap_or(&settings.sandbox);
            sandbox = Some(with_allowed_domains(base, &params.allowed_domains)?);
        }
        if let Some(sandbox) = sandbox {
            local_config.confinement = sandbox.confinement();
        }
        // The client's settings, else this server's; the values are ours.
        let redact = params
            .redact
            .clone()
            .unwrap_or_else(|| settings.redact.clone());
        redact.validate()?;
        let redactor = crate::redact::apply(&redact, &mut local_config);
        let (exec, local, session): (Arc<dyn CommandExec>, LocalExec, Option<Session>) =
            if persistent {
                let snapshot_path = name
                    .as_deref()
                    .map(crate::session::snapshot_path)
                    .transpose()?;
                let config = SessionConfig {
                    local: local_config,
                    snapshot_path,
                    ..SessionConfig::default()
                };
                let session = Session::new(config)?;
                let local = session.background().clone();
                (Arc::new(session.clone()), local, Some(session))
            } else {
                // A client that makes many calls asks for shells started
                // ahead of them, as `mcp --stateless` has locally.
                local_config.warm_shells = params.warm_shells.min(MAX_WARM_SHELLS);
                let local = LocalExec::new(local_config);
                // A sandbox the kernel cannot enforce refuses the handshake,
                // saying why, as a session's does.
                if let Some(reason) = local.sandbox_error() {
                    anyhow::bail!("{reason}");
                }
                (Arc::new(local.clone()), local, None)
            };
        let jobs: Arc<dyn Jobs> = match (params.jobs, &session) {
            (JobsSource::Recorded, _) => {
                let dir = match &settings.local.job_records {
                    Some(dir) => dir.clone(),
                    None => bashtool_env_local::default_state_dir()?,
                };
                Arc::new(RecordedJobs::new(
                    JobStore::new(dir),
                    settings.local.kill_grace,
                ))
            }
            (JobsSource::Connection, Some(session)) => Arc::new(session.clone()),
            (JobsSource::Connection, None) => Arc::new(local.clone()),
        };
        let result = InitializeResult {
            protocol: PROTOCOL_VERSION.to_owned(),
            server: format!("bashtool {}", env!("CARGO_PKG_VERSION")),
            capabilities: Capabilities {
                sessions: true,
                jobs: true,
                sandbox_modes: vec!["off".to_owned()],
                interactive: false,
            },
            environment: exec.environment(),
            session: persistent.then(|| SessionInfo {
                survives_reconnect: name.is_some(),
                name,
            }),
        };
        Ok((
            Self {
                exec,
                jobs,
                local,
                session,
                keep_jobs,
                redactor,
            },
            result,
        ))
    }

    /// Stops the jobs (unless kept), saves a named session, and waits for
    /// the last SIGKILLs: at most `limit`.
    pub async fn close(&self, limit: Duration) {
        let work = async {
            // Only this connection's jobs: with `JobsSource::Recorded`,
            // `self.jobs` reaches every job of the user.
            if !self.keep_jobs {
                self.local.jobs().stop_all().await;
            }
            if let Some(session) = &self.session
                && let Err(error) = session.shutdown().await
            {
                tracing::warn!(%error, "the session's state was not saved");
            }
            self.local.shutdown().await;
        };
        if tokio::time::timeout(limit, work).await.is_err() {
            tracing::warn!("stopping the environment took longer than {limit:?}");
        }
    }
}
