//! Output: the bounded line buffer, shortening and formatting for the model.

mod buffer;
mod capture;
mod chunk;
pub(crate) mod clean;
mod format;
mod lines;
pub mod salient;

pub use buffer::OutputBuffer;
pub use capture::{OutputCapture, RawTap};
pub use chunk::{OutputChunk, OutputSink, Stream};
pub use clean::{StreamCleaner, clean_text, collapse_carriage_returns};
pub use format::{
    FormattedOutput, OMISSION_MARKER_EXAMPLE, abbreviate_line, format_bytes, format_output,
    format_output_with_budget,
};
pub use lines::OutputLine;
