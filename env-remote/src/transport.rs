//! How a connection to `bashtool serve` is made: any pair of byte streams.
//! [`CommandTransport`] runs a command line with `sh -c` (`cmd /C` on
//! Windows) and talks to its stdin/stdout, which covers `ssh host bashtool
//! serve`, `docker exec -i CONTAINER bashtool serve` (both tested against
//! real daemons) and `kubectl exec -i POD -- bashtool serve` (untested)
//! with one code path.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
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
        let started = start_line(&self.command_line)?;
        Ok(Link {
            reader: Box::new(started.stdout),
            writer: Box::new(started.stdin),
            process: Some(started.process),
        })
    }

    fn describe(&self) -> String {
        self.command_line.clone()
    }
}

/// A command line started by [`start_line`], with its pipes.
pub(crate) struct StartedLine {
    pub stdin: ChildStdin,
    pub stdout: ChildStdout,
    pub process: TransportProcess,
}

/// Starts `command_line` with the local shell (`sh -c`; on Windows `cmd
/// /C`, which is what a command line there means), its stdin and stdout
/// piped to us and its stderr kept for error messages.
pub(crate) fn start_line(command_line: &str) -> Result<StartedLine, Error> {
    let mut command = shell_command(command_line);
    command
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let mut child = command.spawn().map_err(|source| Error::Transport {
        command_line: command_line.to_owned(),
        source,
    })?;
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(Error::Transport {
            command_line: command_line.to_owned(),
            source: std::io::Error::other("the transport's pipes were not set up"),
        });
    };
    let stderr_tail = StderrTail::default();
    tokio::spawn(stderr_tail.clone().collect(stderr));
    Ok(StartedLine {
        stdin,
        stdout,
        process: TransportProcess {
            child,
            stderr: stderr_tail,
        },
    })
}

/// `sh -c LINE` in a process group of its own: a Ctrl-C at the terminal
/// reaches bashtool, which cancels the call with a message, instead of
/// killing ssh and losing the connection.
#[cfg(unix)]
fn shell_command(command_line: &str) -> Command {
    let mut command = Command::new("sh");
    command.arg("-c").arg(command_line).process_group(0);
    command
}

/// `cmd /C LINE`, the line passed as written (cmd.exe does its own
/// parsing), in a process group of its own for the same reason as on Unix.
#[cfg(windows)]
fn shell_command(command_line: &str) -> Command {
    /// `CREATE_NEW_PROCESS_GROUP`: Ctrl-C in the console does not reach it.
    const CREATE_NEW_PROCESS_GROUP: u32 = 0x0000_0200;
    let mut command = Command::new("cmd");
    command
        .arg("/C")
        .raw_arg(command_line)
        .creation_flags(CREATE_NEW_PROCESS_GROUP);
    command
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
