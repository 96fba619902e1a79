//! How one retained line is shown and what it costs, and the marker of an
//! omitted stretch: the primitives shared by the plain layout and the
//! error-aware one, so that neither depends on the other's internals
//! (dependencies point one way: format, then salient, then these).

use std::borrow::Cow;

use crate::config::OutputConfig;
use crate::output::OutputLine;

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
