//! How an interactive job is run.

use std::sync::Arc;
use std::time::Duration;

use bashtool_core::Redactor;

use super::transcript::DEFAULT_TEXT_CAPACITY;
use crate::config::{DEFAULT_KILL_GRACE, DEFAULT_MAX_LOG_BYTES};
use bashtool_process::TerminalSize;

/// Default time a call waits before returning a still running job.
pub const DEFAULT_YIELD: Duration = Duration::from_secs(10);
/// How often the processes are probed while the job prints nothing.
pub const PROBE_INTERVAL: Duration = Duration::from_millis(50);
/// Silence after which a job counts as waiting when the kernel cannot be
/// asked (see [`crate::Detection::SilenceTimer`]).
pub const DEFAULT_SILENCE_FALLBACK: Duration = Duration::from_secs(2);

/// How an interactive job is run.
#[derive(Debug)]
pub struct InteractiveOptions {
    /// The terminal's size. Default 120×40.
    pub size: TerminalSize,
    /// The job's whole life; then the tree is stopped. `None`: no limit.
    pub timeout: Option<Duration>,
    /// Time between SIGTERM and SIGKILL when the tree is stopped.
    pub kill_grace: Duration,
    /// Where the cleaned output goes, whole (the caller created it private).
    pub log_file: Option<std::fs::File>,
    /// Most bytes written to `log_file`.
    pub max_log_bytes: u64,
    /// Bytes of cleaned output kept in memory for reads by cursor.
    pub text_capacity: usize,
    /// How often the processes are probed while nothing is printed.
    pub probe_interval: Duration,
    /// Silence that counts as waiting when the kernel cannot be asked.
    pub silence_fallback: Duration,
    /// Masks secrets in the text and the log file (and the screen, when
    /// core renders it). `None`: kept as printed.
    pub redactor: Option<Arc<Redactor>>,
}

impl Default for InteractiveOptions {
    fn default() -> Self {
        Self {
            size: TerminalSize::default(),
            timeout: None,
            kill_grace: DEFAULT_KILL_GRACE,
            log_file: None,
            max_log_bytes: DEFAULT_MAX_LOG_BYTES,
            text_capacity: DEFAULT_TEXT_CAPACITY,
            probe_interval: PROBE_INTERVAL,
            silence_fallback: DEFAULT_SILENCE_FALLBACK,
            redactor: None,
        }
    }
}
