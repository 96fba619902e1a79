//! Errors of the environment's own API (the job table, interactive jobs).
//! Errors of running a command are [`bashtool_core::ExecError`]s, as the
//! port says.

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
}
