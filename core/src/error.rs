//! Errors of the core crate.

use std::path::PathBuf;

/// Why an environment could not run a command at all. A command that ran and
/// failed is not an error: it is a [`crate::CommandResult`] with its exit code.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    /// The working directory does not exist.
    #[error("working directory `{}` does not exist; pass an existing directory", path.display())]
    MissingDirectory {
        /// The directory asked for.
        path: PathBuf,
    },
    /// The working directory is a file.
    #[error("`{}` is not a directory; pass a directory as working_directory", path.display())]
    NotADirectory {
        /// The path asked for.
        path: PathBuf,
    },
    /// The shell program is not installed.
    #[error("shell `{program}` was not found; install it or configure another shell")]
    ShellNotFound {
        /// The program looked for.
        program: String,
    },
    /// The process could not be started.
    #[error("could not start `{program}`: {source}")]
    Spawn {
        /// The program that was to run.
        program: String,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// Anything else the environment reports (a lost remote connection,
    /// a sandbox the kernel cannot enforce).
    #[error("{message}")]
    Other {
        /// What went wrong and how to fix it.
        message: String,
    },
}

/// Errors of the tool registry and of the settings core checks.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A pattern of variable names to mask cannot name a variable.
    #[error(
        "{pattern:?} is not a pattern of variable names: use letters, digits, _ and the wildcards * and ?"
    )]
    InvalidRedactPattern {
        /// The pattern given.
        pattern: String,
    },
    /// No tool has this name.
    #[error("unknown tool `{name}`; known tools: {known}")]
    UnknownTool {
        /// The name asked for.
        name: String,
        /// The names there are.
        known: String,
    },
}
