//! The errors of starting a process.

/// Why a launch failed; nothing runs then.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The program is not on `PATH` (or the path does not exist).
    #[error("program `{program}` not found; check PATH or give its full path")]
    ProgramNotFound {
        /// The program as given.
        program: String,
    },
    /// The kernel refused to start it, or a step before exec failed.
    #[error("could not start `{program}`: {source}")]
    Spawn {
        /// The program as given.
        program: String,
        /// What the kernel or the step said.
        #[source]
        source: std::io::Error,
    },
    /// A wrapper could not prepare the launch (a sandbox that cannot be
    /// applied): nothing is started rather than something unconfined.
    #[error("{message}")]
    Wrapper {
        /// Why, naming the setting or the kernel feature.
        message: String,
    },
    /// A command's cgroup could not be made or a limit not enforced:
    /// nothing runs rather than something unlimited.
    #[error("{message}")]
    Cgroup {
        /// What is missing or failed, naming the cgroup file or the
        /// controller.
        message: String,
    },
}

impl Error {
    /// `source` while starting `program`: not found, or another failure.
    pub fn spawn(program: &str, source: std::io::Error) -> Self {
        if source.kind() == std::io::ErrorKind::NotFound {
            Self::ProgramNotFound {
                program: program.to_owned(),
            }
        } else {
            Self::Spawn {
                program: program.to_owned(),
                source,
            }
        }
    }
}
