//! Windows from the middle of lines so long that the buffer keeps only
//! their first and last chars: the text around the most telling error-like
//! token of the part the buffer dropped, kept for the first and the latest
//! such lines.

use std::collections::VecDeque;

use super::patterns::{Kind, Matcher};

/// Windows of very long lines kept from their start and their end.
const MAX_WINDOWS: usize = 32;
/// Chars of a middle window before its token.
const WINDOW_BEFORE: usize = 198;
/// Chars of a middle window in all.
const WINDOW_CHARS: usize = 594;

/// An error-like token found in the middle of a line so long that the
/// buffer keeps only its first and last chars, with the text around it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MiddleWindow {
    pub(crate) kind: Kind,
    pub(crate) text: String,
}

impl MiddleWindow {
    /// The better of `kept` and the window around the most telling token of
    /// `dropped` (followed by `rest`): a higher [`Kind::rank`], else the
    /// later one.
    pub(crate) fn better(
        kept: Option<Self>,
        matcher: &Matcher,
        dropped: &str,
        rest: &str,
    ) -> Option<Self> {
        let Some(found) = matcher.find_best(dropped) else {
            return kept;
        };
        if let Some(kept) = kept
            && kept.kind.rank() > found.kind.rank()
        {
            return Some(kept);
        }
        let before = &dropped[..found.offset];
        let start = before
            .char_indices()
            .rev()
            .nth(WINDOW_BEFORE - 1)
            .map_or(0, |(byte, _)| byte);
        let text: String = dropped[start..]
            .chars()
            .chain(rest.chars())
            .take(WINDOW_CHARS)
            .collect();
        Some(Self {
            kind: found.kind,
            text,
        })
    }
}

/// The middle windows of the first and of the latest very long lines, by
/// line number.
#[derive(Debug, Default)]
pub(crate) struct Windows {
    first: Vec<(u64, Kind, String)>,
    last: VecDeque<(u64, Kind, String)>,
}

impl Windows {
    pub(crate) fn keep(&mut self, number: u64, window: MiddleWindow) {
        let entry = (number, window.kind, window.text);
        if self.first.len() < MAX_WINDOWS {
            self.first.push(entry);
        } else {
            if self.last.len() == MAX_WINDOWS {
                self.last.pop_front();
            }
            self.last.push_back(entry);
        }
    }

    pub(crate) fn of(&self, number: u64) -> Option<(Kind, &str)> {
        self.first
            .iter()
            .chain(&self.last)
            .find(|(kept, _, _)| *kept == number)
            .map(|(_, kind, text)| (*kind, text.as_str()))
    }
}
