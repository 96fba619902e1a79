//! Errors of the environment's own API (state directory, job records).
//! Errors of running a command are [`bashtool_core::ExecError`]s, and errors
//! of the jobs port are [`bashtool_core::JobError`]s, as the ports say.

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
}
