//! One retained line ([`OutputLine`]), how it is shown and what it costs,
//! and the marker of an omitted stretch: the primitives shared by the
//! buffer that keeps lines, the plain layout and the error-aware one, so
//! that none depends on another's internals (dependencies point one way:
//! format, then salient and the buffer, then these).

use std::borrow::Cow;

use crate::config::OutputConfig;
use crate::output::chunk::Stream;

/// One line of output as the model and a UI see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputLine {
    /// Which stream the line came from.
    pub stream: Stream,
    /// The line without its newline. Lines longer than the retention cap keep
    /// only their beginning and end (see `original_chars`).
    pub text: String,
    /// 1-based number of this line in the command's output.
    pub number: u64,
    /// 1-based line in the log file where this line starts, when logged.
    pub log_line: Option<u64>,
    /// Length of the full line in chars; larger than `text` when clipped.
    pub original_chars: usize,
}

impl OutputLine {
    /// True when the middle of a very long line was not retained.
    pub fn is_clipped(&self) -> bool {
        self.original_chars > self.text.chars().count()
    }
}

/// Chars of a `stdout:`/`stderr:` header line.
pub(crate) const HEADER_COST: usize = "stdout:\n".len();
/// Separator of an abbreviated line.
pub(crate) const ELLIPSIS: &str = "...";

/// The displayed text of a retained line: abbreviated if it was long.
pub(crate) fn display_line<'a>(line: &'a OutputLine, config: &OutputConfig) -> Cow<'a, str> {
    if line.original_chars > config.max_line_chars {
        let keep = (config.max_line_chars / 2).saturating_sub(3).max(1);
        // A clipped line still holds its true first and last `keep` chars.
        let text = &line.text;
        let count = text.chars().count();
        if count <= keep * 2 {
            return Cow::Borrowed(text);
        }
        let head_end = text
            .char_indices()
            .nth(keep)
            .map_or(text.len(), |(byte, _)| byte);
        let tail_start = text
            .char_indices()
            .nth(count - keep)
            .map_or(text.len(), |(byte, _)| byte);
        Cow::Owned(format!(
            "{}{ELLIPSIS}{}",
            &text[..head_end],
            &text[tail_start..]
        ))
    } else {
        Cow::Borrowed(&line.text)
    }
}

/// The cost of a line in the budget: its displayed length plus the newline.
pub(crate) fn line_cost(line: &OutputLine, config: &OutputConfig) -> usize {
    line.original_chars.min(config.max_line_chars) + 1
}

pub(crate) fn omitted_marker(count: u64) -> String {
    let noun = if count == 1 { "line" } else { "lines" };
    format!("... ({count} {noun} omitted) ...")
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_omission_marker_counts_lines() {
        assert_eq!(super::omitted_marker(1), "... (1 line omitted) ...");
        assert_eq!(super::omitted_marker(12), "... (12 lines omitted) ...");
    }
}
