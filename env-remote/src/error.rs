//! Errors of reaching the remote environment. Errors of running a command
//! are [`bashtool_core::ExecError`]s and errors of the jobs port are
//! [`bashtool_core::JobError`]s, as the ports say; these become their
//! messages.

/// Why the remote environment could not be reached or understood.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The transport's command line could not be started.
    #[error("could not start the transport `sh -c {command_line:?}`: {source}")]
    Transport {
        command_line: String,
        #[source]
        source: std::io::Error,
    },
    /// The link closed (or never answered) before the handshake finished.
    #[error(
        "the remote environment `{remote}` closed the connection during the handshake{}; check that the command line leads to `bashtool serve`",
        stderr_suffix(stderr)
    )]
    ClosedDuringHandshake {
        remote: String,
        /// What the transport wrote to its stderr (ssh's or docker's message).
        stderr: String,
    },
    /// No handshake answer in time.
    #[error(
        "the remote environment `{remote}` did not answer the handshake within {seconds} s{}{}",
        stray_suffix(stray.as_ref()),
        stderr_suffix(stderr)
    )]
    HandshakeTimeout {
        remote: String,
        seconds: u64,
        stderr: String,
        /// The first line it printed that is not the protocol, if any.
        stray: Option<String>,
    },
    /// The server refused the handshake (a version mismatch, a bad session name).
    #[error("the remote environment `{remote}` refused the connection: {message}")]
    Refused { remote: String, message: String },
    /// The other side sent what no `bashtool serve` sends (a request: our
    /// own, echoed back by a `cat`), so it is not one.
    #[error(
        "the remote environment `{remote}` is not a `bashtool serve`: it sent the request `{method}` back instead of answering it (a command line that echoes its input, such as `cat`?); the command line must start `bashtool serve` over there"
    )]
    NotAServer { remote: String, method: String },
    /// The connection is gone.
    #[error(
        "the connection to the remote environment `{remote}` was lost{}; the server stops the processes it started when its connection closes; the next call reconnects",
        stderr_suffix(stderr)
    )]
    ConnectionLost { remote: String, stderr: String },
    /// The server answered something this client does not understand.
    #[error("the remote environment `{remote}` sent an unexpected answer to {method}: {message}")]
    BadAnswer {
        remote: String,
        method: String,
        message: String,
    },
}

fn stray_suffix(stray: Option<&String>) -> String {
    stray.map_or_else(String::new, |line| {
        format!(" (instead it printed `{line}`: does the command line start `bashtool serve`, and does nothing print to stdout at login?)")
    })
}

fn stderr_suffix(stderr: &str) -> String {
    if stderr.is_empty() {
        String::new()
    } else {
        format!(" (transport said: {stderr})")
    }
}
