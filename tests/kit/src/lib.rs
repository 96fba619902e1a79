//! What the test suites of several crates share, below all of them: the
//! suites of `bashtool-process` and `bashtool-sandbox` cannot use the
//! `bashtool-tests` crate (it depends on them), so what they have in
//! common with it lives here, with no bashtool crate under it.
//!
//! - [`RecordingServer`]: a plain HTTP server on the host's loopback that
//!   records the request line of every connection, so that a test decides
//!   from its own records what reached it.
//! - [`Watchdog`]: kills everything in a test's cgroups if the test runs
//!   over, and what is left there when the test ends.

mod http;
mod watchdog;

pub use http::RecordingServer;
pub use watchdog::{Watchdog, members};
