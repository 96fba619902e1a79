//! What the tracker keeps: entries (a line and its identical repeats),
//! groups of consecutive entries around error-like lines, the count of those
//! that did not fit, and what each costs on display.

use std::collections::VecDeque;

use crate::output::lines::OutputLine;

/// A line and the identical lines that directly followed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    pub line: OutputLine,
    /// How many lines this entry stands for (1 + repeats).
    pub count: u64,
    /// The line looks like an error (not just context).
    pub salient: bool,
}

impl Entry {
    pub(crate) fn last_number(&self) -> u64 {
        self.line.number + self.count - 1
    }

    /// Appends `line` if it repeats this entry's line directly.
    pub(crate) fn absorb(&mut self, line: &OutputLine) -> bool {
        let repeats = line.number == self.last_number() + 1
            && line.stream == self.line.stream
            && line.original_chars == self.line.original_chars
            && line.text == self.line.text;
        if repeats {
            self.count += 1;
        }
        repeats
    }
}

/// Consecutive lines around one or more error-like lines.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Group {
    pub entries: Vec<Entry>,
    /// The error-like lines look like noise (a pending test, a line whose
    /// shape keeps repeating): shown only after the real failures.
    pub decoy: bool,
    /// Started by an outlier (a line whose template was new among lines
    /// that were not) and holding no real error-like line: shown after the
    /// real failures, and only if the outlier's template stayed rare.
    pub rare: bool,
    /// The outliers' line numbers and templates.
    pub rare_lines: Vec<(u64, u64)>,
}

impl Group {
    /// Whether line `number` of this group is an outlier (not an error).
    pub(crate) fn is_rare_line(&self, number: u64) -> bool {
        self.rare_lines.iter().any(|(rare, _)| *rare == number)
    }

    pub(crate) fn last_number(&self) -> u64 {
        self.entries.last().map_or(0, Entry::last_number)
    }

    pub(crate) fn push(&mut self, line: &OutputLine, salient: bool) {
        if let Some(last) = self.entries.last_mut()
            && last.salient == salient
            && last.absorb(line)
        {
            return;
        }
        self.entries.push(Entry {
            line: line.clone(),
            count: 1,
            salient,
        });
    }
}

/// Error-like lines that came after the groups were full.
#[derive(Debug, Default)]
pub(crate) struct Overflow {
    pub count: u64,
    /// Number and log line of the first of them.
    pub first: Option<(u64, Option<u64>)>,
    /// Numbers of the latest of them, to leave out those in the shown tail.
    pub recent: VecDeque<u64>,
}

/// Copies `line` into `slot`, reusing its allocation: this runs on every
/// line (a derived `clone_from` would allocate a new String).
pub(crate) fn copy_line(slot: &mut OutputLine, line: &OutputLine) {
    slot.text.clone_from(&line.text);
    slot.stream = line.stream;
    slot.number = line.number;
    slot.log_line = line.log_line;
    slot.original_chars = line.original_chars;
}

pub(crate) fn is_indented(text: &str) -> bool {
    text.starts_with([' ', '\t'])
}

/// The display cost of `count` lines shown as one (`text (repeated N times)`).
pub(crate) fn entry_cost(line: &OutputLine, count: u64, max_line_chars: usize) -> usize {
    // Computed, not formatted: this runs for every repeated line.
    let repeat = if count > 1 {
        REPEAT_SUFFIX_FIXED_CHARS + decimal_digits(count)
    } else {
        0
    };
    line.original_chars.min(max_line_chars) + 1 + repeat
}

/// Chars of `repeat_suffix` besides the count's digits.
pub(crate) const REPEAT_SUFFIX_FIXED_CHARS: usize = " (repeated  times)".len();

pub(crate) fn decimal_digits(mut value: u64) -> usize {
    let mut digits = 1;
    while value >= 10 {
        value /= 10;
        digits += 1;
    }
    digits
}

/// What a collapsed run gets appended.
pub(crate) fn repeat_suffix(count: u64) -> String {
    format!(" (repeated {count} times)")
}

/// Chars of leading whitespace.
pub(crate) fn indentation(text: &str) -> usize {
    text.len() - text.trim_start().len()
}

/// Whether `text` continues the block of an error-like line indented by
/// `indent`, past its fixed context: more indented (frames, the source line
/// and carets, a race report's stacks), or a frame or a note of a chain
/// (`at 0x…`, `by 0x…`, `#3 0x…`, `x.h:9:5: note: …`, `required from …`).
pub(crate) fn continues(text: &str, indent: usize) -> bool {
    // valgrind prefixes every line with `==PID==`.
    let text = text
        .strip_prefix("==")
        .and_then(|rest| rest.split_once("== ").map(|(_, after)| after))
        .unwrap_or(text);
    let trimmed = text.trim_start();
    indentation(text) > indent
        || trimmed.starts_with("at ")
        || trimmed.starts_with("by 0x")
        || (trimmed.starts_with('#') && trimmed.as_bytes().get(1).is_some_and(u8::is_ascii_digit))
        || trimmed.contains(": note: ")
        || trimmed.contains("required from ")
        || trimmed.starts_with("In file included from")
}

#[cfg(test)]
mod tests {
    #[test]
    fn computed_repeat_cost_matches_the_suffix() {
        for count in [2_u64, 9, 10, 99, 100, 12_345, u64::MAX] {
            assert_eq!(
                super::REPEAT_SUFFIX_FIXED_CHARS + super::decimal_digits(count),
                super::repeat_suffix(count).len()
            );
        }
    }
}
