//! Configuration of [`crate::RemoteExec`].

use std::path::PathBuf;
use std::time::Duration;

use bashtool_core::RedactSettings;

use crate::protocol::{JobsSource, SandboxRequest, SessionRequest};

/// Default time for the handshake (an ssh login included).
pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);
/// Default grace the server gives a tree between SIGTERM and SIGKILL (its
/// `--kill-grace`), used for the local backstop.
pub const DEFAULT_REMOTE_KILL_GRACE: Duration = Duration::from_secs(2);
/// Beyond the timeout and the grace, how long the local side waits for the
/// server's answer before it gives up on its own (the backstop).
pub const BACKSTOP_MARGIN: Duration = Duration::from_secs(5);

/// How a [`crate::RemoteExec`] talks to its server. `Default` gives a
/// stateless environment (a fresh shell per call) whose jobs stop when
/// the connection closes.
#[derive(Debug, Clone)]
pub struct RemoteConfig {
    /// What the environment is called in results and the tool's
    /// description (`remote: <label>`). `None`: the transport's command line.
    pub label: Option<String>,
    /// A persistent session on the server's side: named (kept in a file
    /// there, survives reconnects) or the connection's own.
    pub session: Option<SessionRequest>,
    /// Background jobs keep running when the connection closes.
    pub keep_jobs: bool,
    /// Which jobs the jobs port sees.
    pub jobs: JobsSource,
    /// The server's kill grace, for the local backstop of timeouts and cancels.
    pub remote_kill_grace: Duration,
    /// The longest wait for the handshake.
    pub handshake_timeout: Duration,
    /// Where commands run by default, on the server's side. `None`: the
    /// server's own `--cwd`.
    pub working_directory: Option<PathBuf>,
    /// The sandbox to ask the server for, over its own settings. `None`:
    /// the server's settings.
    pub sandbox: Option<SandboxRequest>,
    /// The domains the commands may reach (`--allow-domain`), enforced by
    /// the server's sandbox and proxy. Empty: the server's own setting.
    pub allowed_domains: Vec<String>,
    /// Resource limits per command, applied by the server (capped by its
    /// own). Unset: the server's settings.
    pub limits: bashtool_core::LimitSettings,
    /// How the server masks secrets in what it sends and keeps (it alone
    /// knows its variables' values): sent in `initialize`. `None`: the
    /// server's own settings (its flags).
    pub redact: Option<RedactSettings>,
    /// Shells the server keeps started ahead of stateless calls (see
    /// `LocalConfig::warm_shells` of `bashtool-env-local`): for a client
    /// that makes many calls on one connection. Ignored with a session.
    pub warm_shells: usize,
}

impl Default for RemoteConfig {
    fn default() -> Self {
        Self {
            label: None,
            session: None,
            keep_jobs: false,
            jobs: JobsSource::Connection,
            remote_kill_grace: DEFAULT_REMOTE_KILL_GRACE,
            handshake_timeout: DEFAULT_HANDSHAKE_TIMEOUT,
            working_directory: None,
            sandbox: None,
            allowed_domains: Vec::new(),
            limits: bashtool_core::LimitSettings::default(),
            redact: None,
            warm_shells: 0,
        }
    }
}
