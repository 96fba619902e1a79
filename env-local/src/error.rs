//! Errors of the environment's own API (the job table). Errors of running a
//! command are [`bashtool_core::ExecError`]s, as the port says.

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
}
