//! Error-aware shortening: when lines must be omitted, error-like lines from
//! the omitted middle (with a little context and their line numbers) get a
//! share of the budget, repeated lines collapse, and a long line keeps the
//! window around its error.
//!
//! [`SalientTracker`] recognizes error-like lines while the output streams
//! past the [`OutputBuffer`](crate::output::OutputBuffer) and keeps a bounded
//! number of them; `format_error_aware` lays them out between the head and
//! the tail.

mod layout;
mod patterns;
mod tracker;

pub(crate) use layout::format_error_aware;
pub use tracker::SalientTracker;
