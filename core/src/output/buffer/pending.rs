//! A line still being assembled from chunks ([`PendingLine`]) and the char
//! counting it needs. The buffer holds one per stream; `assembly` feeds it.

/// A line still being assembled. Long lines keep their first and last
/// `cap / 2` chars; the middle is counted, not kept.
#[derive(Debug, Default)]
pub(super) struct PendingLine {
    pub(super) head: String,
    pub(super) head_chars: usize,
    pub(super) tail: String,
    pub(super) tail_chars: usize,
    pub(super) total_chars: usize,
    /// A `\r` was seen: the next visible char starts the line over, as a
    /// terminal redraw would (progress bars).
    pub(super) carriage_return: bool,
    /// Part of this line is already in the log (it grew past the cap).
    pub(super) logged_chars: usize,
    pub(super) log_line: Option<u64>,
    /// Raw text not yet written to the log.
    pub(super) unlogged: String,
    /// An error-like token seen in the part of a long line not kept.
    pub(super) middle_window: Option<crate::output::salient::MiddleWindow>,
}

impl PendingLine {
    /// Nothing pending at all: a new line may bypass the assembly.
    pub(super) fn is_untouched(&self) -> bool {
        self.total_chars == 0
            && !self.carriage_return
            && self.unlogged.is_empty()
            && self.logged_chars == 0
    }

    pub(super) fn is_empty(&self) -> bool {
        self.total_chars == 0 && !self.carriage_return
    }
}

/// The last `keep` chars of `text`, which has `count` chars.
pub(super) fn keep_last_chars(text: &str, count: usize, keep: usize) -> &str {
    if count <= keep {
        return text;
    }
    let start = text
        .char_indices()
        .nth(count - keep)
        .map_or(text.len(), |(byte, _)| byte);
    &text[start..]
}

/// Chars in `text`; ASCII (the common case) is counted by its length.
pub(super) fn char_count(text: &str) -> usize {
    if text.is_ascii() {
        text.len()
    } else {
        text.chars().count()
    }
}
