//! Secrets masked in output: the values of variables that hold secrets
//! and the well-known credential shapes become `[redacted: NAME]` before
//! the model, a progress notification, a log or a job's output file sees
//! them.
//!
//! [`Redactor`] is the compiled masker (one multi-pattern search over the
//! values and the shapes' anchors, then a check per shape); a
//! [`RedactStream`] masks one stream cut anywhere; [`RedactSettings`] says
//! which variables (the environment policy's drop patterns, and
//! `--redact-env` patterns) and whether masking is on.

mod base64;
mod engine;
mod pem;
mod redactor;
mod settings;
mod shapes;
mod stream;
mod verdict;

#[cfg(test)]
mod tests;

pub use redactor::{MIN_SECRET_CHARS, Redactor};
pub use settings::{RedactMode, RedactSettings};
pub use stream::RedactStream;
