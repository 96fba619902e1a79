//! Errors of the environment's own API (state directory, job records,
//! interactive jobs, the sandbox). Errors of running a command are
//! [`bashtool_core::ExecError`]s, and errors of the jobs port are
//! [`bashtool_core::JobError`]s, as the ports say.

use std::path::PathBuf;

/// What went wrong in env-local's own files.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No per-user directory for bashtool's files could be found.
    #[error(
        "no per-user state directory: set BASHTOOL_STATE_DIR, XDG_STATE_HOME or HOME (bashtool does not fall back to a shared directory such as /tmp)"
    )]
    NoStateDir,
    /// A file or directory could not be read or written.
    #[error("could not read or write `{}`: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// A key name an interactive job does not know.
    #[error("unknown key `{name}`; allowed keys: {allowed}")]
    UnknownKey {
        /// The name given.
        name: String,
        /// The names it knows.
        allowed: &'static str,
    },
    /// Input for an interactive job that has ended.
    #[error("the interactive job has ended ({state}); its input is closed, start a new one")]
    InputClosed {
        /// How it ended.
        state: String,
    },
    /// The program stopped reading before all the input was written.
    #[error(
        "the program did not take the input in time: {written} of {total} bytes sent; \
         read the job to see what it is doing, or stop it"
    )]
    InputNotTaken {
        /// Bytes the terminal took.
        written: usize,
        /// Bytes there were to send.
        total: usize,
    },
    /// A line longer than a terminal in line mode accepts.
    #[error(
        "a line of {length} bytes is longer than the terminal takes in line mode ({limit} bytes); \
         nothing was sent: send shorter lines, or pass long text through a file"
    )]
    LineTooLong {
        /// The line's length in bytes.
        length: usize,
        /// The most a line may have.
        limit: usize,
    },
    /// Writing to the job's terminal failed.
    #[error("could not write to the terminal: {source}")]
    Terminal {
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// The environment's sandbox could not be prepared.
    #[error("{message}")]
    Sandbox {
        /// Why, naming the setting or the kernel feature.
        message: String,
    },
}

/// A launch's error as the port's: a program that is not there, a spawn
/// failure, or a wrapper (a sandbox) that cannot be applied.
pub(crate) fn exec_error(error: bashtool_process::Error) -> bashtool_core::ExecError {
    use bashtool_core::ExecError;
    match error {
        bashtool_process::Error::ProgramNotFound { program } => {
            ExecError::ShellNotFound { program }
        }
        bashtool_process::Error::Spawn { program, source } => ExecError::Spawn { program, source },
        bashtool_process::Error::Wrapper { message }
        | bashtool_process::Error::Cgroup { message } => ExecError::Other { message },
    }
}
