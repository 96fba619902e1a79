//! Interactive commands: a command in its own pseudo-terminal, input and
//! keys, and knowing from the kernel when it waits for input.
//!
//! - [`pty`]: the terminal pair, and starting the command on it as a new
//!   session with the terminal as its controlling terminal; the wrappers'
//!   child steps (a sandbox) run there too.
//! - [`detect`]: whether the terminal's foreground processes are blocked
//!   reading it, from `/proc/<pid>/task/<tid>/syscall`.
//! - [`screen`]: the `vt100` emulator, and when its screen is what to show;
//!   [`sequences`]: the control sequences it must notice (absolute cursor
//!   placement, queries a terminal answers).
//! - [`transcript`]: the cleaned text, a bounded window read by cursor, and
//!   the log file.
//! - [`keys`]: key names and their bytes.
//! - [`job`]: the job that ties them together; [`driver`]: its task that
//!   reads the terminal; [`options`] and [`state`]: what it takes and
//!   reports.
//! - [`env`]: what an interactive command is launched with.
//!
//! See `docs/interactive.md` for the behaviour and its limits.

mod detect;
mod driver;
mod env;
mod job;
mod keys;
mod options;
mod screen;
mod sequences;
mod state;
mod transcript;

pub use env::interactive_launch;
pub use job::InteractiveJob;
pub use keys::Key;
pub use options::{DEFAULT_YIELD, InteractiveOptions, PROBE_INTERVAL};
pub use state::{Detection, JobState, Snapshot};
