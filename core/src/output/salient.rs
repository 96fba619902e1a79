//! Recognizes error-like lines while output streams past, keeping a bounded
//! number of them with context (placeholder until error-aware shortening).

use crate::config::OutputConfig;
use crate::output::OutputLine;

#[derive(Debug, Default)]
pub struct SalientTracker {}

impl SalientTracker {
    pub fn new(_config: &OutputConfig) -> Self {
        Self {}
    }

    pub fn observe(&mut self, _line: &OutputLine) {}
}

/// Error-aware layout of an over-budget buffer; `None` falls back to the
/// plain head/tail split.
pub(crate) fn format_error_aware(
    _buffer: &crate::output::OutputBuffer,
    _config: &OutputConfig,
    _budget: usize,
) -> Option<String> {
    None
}
