//! Errors of the core crate.

use std::path::PathBuf;

/// Why an environment could not run a command at all. A command that ran and
/// failed is not an error: it is a [`crate::CommandResult`] with its exit code.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    #[error("working directory `{}` does not exist; pass an existing directory", path.display())]
    MissingDirectory { path: PathBuf },
    #[error("`{}` is not a directory; pass a directory as working_directory", path.display())]
    NotADirectory { path: PathBuf },
    #[error("shell `{program}` was not found; install it or configure another shell")]
    ShellNotFound { program: String },
    #[error("could not start `{program}`: {source}")]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{message}")]
    Other { message: String },
}

/// Errors of the tool registry.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("unknown tool `{name}`; known tools: {known}")]
    UnknownTool { name: String, known: String },
}
