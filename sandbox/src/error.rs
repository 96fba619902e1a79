//! The errors of preparing a sandbox. A sandbox that cannot be prepared is
//! an error, never a silent fallback to running unconfined.

/// Why a sandbox could not be prepared.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A sandbox setting is invalid; nothing runs.
    #[error("sandbox setting `{setting}`: {message}")]
    Setting {
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
    Unsupported {
        mode: String,
        feature: &'static str,
        reason: String,
    },
    /// Preparing the sandbox failed for another reason.
    #[error("could not prepare the sandbox: {step}: {source}")]
    Setup {
        step: String,
        #[source]
        source: std::io::Error,
    },
}
