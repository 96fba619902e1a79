//! `bashtool-env-remote`: the bash tool's environment on another machine,
//! in a container or in a pod.
//!
//! [`RemoteExec`] implements [`bashtool_core::CommandExec`] and
//! [`bashtool_core::Jobs`] by talking to `bashtool serve` (which runs
//! `bashtool-env-local` over there) through any byte pipe: a
//! [`CommandTransport`] runs a command line with `sh -c` and uses its
//! stdin/stdout, so `ssh devbox bashtool serve`, `docker exec -i box
//! bashtool serve` and `kubectl exec -i pod -- bashtool serve` all take the
//! same path. The transport is only a pipe: the server stops process trees,
//! enforces timeouts and keeps the full logs on its side; this crate streams
//! the raw output bytes into the call's `OutputCapture`, so the bounded
//! windows, the cleaning and the shortening are the same as locally.
//!
//! It is not a transport implementation (no SSH or container code of its
//! own) and not a sandbox: commands run with the rights of the server's user.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use bashtool_core::{BashTool, ToolConfig};
//! use bashtool_env_remote::{RemoteConfig, RemoteExec};
//!
//! let exec = RemoteExec::command("ssh devbox bashtool serve", RemoteConfig::default());
//! exec.connect().await?; // fails here, with ssh's message, if the line is wrong
//! let tool = BashTool::new(ToolConfig::default(), Arc::new(exec.clone()));
//! let result = tool.call(serde_json::json!({"command": "uname -n"})).await;
//! println!("{}", result.text()); // ran on devbox; details.environment = "remote: ssh devbox bashtool serve"
//! exec.shutdown(std::time::Duration::from_secs(5)).await;
//! # Ok(()) }
//! ```
//!
//! Guarantees and limits (see `docs/remote.md`): many
//! calls run at once on one connection; a cancel, a dropped call future or
//! a timeout stops the remote tree (the timeout is enforced by the server,
//! and here as a backstop); when the connection drops, calls in flight
//! return at once with a result saying so, the server stops everything it
//! started (unless asked to keep jobs), and the next call reconnects. The
//! wire protocol is [`protocol`], documented in `docs/protocol.md`.

#![forbid(unsafe_code)]

mod bootstrap;
mod config;
mod connection;
mod error;
mod exec;
pub mod protocol;
mod transport;

pub use bootstrap::{
    Architecture, BootstrapEvent, MAX_UPLOADS, ProgressSink, ServeBinary, ShellTransport,
};
pub use config::{
    BACKSTOP_MARGIN, DEFAULT_HANDSHAKE_TIMEOUT, DEFAULT_REMOTE_KILL_GRACE, RemoteConfig,
};
pub use error::Error;
pub use exec::RemoteExec;
pub use protocol::{JobsSource, SandboxRequest, SessionRequest};
pub use transport::{CommandTransport, Link, StderrTail, Transport, TransportProcess};
