//! Recognizes error-like lines while output streams past and keeps a bounded
//! number of them, with their context and line numbers.
//!
//! Memory is bounded by the budget, whatever the output size: a look-back
//! ring of [`MAX_BEFORE`] lines, groups up to twice the budget in display
//! cost (the first budget's worth may fall inside the shown head, so at least
//! one budget remains for the middle), the line numbers of the latest
//! error-like lines that did not fit (one per budget char at most), and,
//! while the whole output collapses into a budget, its runs of lines.

use std::collections::VecDeque;

use crate::config::{OutputConfig, Shortening};
use crate::output::OutputLine;

use super::decoys::DecoyWatch;
pub(crate) use super::groups::{Entry, Group, Overflow, entry_cost, repeat_suffix};
use super::groups::{copy_line, is_indented};
use super::patterns::{Kind, MAX_BEFORE, Matcher};

/// The longest group of consecutive lines kept around error-like lines.
const MAX_GROUP_ENTRIES: usize = 40;
/// The share of the kept groups' cost that decoy groups may take.
const DECOY_SHARE_PERCENT: usize = 25;

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
    kind: Kind,
    text: String,
}

/// Where the open group stands.
#[derive(Debug, Clone, Copy)]
struct Open {
    after_left: usize,
    stop_at_blank: bool,
    /// Indentation of the latest error-like line: more indented lines
    /// after it continue it (frames, notes, the source line) past
    /// `after_left`.
    indent: usize,
    /// The latest line kept was more indented than the error-like line.
    deeper: bool,
}

/// See the module docs.
#[derive(Debug, Default)]
pub struct SalientTracker {
    enabled: bool,
    matcher: Matcher,
    max_line_chars: usize,
    /// Cap of the groups' display cost.
    cap: usize,
    /// Cap of `runs`' display cost and of `overflow.recent`.
    budget: usize,
    ring: VecDeque<OutputLine>,
    /// The latest line that is not indented: the heading of what follows.
    heading: Option<OutputLine>,
    groups: Vec<Group>,
    groups_cost: usize,
    open: Option<Open>,
    overflow: Overflow,
    /// The whole output as runs of identical lines, while it fits the budget.
    runs: Option<Vec<Entry>>,
    runs_cost: usize,
    /// Middle windows of the first and of the latest very long lines, by
    /// line number.
    first_windows: Vec<(u64, Kind, String)>,
    last_windows: VecDeque<(u64, Kind, String)>,
    decoys: DecoyWatch,
    decoy_cost: usize,
    /// A blank line after an indented block, kept if the block goes on.
    held_blank: Option<OutputLine>,
}

/// Chars of leading whitespace.
fn indentation(text: &str) -> usize {
    text.len() - text.trim_start().len()
}

/// Whether `text` continues the block of an error-like line indented by
/// `indent`, past its fixed context: more indented (frames, the source line
/// and carets, a race report's stacks), or a frame or a note of a chain
/// (`at 0x…`, `by 0x…`, `#3 0x…`, `x.h:9:5: note: …`, `required from …`).
fn continues(text: &str, indent: usize) -> bool {
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

impl SalientTracker {
    pub fn new(config: &OutputConfig) -> Self {
        let budget = config.budget_chars();
        Self {
            enabled: config.shortening == Shortening::ErrorAware,
            matcher: Matcher::new(&config.extra_salient_patterns),
            max_line_chars: config.max_line_chars,
            cap: budget.saturating_mul(2),
            budget,
            runs: Some(Vec::new()),
            ..Self::default()
        }
    }

    /// Looks for an error-like token in `dropped`, a part of a very long
    /// line that the buffer is about to forget; `rest` is what follows it.
    /// `kept` is the window found so far in the same line: the better of
    /// the two (a higher [`Kind::rank`], else the later) is returned.
    pub(crate) fn middle_window(
        &self,
        kept: Option<MiddleWindow>,
        dropped: &str,
        rest: &str,
    ) -> Option<MiddleWindow> {
        if !self.enabled {
            return None;
        }
        let Some(found) = self.matcher.find_best(dropped) else {
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
        Some(MiddleWindow {
            kind: found.kind,
            text,
        })
    }

    /// Looks at the next complete line of the output.
    pub fn observe(&mut self, line: &OutputLine) {
        self.observe_with_window(line, None);
    }

    /// Like [`SalientTracker::observe`], for a line whose dropped middle had
    /// an error-like token.
    /// False when shortening is plain: nothing is observed.
    pub(crate) fn is_enabled(&self) -> bool {
        self.enabled
    }

    pub(crate) fn observe_with_window(&mut self, line: &OutputLine, window: Option<MiddleWindow>) {
        self.observe_with_hint(line, window, true);
    }

    /// Like [`SalientTracker::observe_with_window`]; `may_hold_anchor:
    /// false` when a prefilter pass over the chunk found no anchor in it.
    pub(crate) fn observe_with_hint(
        &mut self,
        line: &OutputLine,
        window: Option<MiddleWindow>,
        may_hold_anchor: bool,
    ) {
        if !self.enabled {
            return;
        }
        self.observe_run(line);
        let mut found = self
            .matcher
            .find_with_hint(&line.text, may_hold_anchor)
            .map(|found| found.kind);
        if let Some(window) = window {
            found = found.or(Some(window.kind));
            let entry = (line.number, window.kind, window.text);
            if self.first_windows.len() < MAX_WINDOWS {
                self.first_windows.push(entry);
            } else {
                if self.last_windows.len() == MAX_WINDOWS {
                    self.last_windows.pop_front();
                }
                self.last_windows.push_back(entry);
            }
        }
        if let Some(open) = self.open {
            let blank = line.text.trim().is_empty();
            let continued = !blank && continues(&line.text, open.indent);
            let room = self.groups.last().is_some_and(|group| {
                group.entries.len() < MAX_GROUP_ENTRIES
                    || group.entries.last().is_some_and(|last| {
                        last.salient == found.is_some() && last.line.text == line.text
                    })
            });
            // A blank line inside an indented block (CMake's `CMake Error
            // at …:` and its indented paragraphs, rspec's `Failure/Error:`
            // then `expected:`/`got:` further in) is held, and kept only if
            // the block goes on after it.
            let plain_context = open.after_left > 0 && !open.stop_at_blank;
            if blank
                && found.is_none()
                && room
                && self.held_blank.is_none()
                && !plain_context
                && (open.indent > 0 || open.deeper)
            {
                self.held_blank = Some(line.clone());
                self.remember(line);
                return;
            }
            let context = if self.held_blank.is_some() {
                continued
            } else {
                (open.after_left > 0 && !(open.stop_at_blank && blank)) || continued
            };
            if (found.is_some() || context) && room {
                if let Some(held) = self.held_blank.take() {
                    self.extend_open(&held, None);
                }
                self.extend_open(line, found);
                if let Some(open) = &mut self.open {
                    open.deeper = !blank && indentation(&line.text) > open.indent;
                }
                self.remember(line);
                return;
            }
            self.open = None;
            self.held_blank = None;
        }
        if let Some(kind) = found {
            self.start_group(line, kind);
        }
        self.remember(line);
    }

    fn extend_open(&mut self, line: &OutputLine, kind: Option<Kind>) {
        let cost_before = self.last_group_cost();
        if let Some(group) = self.groups.last_mut() {
            group.push(line, kind.is_some());
        }
        self.groups_cost += self.last_group_cost() - cost_before;
        if let Some(open) = &mut self.open {
            match kind {
                Some(kind) => {
                    let context = kind.context();
                    open.after_left = context.after;
                    open.stop_at_blank = context.stop_at_blank;
                    open.indent = indentation(&line.text);
                }
                None => open.after_left = open.after_left.saturating_sub(1),
            }
        }
    }

    fn last_group_cost(&self) -> usize {
        self.groups.last().map_or(0, |group| {
            group
                .entries
                .iter()
                .map(|entry| entry_cost(&entry.line, entry.count, self.max_line_chars))
                .sum()
        })
    }

    fn start_group(&mut self, line: &OutputLine, kind: Kind) {
        let decoy = self.decoys.is_decoy(&line.text);
        let decoys_full = decoy && self.decoy_cost * 100 >= self.cap * DECOY_SHARE_PERCENT;
        if self.groups_cost >= self.cap || decoys_full {
            self.record_overflow(line);
            return;
        }
        let context = kind.context();
        let kept_until = self.groups.last().map_or(0, Group::last_number);
        let mut group = Group {
            decoy,
            ..Group::default()
        };
        let mut before = context.before;
        if context.block_before {
            // The block this marker closes: back to the last blank line.
            before = self
                .ring
                .iter()
                .rev()
                .take(before)
                .take_while(|earlier| !earlier.text.trim().is_empty())
                .count();
        } else if kind == Kind::Exception {
            // Only the frames of a traceback or stack (indented lines), not
            // the log lines that happen to precede an exception.
            before = self
                .ring
                .iter()
                .rev()
                .take(before)
                .take_while(|earlier| is_indented(&earlier.text))
                .count();
        }
        let skip = self.ring.len().saturating_sub(before);
        let first_before = self
            .ring
            .get(skip)
            .map_or(line.number, |earlier| earlier.number);
        // An indented error (eslint's `3:24  error  …`, a test's assertion)
        // belongs to the heading above it (the file, the test): keep that
        // too, even when it is further back than the context.
        if is_indented(&line.text)
            && let Some(heading) = &self.heading
            && heading.number > kept_until
            && heading.number < first_before
        {
            group.push(heading, false);
        }
        for earlier in self.ring.iter().skip(skip) {
            let leading_blank = group.entries.is_empty() && earlier.text.trim().is_empty();
            if earlier.number > kept_until && !leading_blank {
                group.push(earlier, false);
            }
        }
        group.push(line, true);
        self.groups.push(group);
        let cost = self.last_group_cost();
        self.groups_cost += cost;
        if decoy {
            self.decoy_cost += cost;
        }
        self.open = Some(Open {
            after_left: context.after,
            stop_at_blank: context.stop_at_blank,
            indent: indentation(&line.text),
            deeper: false,
        });
    }

    fn record_overflow(&mut self, line: &OutputLine) {
        let overflow = &mut self.overflow;
        overflow.count += 1;
        overflow.first.get_or_insert((line.number, line.log_line));
        if overflow.recent.len() >= self.budget.max(1) {
            overflow.recent.pop_front();
        }
        overflow.recent.push_back(line.number);
    }

    fn remember(&mut self, line: &OutputLine) {
        self.decoys.observe(&line.text);
        if self.ring.len() == MAX_BEFORE
            && let Some(mut slot) = self.ring.pop_front()
        {
            copy_line(&mut slot, line);
            self.ring.push_back(slot);
        } else {
            self.ring.push_back(line.clone());
        }
        if !is_indented(&line.text) && !line.text.trim().is_empty() {
            match &mut self.heading {
                Some(heading) => copy_line(heading, line),
                None => self.heading = Some(line.clone()),
            }
        }
    }

    fn observe_run(&mut self, line: &OutputLine) {
        let Some(runs) = &mut self.runs else {
            return;
        };
        if let Some(last) = runs.last_mut() {
            let before = entry_cost(&last.line, last.count, self.max_line_chars);
            if last.absorb(line) {
                let after = entry_cost(&last.line, last.count, self.max_line_chars);
                self.runs_cost += after - before;
                if self.runs_cost > self.budget {
                    self.runs = None;
                }
                return;
            }
        }
        self.runs_cost += entry_cost(line, 1, self.max_line_chars);
        if self.runs_cost > self.budget {
            self.runs = None;
        } else {
            runs.push(Entry {
                line: line.clone(),
                count: 1,
                salient: false,
            });
        }
    }

    /// The kept groups, in output order.
    pub(crate) fn groups(&self) -> &[Group] {
        &self.groups
    }

    pub(crate) fn overflow(&self) -> &Overflow {
        &self.overflow
    }

    /// The whole output as runs of identical lines, when that fits the budget.
    pub(crate) fn runs(&self) -> Option<&[Entry]> {
        self.runs.as_deref()
    }

    pub(crate) fn matcher(&self) -> &Matcher {
        &self.matcher
    }

    /// The middle window kept for line `number`, if any.
    pub(crate) fn window_of(&self, number: u64) -> Option<(Kind, &str)> {
        self.first_windows
            .iter()
            .chain(&self.last_windows)
            .find(|(kept, _, _)| *kept == number)
            .map(|(_, kind, text)| (*kind, text.as_str()))
    }

    /// Number of error-like lines seen.
    pub fn salient_lines(&self) -> u64 {
        let kept: u64 = self
            .groups
            .iter()
            .flat_map(|group| &group.entries)
            .filter(|entry| entry.salient)
            .map(|entry| entry.count)
            .sum();
        kept + self.overflow.count
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::Stream;

    fn line(number: u64, text: &str) -> OutputLine {
        OutputLine {
            stream: Stream::Stdout,
            text: text.to_owned(),
            number,
            log_line: None,
            original_chars: text.chars().count(),
        }
    }

    fn tracker_of(lines: &[&str]) -> SalientTracker {
        let mut tracker = SalientTracker::new(&OutputConfig::default());
        for (index, text) in lines.iter().enumerate() {
            tracker.observe(&line(index as u64 + 1, text));
        }
        tracker
    }

    fn group_texts(tracker: &SalientTracker) -> Vec<Vec<(String, u64, bool)>> {
        tracker
            .groups()
            .iter()
            .map(|group| {
                group
                    .entries
                    .iter()
                    .map(|entry| (entry.line.text.clone(), entry.count, entry.salient))
                    .collect()
            })
            .collect()
    }

    #[test]
    fn keeps_a_rustc_error_with_its_location_until_the_blank_line() {
        let tracker = tracker_of(&[
            "   Compiling beta v0.1.0",
            "error[E0308]: mismatched types",
            " --> beta/src/lib.rs:2:21",
            "  |",
            "2 |     let port: u16 = text.trim();",
            "",
            "warning: unused variable",
        ]);
        assert_eq!(
            group_texts(&tracker),
            [vec![
                ("   Compiling beta v0.1.0".to_owned(), 1, false),
                ("error[E0308]: mismatched types".to_owned(), 1, true),
                (" --> beta/src/lib.rs:2:21".to_owned(), 1, false),
                ("  |".to_owned(), 1, false),
                ("2 |     let port: u16 = text.trim();".to_owned(), 1, false),
            ]]
        );
    }

    #[test]
    fn keeps_the_last_frames_before_an_exception_line() {
        let tracker = tracker_of(&[
            "log 1",
            "  File \"app.py\", line 3, in a",
            "    b()",
            "  File \"app.py\", line 8, in b",
            "    return CONFIG[key]",
            "KeyError: 'user'",
            "",
            "log 2",
            "log 3",
        ]);
        let groups = group_texts(&tracker);
        assert_eq!(groups.len(), 1);
        let texts: Vec<&str> = groups[0].iter().map(|entry| entry.0.as_str()).collect();
        assert_eq!(
            texts,
            [
                "  File \"app.py\", line 3, in a",
                "    b()",
                "  File \"app.py\", line 8, in b",
                "    return CONFIG[key]",
                "KeyError: 'user'",
                "",
                "log 2",
            ]
        );
    }

    #[test]
    fn keeps_the_heading_of_an_indented_error_further_back_than_the_context() {
        let tracker = tracker_of(&[
            "src/module27.js",
            "  1:7   warning  'helper' is assigned a value but never used",
            "  2:10  warning  'unused' is defined but never used",
            "  2:21  warning  'b' is defined but never used",
            "  2:26  warning  Unexpected console statement",
            "  3:24  error    'fetchConfg' is not defined  no-undef",
            "",
        ]);
        let numbers: Vec<(u64, bool)> = tracker.groups()[0]
            .entries
            .iter()
            .map(|entry| (entry.line.number, entry.salient))
            .collect();
        assert_eq!(numbers, [(1, false), (5, false), (6, true)]);
    }

    #[test]
    fn collapses_repeated_error_lines_into_one_entry() {
        let mut lines = vec!["start"];
        lines.extend(std::iter::repeat_n("grep: x: Permission denied", 1000));
        let tracker = tracker_of(&lines);
        assert_eq!(
            group_texts(&tracker),
            [vec![
                ("start".to_owned(), 1, false),
                ("grep: x: Permission denied".to_owned(), 1000, true),
            ]]
        );
    }

    #[test]
    fn counts_error_lines_past_the_cap_without_keeping_them() {
        let config = OutputConfig::default();
        let mut tracker = SalientTracker::new(&config);
        for number in 1..=100_000 {
            let text = format!("error: failure number {number}");
            tracker.observe(&line(number * 2, "ok"));
            tracker.observe(&line(number * 2 + 1, &text));
        }
        let kept: usize = tracker
            .groups()
            .iter()
            .flat_map(|group| &group.entries)
            .map(|entry| entry.line.text.len() + 1)
            .sum();
        // The cap, plus at most the one group that crossed it.
        let group = MAX_GROUP_ENTRIES * (config.max_line_chars + 1);
        assert!(kept <= config.budget_chars() * 2 + group, "kept {kept}");
        assert_eq!(tracker.salient_lines(), 100_000);
        assert!(tracker.overflow().count > 90_000);
        assert!(tracker.overflow().recent.len() <= config.budget_chars());
        assert!(tracker.runs().is_none());
    }

    #[test]
    fn plain_shortening_tracks_nothing() {
        let config = OutputConfig {
            shortening: Shortening::Plain,
            ..OutputConfig::default()
        };
        let mut tracker = SalientTracker::new(&config);
        tracker.observe(&line(1, "error: boom"));
        assert!(tracker.groups().is_empty());
        assert_eq!(tracker.salient_lines(), 0);
    }
}
