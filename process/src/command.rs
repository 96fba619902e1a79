//! What to start: the program line, its environment and directory
//! ([`Launch`], which wrappers may rewrite), and where its standard
//! streams go ([`ChildIo`]).

use std::ffi::OsString;
use std::os::fd::{OwnedFd, RawFd};
use std::path::PathBuf;

/// What is about to be launched, as wrappers see and may change it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    /// The program line; `argv[0]` is looked up in `PATH` when relative.
    pub argv: Vec<OsString>,
    /// The child's whole environment.
    pub env: Vec<(OsString, OsString)>,
    /// The child's working directory.
    pub cwd: PathBuf,
}

/// Where one of the child's output streams goes.
#[derive(Debug)]
pub enum Sink {
    /// A new pipe; the read end is returned.
    Pipe,
    /// This file (or anything else with a descriptor).
    Fd(OwnedFd),
    /// `/dev/null`.
    Null,
}

/// The child's standard streams and extra descriptors.
#[derive(Debug)]
pub struct ChildIo {
    /// A pipe whose write end is returned (`true`), or `/dev/null`.
    pub stdin_pipe: bool,
    /// Where its stdout goes.
    pub stdout: Sink,
    /// Where its stderr goes.
    pub stderr: Sink,
    /// Descriptors the child gets at fixed numbers (a session's control
    /// pipe at 3): `(descriptor, number)`.
    pub extra: Vec<(OwnedFd, RawFd)>,
    /// A terminal (a pseudo-terminal's slave) that becomes the child's
    /// stdin, stdout, stderr and controlling terminal; `stdin_pipe`,
    /// `stdout` and `stderr` are then not used.
    pub terminal: Option<OwnedFd>,
}

impl ChildIo {
    /// Every stream to `/dev/null`, nothing else.
    pub fn null() -> Self {
        Self {
            stdin_pipe: false,
            stdout: Sink::Null,
            stderr: Sink::Null,
            extra: Vec::new(),
            terminal: None,
        }
    }
}
