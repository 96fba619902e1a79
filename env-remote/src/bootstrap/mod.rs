//! [`ShellTransport`]: `bashtool serve` over any transport that opens a
//! POSIX shell on the far side (`ssh devbox`, `docker exec -i box sh`,
//! `kubectl exec -i pod -- sh`), with nothing installed there first.
//!
//! Each connection runs the command line, has the shell look for a
//! `bashtool` of this version in a private directory over there
//! ([`script`]), and starts its `serve` when its SHA-256 is that of the
//! build to upload: one round trip, then the protocol's handshake. When it
//! is missing or differs, the build goes up through the same pipe first,
//! on a connection of its own that ends with the upload: it is written to
//! a temp name, its size and SHA-256 checked over there, and only then
//! renamed into place; an upload that arrives damaged or cut short is
//! deleted there and sent again (up to [`MAX_UPLOADS`] times), and a
//! binary is started only when the digest over there is the one sent.

mod binary;
mod script;

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use sha2::{Digest as _, Sha256};
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::process::{ChildStdin, ChildStdout};
use tokio::time::Instant;

pub use binary::{Architecture, ServeBinary};
use script::{Answer, Probe};

use crate::config::DEFAULT_HANDSHAKE_TIMEOUT;
use crate::error::Error;
use crate::transport::{Link, StartedLine, Transport, TransportProcess, start_line};

/// Uploads tried on one connect before giving up on a damaged link.
pub const MAX_UPLOADS: u32 = 3;
/// The most unmarked output (banners, error messages) kept for messages.
const SEEN_BYTES: usize = 2048;
/// How much of the build is read and sent at a time.
const CHUNK_BYTES: usize = 256 * 1024;
/// How long an ended shell's stderr may take to close (a process it left
/// behind may hold it open).
const STDERR_SETTLE: Duration = Duration::from_secs(5);
/// Progress is reported at most this many times per upload.
const PROGRESS_STEPS: u64 = 20;

/// What a bootstrap is doing, for a progress display.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum BootstrapEvent<'a> {
    /// The build is going up: `sent` of `total` bytes so far.
    Uploading {
        directory: &'a str,
        sent: u64,
        total: u64,
    },
    /// It arrived whole, was checked over there and runs.
    Uploaded {
        directory: &'a str,
        total: u64,
        elapsed: Duration,
    },
    /// An upload arrived damaged or cut short; it was deleted over there
    /// and is sent again.
    Retrying { reason: &'a str },
    /// There is no bash over there: commands run with `sh`.
    NoBash,
}

/// Receives [`BootstrapEvent`]s.
pub type ProgressSink = Arc<dyn Fn(BootstrapEvent<'_>) + Send + Sync>;

/// A transport that opens a POSIX shell over there (the command line runs
/// with `sh -c` here, `cmd /C` on Windows) and starts `bashtool serve`
/// from a private directory there, uploading `binary` first when the
/// `bashtool` there is missing or another build.
pub struct ShellTransport {
    shell_line: String,
    binary: Option<ServeBinary>,
    serve_args: Vec<String>,
    answer_timeout: Duration,
    progress: Option<ProgressSink>,
    /// What the last connection found that the model should know.
    note: Mutex<Option<String>>,
}

impl std::fmt::Debug for ShellTransport {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("ShellTransport")
            .field("shell_line", &self.shell_line)
            .field("binary", &self.binary)
            .field("serve_args", &self.serve_args)
            .finish_non_exhaustive()
    }
}

impl ShellTransport {
    /// A transport through `shell_line`, which must open a POSIX shell over
    /// there. `binary` is the Linux build to upload when needed (`None`:
    /// only a `bashtool` already there of this version can be started).
    pub fn new(shell_line: impl Into<String>, binary: Option<ServeBinary>) -> Self {
        Self {
            shell_line: shell_line.into(),
            binary,
            serve_args: Vec::new(),
            answer_timeout: DEFAULT_HANDSHAKE_TIMEOUT,
            progress: None,
            note: Mutex::new(None),
        }
    }

    /// Arguments for `bashtool serve` over there (`--sandbox off`, ...).
    pub fn serve_args(mut self, args: Vec<String>) -> Self {
        self.serve_args = args;
        self
    }

    /// How long each answer of the shell may take (a login included).
    pub fn answer_timeout(mut self, timeout: Duration) -> Self {
        self.answer_timeout = timeout;
        self
    }

    /// Where progress goes (an upload's, for a person to see).
    pub fn on_progress(mut self, sink: ProgressSink) -> Self {
        self.progress = Some(sink);
        self
    }

    /// The command line.
    pub fn shell_line(&self) -> &str {
        &self.shell_line
    }

    fn report(&self, event: BootstrapEvent<'_>) {
        if let Some(sink) = &self.progress {
            sink(event);
        }
    }

    /// What to do after `probe`: start what is there, or upload `binary`.
    fn decide<'a>(&'a self, probe: &Probe) -> Result<Option<&'a ServeBinary>, Error> {
        let remote = self.shell_line.clone();
        if probe.system != "Linux" {
            return Err(Error::RemoteSystem {
                remote,
                system: probe.system.clone(),
            });
        }
        let Some(architecture) = probe.architecture() else {
            return Err(Error::UnknownArchitecture {
                remote,
                machine: probe.machine.clone(),
                known: Architecture::known_names(),
            });
        };
        let Some(binary) = &self.binary else {
            return match probe.installed {
                Some(_) => Ok(None),
                None => Err(Error::NothingToUpload {
                    remote,
                    directory: probe.directory.clone(),
                    architecture: architecture.name(),
                    target: architecture.static_target(),
                }),
            };
        };
        if probe.installed.as_deref() == Some(binary.sha256()) {
            return Ok(None);
        }
        if binary.architecture() != architecture {
            return Err(Error::WrongArchitecture {
                remote,
                binary: binary.path().to_path_buf(),
                built_for: binary.architecture().name(),
                remote_architecture: architecture.name(),
                target: architecture.static_target(),
            });
        }
        if let (Some(loader), Some(false)) = (binary.interpreter(), probe.loader_present) {
            return Err(Error::LoaderMissing {
                remote,
                binary: binary.path().to_path_buf(),
                loader: loader.to_owned(),
                target: architecture.static_target(),
            });
        }
        Ok(Some(binary))
    }

    /// The arguments `serve` gets on a far side that `probe` describes.
    fn serve_args_for(&self, probe: &Probe) -> Vec<String> {
        let mut args = self.serve_args.clone();
        if !probe.has_bash {
            args.extend(["--shell".to_owned(), "sh".to_owned()]);
        }
        args
    }
}

#[async_trait::async_trait]
impl Transport for ShellTransport {
    async fn connect(&self) -> Result<Link, Error> {
        let mut uploads = 0;
        let mut last_damage = String::new();
        loop {
            let mut shell = Shell::open(self)?;
            let probe = shell.probe().await?;
            let Some(binary) = self.decide(&probe)? else {
                *self.note.lock().unwrap_or_else(PoisonError::into_inner) =
                    (!probe.has_bash).then(|| "no bash there: commands run with sh".to_owned());
                if !probe.has_bash {
                    self.report(BootstrapEvent::NoBash);
                }
                shell
                    .send(&script::start_line(&self.serve_args_for(&probe)))
                    .await?;
                return shell.into_link().await;
            };
            if uploads == MAX_UPLOADS {
                return Err(Error::UploadCorrupted {
                    remote: self.shell_line.clone(),
                    attempts: uploads,
                    detail: last_damage,
                });
            }
            uploads += 1;
            match shell.upload(binary, &probe.directory).await? {
                Uploaded::Whole => {}
                Uploaded::Damaged(detail) => {
                    self.report(BootstrapEvent::Retrying { reason: &detail });
                    last_damage = detail;
                }
            }
        }
    }

    fn describe(&self) -> String {
        match &*self.note.lock().unwrap_or_else(PoisonError::into_inner) {
            Some(note) => format!("{} ({note})", self.shell_line),
            None => self.shell_line.clone(),
        }
    }
}

/// How an upload ended when it did not fail outright.
enum Uploaded {
    Whole,
    /// Damaged or cut short: deleted over there; worth sending again.
    Damaged(String),
}

/// One run of the shell line, speaking to the program over there.
struct Shell<'a> {
    transport: &'a ShellTransport,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    process: TransportProcess,
    marker: String,
    /// Unmarked output, for messages (a banner, an error).
    seen: String,
}

impl<'a> Shell<'a> {
    fn open(transport: &'a ShellTransport) -> Result<Self, Error> {
        let StartedLine {
            stdin,
            stdout,
            process,
        } = start_line(&transport.shell_line)?;
        Ok(Self {
            transport,
            stdin: Some(stdin),
            stdout: BufReader::new(stdout),
            process,
            marker: script::new_marker(),
            seen: String::new(),
        })
    }

    fn remote(&self) -> String {
        self.transport.shell_line.clone()
    }

    /// Writes `text` and flushes; a closed pipe is reported with what the
    /// shell said.
    async fn send(&mut self, text: &str) -> Result<(), Error> {
        let written = match self.stdin.as_mut() {
            Some(stdin) => match stdin.write_all(text.as_bytes()).await {
                Ok(()) => stdin.flush().await,
                Err(error) => Err(error),
            },
            None => Err(std::io::ErrorKind::BrokenPipe.into()),
        };
        match written {
            Ok(()) => Ok(()),
            Err(_) => Err(self.no_shell(None).await),
        }
    }

    /// Starts the program over there and reads what it found.
    async fn probe(&mut self) -> Result<Probe, Error> {
        let version = env!("CARGO_PKG_VERSION");
        let loader = self
            .transport
            .binary
            .as_ref()
            .and_then(ServeBinary::interpreter);
        let line = script::launch_line(&self.marker, version, loader);
        self.send(&line).await?;
        let deadline = Instant::now() + self.transport.answer_timeout;
        match self.answer(deadline).await? {
            Answer::Probe(probe) => Ok(probe),
            Answer::Missing(tools) => Err(Error::MissingTools {
                remote: self.remote(),
                tools: tools.join(", "),
            }),
            Answer::NoDirectory(reasons) => Err(Error::NoPrivateDirectory {
                remote: self.remote(),
                reasons,
            }),
            other => Err(Error::NoShell {
                remote: self.remote(),
                waited: None,
                output: format!("an unexpected answer: {other:?}"),
            }),
        }
    }

    /// The next marked answer, before `deadline`. The shell ending first,
    /// or never answering, means the line did not open a POSIX shell (or
    /// the link broke): the error says which and what was printed.
    async fn answer(&mut self, deadline: Instant) -> Result<Answer, Error> {
        let mut line = Vec::new();
        loop {
            line.clear();
            let read =
                tokio::time::timeout_at(deadline, self.stdout.read_until(b'\n', &mut line)).await;
            match read {
                Err(_) => {
                    let waited = self.transport.answer_timeout.as_secs();
                    return Err(self.no_shell(Some(waited)).await);
                }
                Ok(Ok(0) | Err(_)) => return Err(self.no_shell(None).await),
                Ok(Ok(_)) => {}
            }
            let text = String::from_utf8_lossy(&line);
            if let Some(answer) = script::parse_answer(&self.marker, &text) {
                return Ok(answer);
            }
            if self.seen.len() < SEEN_BYTES {
                self.seen.push_str(&text);
            }
        }
    }

    /// The error for a shell that ended or stayed silent: what it printed
    /// and what the transport said (once it ended, given a moment to say
    /// its last words: it writes them just before it exits).
    async fn no_shell(&mut self, waited: Option<u64>) -> Error {
        let stderr = self.process.stderr();
        if waited.is_none() {
            // It may have ended before reading a byte: what it printed is
            // still in the pipe.
            let mut rest = Vec::new();
            let reader = (&mut self.stdout).take(SEEN_BYTES as u64);
            tokio::pin!(reader);
            let _ = tokio::time::timeout(STDERR_SETTLE, reader.read_to_end(&mut rest)).await;
            self.seen.push_str(&String::from_utf8_lossy(&rest));
            let _ = tokio::time::timeout(STDERR_SETTLE, stderr.ended()).await;
        }
        let mut output = self.seen.trim().to_owned();
        let said = stderr.text();
        if !said.is_empty() {
            if !output.is_empty() {
                output.push_str("; ");
            }
            output.push_str(&said);
        }
        Error::NoShell {
            remote: self.remote(),
            waited,
            output,
        }
    }

    /// Sends `binary` into `directory` over there and waits for the
    /// verdict; the connection ends with it.
    async fn upload(mut self, binary: &ServeBinary, directory: &str) -> Result<Uploaded, Error> {
        let started = Instant::now();
        self.send(&script::upload_line(binary.sha256(), binary.size()))
            .await?;
        let sent = self.stream(binary, directory).await?;
        // The end of input ends the copy over there.
        self.stdin = None;
        let deadline = Instant::now() + self.transport.answer_timeout;
        let verdict = self.answer(deadline).await;
        let remote = self.remote();
        let outcome = match verdict {
            Ok(Answer::Uploaded) => {
                self.transport.report(BootstrapEvent::Uploaded {
                    directory,
                    total: binary.size(),
                    elapsed: started.elapsed(),
                });
                Ok(Uploaded::Whole)
            }
            Ok(Answer::Corrupt { size, sha256 }) => Ok(Uploaded::Damaged(format!(
                "{size} bytes with SHA-256 {sha256} arrived instead of {} bytes with SHA-256 {}",
                binary.size(),
                binary.sha256()
            ))),
            Ok(Answer::Failed { stage, message }) => Err(Error::UploadFailed {
                remote,
                directory: directory.to_owned(),
                stage,
                message,
            }),
            Ok(other) => Err(Error::NoShell {
                remote,
                waited: None,
                output: format!("an unexpected answer: {other:?}"),
            }),
            // The link ended before the verdict: the copy over there, cut
            // short, was deleted (or is never used: only a checked file
            // gets the name).
            Err(Error::NoShell { output, .. }) => Ok(Uploaded::Damaged(format!(
                "the link ended after {sent} of {} bytes{}",
                binary.size(),
                if output.is_empty() {
                    String::new()
                } else {
                    format!(" ({output})")
                }
            ))),
            Err(error) => Err(error),
        };
        self.process.finish(Duration::from_secs(5)).await;
        outcome
    }

    /// Writes the file's bytes; returns how many went out. A write error
    /// (the far side stopped reading) ends it early; the verdict tells why.
    async fn stream(&mut self, binary: &ServeBinary, directory: &str) -> Result<u64, Error> {
        let changed = |message: String| Error::ServeBinary {
            path: binary.path().to_path_buf(),
            message,
        };
        let mut file = tokio::fs::File::open(binary.path())
            .await
            .map_err(|error| changed(error.to_string()))?;
        let Some(stdin) = self.stdin.as_mut() else {
            return Ok(0);
        };
        let total = binary.size();
        let step = (total / PROGRESS_STEPS).max(1);
        let mut buffer = vec![0_u8; CHUNK_BYTES];
        let mut hasher = Sha256::new();
        let mut sent = 0_u64;
        let mut reported = 0_u64;
        self.transport.report(BootstrapEvent::Uploading {
            directory,
            sent,
            total,
        });
        loop {
            let read = file
                .read(&mut buffer)
                .await
                .map_err(|error| changed(error.to_string()))?;
            if read == 0 {
                break;
            }
            hasher.update(&buffer[..read]);
            if stdin.write_all(&buffer[..read]).await.is_err() {
                return Ok(sent);
            }
            sent += read as u64;
            if sent - reported >= step {
                reported = sent;
                self.transport.report(BootstrapEvent::Uploading {
                    directory,
                    sent,
                    total,
                });
            }
        }
        if stdin.flush().await.is_err() {
            return Ok(sent);
        }
        if sent != total || binary::hex(&hasher.finalize()) != binary.sha256() {
            return Err(changed(
                "it changed while it was being uploaded; start again".to_owned(),
            ));
        }
        Ok(sent)
    }

    /// The pipe, handed to the protocol once `serve` was started.
    async fn into_link(mut self) -> Result<Link, Error> {
        let Some(stdin) = self.stdin.take() else {
            return Err(self.no_shell(None).await);
        };
        Ok(Link {
            reader: Box::new(self.stdout),
            writer: Box::new(stdin),
            process: Some(self.process),
        })
    }
}
