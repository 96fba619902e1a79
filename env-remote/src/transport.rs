//! How a connection to `bashtool serve` is made: any pair of byte streams.
//! [`CommandTransport`] runs a command line with `sh -c` and talks to its
//! stdin/stdout, which covers `ssh host bashtool serve`, `docker exec -i
//! CONTAINER bashtool serve` (both tested against real daemons) and
//! `kubectl exec -i POD -- bashtool serve` (untested) with one code path.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite};
use tokio::process::{Child, Command};
use tokio_util::sync::CancellationToken;

use crate::error::Error;

/// The most bytes of the transport's stderr kept for error messages.
const STDERR_TAIL_BYTES: usize = 4096;

/// One open byte pipe to a server.
pub struct Link {
    /// The server's stdout.
    pub reader: Box<dyn AsyncRead + Send + Unpin>,
    /// The server's stdin.
    pub writer: Box<dyn AsyncWrite + Send + Unpin>,
    /// The local process carrying the pipe (ssh, docker), if any.
    pub process: Option<TransportProcess>,
}

impl std::fmt::Debug for Link {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Link")
            .field("process", &self.process)
            .finish_non_exhaustive()
    }
}

/// Makes links to a server. One [`crate::RemoteExec`] calls
/// [`Transport::connect`] once, and again after a link broke.
#[async_trait::async_trait]
pub trait Transport: Send + Sync + std::fmt::Debug {
    /// Opens a new link.
    async fn connect(&self) -> Result<Link, Error>;
    /// What the link leads to, for people (`ssh devbox bashtool serve`).
    fn describe(&self) -> String;
}

/// Runs a command line with `sh -c` and uses its stdin and stdout. Its
/// stderr (ssh's or docker's complaints) is kept for error messages.
#[derive(Debug, Clone)]
pub struct CommandTransport {
    command_line: String,
}

impl CommandTransport {
    /// A transport that runs `command_line` (which must lead to `bashtool serve`).
    pub fn new(command_line: impl Into<String>) -> Self {
        Self {
            command_line: command_line.into(),
        }
    }

    /// The command line.
    pub fn command_line(&self) -> &str {
        &self.command_line
    }
}

#[async_trait::async_trait]
impl Transport for CommandTransport {
    async fn connect(&self) -> Result<Link, Error> {
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg(&self.command_line)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            // Its own group: a Ctrl-C at the terminal reaches bashtool,
            // which cancels the call with a message, instead of killing
            // ssh and losing the connection.
            .process_group(0)
            .kill_on_drop(true);
        let mut child = command.spawn().map_err(|source| Error::Transport {
            command_line: self.command_line.clone(),
            source,
        })?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(Error::Transport {
                command_line: self.command_line.clone(),
                source: std::io::Error::other("the transport's pipes were not set up"),
            });
        };
        let stderr_tail = StderrTail::default();
        tokio::spawn(stderr_tail.clone().collect(stderr));
        Ok(Link {
            reader: Box::new(stdout),
            writer: Box::new(stdin),
            process: Some(TransportProcess {
                child,
                stderr: stderr_tail,
            }),
        })
    }

    fn describe(&self) -> String {
        self.command_line.clone()
    }
}

/// The last bytes a transport wrote to its stderr.
#[derive(Debug, Clone, Default)]
pub struct StderrTail {
    bytes: Arc<Mutex<Vec<u8>>>,
    ended: CancellationToken,
}

impl StderrTail {
    /// A tail for a link without a stderr: empty, and ended.
    pub fn none() -> Self {
        let tail = Self::default();
        tail.ended.cancel();
        tail
    }

    /// Returns once the stream ended.
    pub async fn ended(&self) {
        self.ended.cancelled().await;
    }

    async fn collect(self, mut stderr: impl AsyncRead + Unpin) {
        let _ended = self.ended.clone().drop_guard();
        let mut buffer = [0_u8; 1024];
        while let Ok(length) = stderr.read(&mut buffer).await {
            if length == 0 {
                break;
            }
            let chunk = &buffer[..length];
            tracing::debug!(stderr = %String::from_utf8_lossy(chunk), "transport");
            let mut bytes = self.bytes.lock().unwrap_or_else(PoisonError::into_inner);
            bytes.extend_from_slice(chunk);
            let excess = bytes.len().saturating_sub(STDERR_TAIL_BYTES);
            bytes.drain(..excess);
        }
    }

    /// What was written, trimmed, lossily decoded.
    pub fn text(&self) -> String {
        let bytes = self.bytes.lock().unwrap_or_else(PoisonError::into_inner);
        String::from_utf8_lossy(&bytes).trim().to_owned()
    }
}

/// The local process behind a link. Dropping it kills that process (not
/// the server: the server sees its input close and stops on its own).
#[derive(Debug)]
pub struct TransportProcess {
    child: Child,
    stderr: StderrTail,
}

impl TransportProcess {
    /// Its pid, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// What it wrote to stderr so far.
    pub fn stderr(&self) -> StderrTail {
        self.stderr.clone()
    }

    /// Waits up to `limit` for it to exit (after its stdin was closed, the
    /// server cleans up and exits, then the transport does), then kills it.
    pub async fn finish(mut self, limit: Duration) {
        if tokio::time::timeout(limit, self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.start_kill();
            let _ = self.child.wait().await;
        }
    }
}
