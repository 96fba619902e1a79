//! Output as it arrives from a command: which [`Stream`] it came from, the
//! [`OutputChunk`] of cleaned text, and the [`OutputSink`] that shows it
//! live. The environment, the capture, the buffer and the formatting all
//! speak in these terms, so they sit below all of them.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// Which stream a piece of output came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Stream {
    /// The command's standard output.
    Stdout,
    /// The command's standard error.
    Stderr,
}

impl Stream {
    /// `stdout` or `stderr`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stdout => "stdout",
            Self::Stderr => "stderr",
        }
    }
}

impl fmt::Display for Stream {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.as_str())
    }
}

/// A piece of cleaned, valid UTF-8 output as it arrives. It may end in the
/// middle of a line; lines split across chunks are joined by
/// [`OutputBuffer`](crate::OutputBuffer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputChunk {
    /// Which stream it came from.
    pub stream: Stream,
    /// The cleaned text.
    pub text: String,
}

/// Receives output while the command runs (for live display). Called from the
/// environment's reader task, so it must be cheap and must not block.
pub type OutputSink = Arc<dyn Fn(&OutputChunk) + Send + Sync>;
