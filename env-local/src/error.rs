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
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("unknown key `{name}`; allowed keys: {allowed}")]
    UnknownKey { name: String, allowed: &'static str },
    #[error("the interactive job has ended ({state}); its input is closed, start a new one")]
    InputClosed { state: String },
    #[error(
        "the program did not take the input in time: {written} of {total} bytes sent; \
         read the job to see what it is doing, or stop it"
    )]
    InputNotTaken { written: usize, total: usize },
    #[error(
        "a line of {length} bytes is longer than the terminal takes in line mode ({limit} bytes); \
         nothing was sent: send shorter lines, or pass long text through a file"
    )]
    LineTooLong { length: usize, limit: usize },
    #[error("could not write to the terminal: {source}")]
    Terminal {
        #[source]
        source: std::io::Error,
    },
    /// A sandbox setting is invalid; nothing runs.
    #[error("sandbox setting `{setting}`: {message}")]
    SandboxSetting {
        setting: &'static str,
        message: String,
    },
    /// The kernel cannot enforce the requested sandbox. Never silently
    /// skipped: the user turns the sandbox off explicitly.
    #[error(
        "the sandbox ({mode}) cannot be enforced on this machine: {feature} is not available ({reason}); \
         run `bashtool sandbox` to see what this machine supports, or turn the sandbox off with `--sandbox off` \
         (TOML: [sandbox] mode = \"off\")"
    )]
    SandboxUnsupported {
        mode: String,
        feature: &'static str,
        reason: String,
    },
    /// Preparing the sandbox failed for another reason.
    #[error("could not prepare the sandbox: {step}: {source}")]
    SandboxSetup {
        step: String,
        #[source]
        source: std::io::Error,
    },
}
