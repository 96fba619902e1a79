//! Errors of the environment's own API (the job table, the sandbox). Errors
//! of running a command are [`bashtool_core::ExecError`]s, as the port says.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("no background job with pid {pid}; list the jobs to see their pids")]
    UnknownJob { pid: u32 },
    #[error("could not read or write `{}`: {source}", path.display())]
    Io {
        path: PathBuf,
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
