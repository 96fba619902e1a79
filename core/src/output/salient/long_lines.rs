//! Very long lines in error-aware mode: instead of the plain first and last
//! chars, a window around the most telling error-like token in the line,
//! whether the buffer kept that part of the line or only a window of it.

use std::borrow::Cow;

use crate::config::OutputConfig;
use crate::output::lines::{self, ELLIPSIS, OutputLine};

use super::patterns::Matcher;
use super::tracker::SalientTracker;

/// The char index `index` of `text` as a byte offset.
fn byte_at(text: &str, index: usize) -> usize {
    text.char_indices()
        .nth(index)
        .map_or(text.len(), |(byte, _)| byte)
}

/// A long line whose most telling error-like token sits in its middle: its start, a window
/// around the token and its end, within `max_chars`. `None` when the plain
/// first/last abbreviation already shows the token.
fn window_around_token(line: &OutputLine, max_chars: usize, matcher: &Matcher) -> Option<String> {
    const MIN_LINE_CHARS: usize = 60;
    if line.original_chars <= max_chars || max_chars < MIN_LINE_CHARS {
        return None;
    }
    let text = &line.text;
    let found = matcher.find_best(text)?;
    let count = text.chars().count();
    let token = text[..found.offset].chars().count();
    let keep = (max_chars / 2).saturating_sub(3);
    // Room for the token itself (`error[E0308]: mismatched types`).
    let token_room = 32.min(keep);
    if token + token_room <= keep || token >= count.saturating_sub(keep) {
        return None;
    }
    let edge = max_chars / 8;
    let window = max_chars - 2 * edge - 2 * ELLIPSIS.len();
    // A clipped line holds its first and last halves; a window must not
    // join them as if they were adjacent.
    let (low, high) = if line.is_clipped() {
        let seam = count / 2;
        if token < seam {
            (edge, seam)
        } else {
            (seam, count - edge)
        }
    } else {
        (edge, count - edge)
    };
    let start = token.saturating_sub(window / 3).max(low);
    let end = (start + window).min(high);
    let start = end.saturating_sub(window).max(low).min(token);
    if start >= end {
        return None;
    }
    let mut shown = String::with_capacity(max_chars * 4);
    shown.push_str(&text[..byte_at(text, edge)]);
    if start > edge {
        shown.push_str(ELLIPSIS);
    }
    shown.push_str(&text[byte_at(text, start)..byte_at(text, end)]);
    if end < count - edge {
        shown.push_str(ELLIPSIS);
    }
    shown.push_str(&text[byte_at(text, count - edge)..]);
    Some(shown)
}

/// How a line is shown in error-aware mode when the output fits: a long
/// line keeps the window around its error.
pub(crate) fn display_line<'a>(
    line: &'a OutputLine,
    config: &OutputConfig,
    tracker: &SalientTracker,
) -> Cow<'a, str> {
    if line.original_chars <= config.max_line_chars {
        return Cow::Borrowed(&line.text);
    }
    display_long_line(line, config, tracker)
}

/// A long line as shown in error-aware mode: around its error-like token
/// when that sits in its middle, else the plain first and last chars.
pub(crate) fn display_long_line<'a>(
    line: &'a OutputLine,
    config: &OutputConfig,
    tracker: &SalientTracker,
) -> Cow<'a, str> {
    let matcher = tracker.matcher();
    // The token of the part of a huge line the buffer did not keep, when it
    // says at least as much as any in the part it kept (the `"level":
    // "error"` at the start of a JSON record says less than the exception
    // in its middle).
    if line.is_clipped()
        && let Some((kind, window)) = tracker.window_of(line.number)
        && matcher
            .find_best(&line.text)
            .is_none_or(|kept| kind.rank() >= kept.kind.rank())
    {
        return Cow::Owned(with_middle_window(line, config.max_line_chars, window));
    }
    if let Some(window) = window_around_token(line, config.max_line_chars, matcher) {
        return Cow::Owned(window);
    }
    lines::display_line(line, config)
}

/// First and last chars of a clipped line around a window from its middle,
/// within `max_chars`.
fn with_middle_window(line: &OutputLine, max_chars: usize, window: &str) -> String {
    let text = &line.text;
    let count = text.chars().count();
    let edge = (max_chars / 8).min(count / 2);
    let room = max_chars.saturating_sub(2 * edge + 2 * ELLIPSIS.len());
    let window_end = byte_at(window, room);
    format!(
        "{}{ELLIPSIS}{}{ELLIPSIS}{}",
        &text[..byte_at(text, edge)],
        &window[..window_end],
        &text[byte_at(text, count - edge)..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::chunk::Stream;

    fn long_line(text: &str) -> OutputLine {
        OutputLine {
            stream: Stream::Stdout,
            text: text.to_owned(),
            number: 1,
            log_line: None,
            original_chars: text.chars().count(),
        }
    }

    #[test]
    fn keeps_a_window_around_an_error_in_the_middle_of_a_long_line() {
        let text = format!("{} error: disk full {}", "a".repeat(1000), "z".repeat(1000));
        let shown =
            window_around_token(&long_line(&text), 800, &Matcher::default()).expect("window");
        // 100 chars of each end, and 594 around the token, a third before it.
        assert_eq!(
            shown,
            format!(
                "{}...{} error: disk full {}...{}",
                "a".repeat(100),
                "a".repeat(197),
                "z".repeat(379),
                "z".repeat(100)
            )
        );
        assert_eq!(shown.chars().count(), 800);
    }

    #[test]
    fn a_token_near_either_end_needs_no_window() {
        let matcher = Matcher::default();
        let early = format!("error: x {}", "a".repeat(2000));
        let late = format!("{} error: x", "a".repeat(2000));
        assert_eq!(window_around_token(&long_line(&early), 800, &matcher), None);
        assert_eq!(window_around_token(&long_line(&late), 800, &matcher), None);
    }

    #[test]
    fn the_window_goes_around_the_exception_rather_than_the_log_level() {
        let text = format!(
            "{{\"level\": \"error\", \"pad\": \"{}\", \"exc\": \"KeyError: 'CHF'\\nRuntimeError: no rate\", \"tail\": \"{}\"}}",
            "a".repeat(1000),
            "z".repeat(1000)
        );
        let shown =
            window_around_token(&long_line(&text), 800, &Matcher::default()).expect("window");
        assert!(shown.contains("RuntimeError: no rate"), "{shown}");
    }
}
