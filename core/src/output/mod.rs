//! Output: the bounded line buffer, shortening and formatting for the model.

mod buffer;
mod format;
mod lines;
pub mod salient;

pub use buffer::{OutputBuffer, OutputLine};
pub use format::{
    FormattedOutput, OMISSION_MARKER_EXAMPLE, abbreviate_line, format_bytes, format_output,
    format_output_with_budget,
};
