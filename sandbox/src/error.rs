//! The errors of preparing a sandbox. A sandbox that cannot be prepared is
//! an error, never a silent fallback to running unconfined.

/// Why a sandbox could not be prepared.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A sandbox setting is invalid; nothing runs.
    #[error("sandbox setting `{setting}`: {message}")]
    Setting {
        /// The setting's name.
        setting: &'static str,
        /// What is wrong and what is allowed.
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
        /// The mode asked for.
        mode: String,
        /// The kernel feature it needs.
        feature: &'static str,
        /// Why the feature is not there.
        reason: String,
    },
    /// Preparing the sandbox failed for another reason.
    #[error("could not prepare the sandbox: {step}: {source}")]
    Setup {
        /// The step that failed.
        step: String,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
}
