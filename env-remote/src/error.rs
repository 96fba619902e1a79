//! Errors of reaching the remote environment. Errors of running a command
//! are [`bashtool_core::ExecError`]s and errors of the jobs port are
//! [`bashtool_core::JobError`]s, as the ports say; these become their
//! messages.

/// Why the remote environment could not be reached or understood.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The transport's command line could not be started.
    #[error("could not start the transport {command_line:?}: {source}")]
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
    /// The bootstrap's command line did not open a POSIX shell over there,
    /// or the shell went silent.
    #[error(
        "`{remote}` {} as a POSIX shell; it must open one over there, e.g. `ssh devbox`, `docker exec -i box sh` or `kubectl exec -i pod -- sh`{}",
        waited.map_or_else(|| "ended before answering".to_owned(), |seconds| format!("did not answer within {seconds} s")),
        output_suffix(output)
    )]
    NoShell {
        remote: String,
        /// `None`: it ended; else how long it was waited for.
        waited: Option<u64>,
        /// What it printed and what the transport said.
        output: String,
    },
    /// The far side is not Linux.
    #[error(
        "`{remote}` leads to a {system} system; bashtool serve runs only on Linux (a Linux container or host)"
    )]
    RemoteSystem { remote: String, system: String },
    /// `uname -m` over there names an architecture bashtool does not know.
    #[error(
        "`{remote}` leads to an unknown architecture `{machine}`; bashtool can be uploaded to {known}"
    )]
    UnknownArchitecture {
        remote: String,
        machine: String,
        /// The architectures there are builds for, as a list.
        known: String,
    },
    /// Programs the bootstrap needs are missing over there.
    #[error(
        "`{remote}`: the shell over there lacks {tools}, which the upload needs (coreutils or busybox provide them)"
    )]
    MissingTools { remote: String, tools: String },
    /// No private directory could be made over there.
    #[error(
        "`{remote}`: no private directory for bashtool could be made over there ({reasons}){}",
        cause_hint(reasons)
    )]
    NoPrivateDirectory { remote: String, reasons: String },
    /// No bashtool over there and no build to upload.
    #[error(
        "`{remote}`: no bashtool serve {} in {directory} over there, and no Linux build to upload; pass --serve-binary PATH with a static build for {architecture} ({target})",
        env!("CARGO_PKG_VERSION")
    )]
    NothingToUpload {
        remote: String,
        directory: String,
        architecture: &'static str,
        target: &'static str,
    },
    /// The build to upload is for another architecture.
    #[error(
        "`{remote}` leads to {remote_architecture}, but {} is built for {built_for}; pass --serve-binary PATH with a build for {remote_architecture} ({target})",
        binary.display()
    )]
    WrongArchitecture {
        remote: String,
        binary: std::path::PathBuf,
        built_for: &'static str,
        remote_architecture: &'static str,
        target: &'static str,
    },
    /// The build to upload is linked dynamically and its loader is missing.
    #[error(
        "`{remote}`: {} is linked dynamically and needs {loader}, which is missing over there; pass --serve-binary PATH with a static build ({target})",
        binary.display()
    )]
    LoaderMissing {
        remote: String,
        binary: std::path::PathBuf,
        loader: String,
        target: &'static str,
    },
    /// Writing the upload, or running it, failed over there.
    #[error(
        "`{remote}`: the upload to {directory} failed ({stage}: {message}){}",
        cause_hint(message)
    )]
    UploadFailed {
        remote: String,
        directory: String,
        /// `write` or `exec`.
        stage: String,
        message: String,
    },
    /// Every upload arrived damaged or cut short.
    #[error(
        "`{remote}`: {attempts} uploads arrived damaged or cut short and were deleted unused (last: {detail}); the link does not carry bytes faithfully (a terminal, `-t`, in the command line?)"
    )]
    UploadCorrupted {
        remote: String,
        attempts: u32,
        detail: String,
    },
    /// The build to upload cannot be used.
    #[error("serve binary {}: {message}", path.display())]
    ServeBinary {
        path: std::path::PathBuf,
        message: String,
    },
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

fn output_suffix(output: &str) -> String {
    if output.is_empty() {
        String::new()
    } else {
        format!(" (it said: {output})")
    }
}

/// What an error message from over there means, when it is one of the
/// usual causes.
fn cause_hint(message: &str) -> &'static str {
    if message.contains("No space left on device") || message.contains("Disk quota exceeded") {
        "; the disk over there is full"
    } else if message.contains("Read-only file system") {
        "; the file system over there is read-only"
    } else if message.contains("Permission denied") {
        "; no permission there (a directory mounted noexec?)"
    } else {
        ""
    }
}
