//! Recognizes error-like lines while output streams past and keeps a bounded
//! number of them, with their context and line numbers.
//!
//! Every line also gets its template (its text with the variable parts
//! masked): a bounded table counts them, a line whose template is new where
//! the lines before it were not is kept as an outlier (a candidate for the
//! middle even without an error word), and the folded view keeps the whole
//! output as runs of one template while that stays small.
//!
//! Memory is bounded by the budget, whatever the output size: a look-back
//! ring of [`MAX_BEFORE`] lines, groups up to twice the budget in display
//! cost (the first budget's worth may fall inside the shown head, so at least
//! one budget remains for the middle), the line numbers of the latest
//! error-like lines that did not fit (one per budget char at most), a table
//! of at most 4096 templates, and the folded view (a few budgets at most).

use std::collections::VecDeque;

use crate::config::{OutputConfig, Shortening};
use crate::output::lines::OutputLine;

use super::decoys::DecoyWatch;
use super::fold::FoldView;
pub(crate) use super::groups::{Group, Overflow, entry_cost};
use super::groups::{continues, copy_line, indentation, is_indented};
use super::patterns::{Kind, MAX_BEFORE, Matcher};
use super::shapes::location_line;
use super::templates::{TemplateTable, template_key};
pub(crate) use super::windows::MiddleWindow;
use super::windows::Windows;

/// The longest group of consecutive lines kept around error-like lines.
const MAX_GROUP_ENTRIES: usize = 40;
/// The share of the kept groups' cost that decoy groups may take (outliers
/// share it too).
const DECOY_SHARE_PERCENT: usize = 25;
/// Lines before the first that can be an outlier: a template is new at the
/// start of every output.
const RARE_WARMUP: u64 = 32;
/// The lines before a line that decide whether it is an outlier.
const RECENT_LINES: u32 = 16;
/// At most this many of those may have had a new template: the line is new
/// among lines that were not.
const RECENT_NEW_AT_MOST: u32 = 1;
/// A template seen this often in all is no longer rare: its outliers are
/// not shown.
pub(crate) const RARE_AT_MOST: u32 = 3;
/// Lines above an error-like line searched for its location (`x.f90:5:17:`,
/// `File "x.ml", line 2, …`), which starts its block.
const LOCATION_LOOKBACK: usize = 6;

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
    /// How often each template was seen.
    templates: TemplateTable,
    /// Template of the latest line.
    last_key: u64,
    /// Repeats of the latest line not yet counted in `templates`.
    pending_repeats: u64,
    /// One bit per recent line, the latest lowest: its template was new.
    novelty: u64,
    /// The whole output folded by template, while that stays small.
    fold: FoldView,
    windows: Windows,
    decoys: DecoyWatch,
    decoy_cost: usize,
    /// A blank line after an indented block, kept if the block goes on.
    held_blank: Option<OutputLine>,
    /// The previous line was not error-like, came with no window, and left
    /// no group open: an identical next line takes the short path.
    previous_plain: bool,
    /// How many lines at the back of `ring` hold the same text and stream
    /// (at least; at most [`MAX_BEFORE`]): once the ring is all one line, a
    /// repeat only renumbers its oldest slot instead of copying the text.
    same_at_back: usize,
    /// Tests switch the short path off to compare it with the full one.
    #[cfg(test)]
    repeat_path: bool,
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
            fold: FoldView::new(budget, config.max_line_chars),
            #[cfg(test)]
            repeat_path: true,
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
        MiddleWindow::better(kept, &self.matcher, dropped, rest)
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
        // A line identical to the previous one, which was plain (not
        // error-like, no group open), is plain too, and its heading check
        // and decoy bookkeeping would change nothing: only its number is
        // noted. Logs repeat lines a lot (progress, polling, `yes`), and
        // this path runs for each of them.
        #[cfg(test)]
        let repeat_path = self.repeat_path;
        #[cfg(not(test))]
        let repeat_path = true;
        if repeat_path
            && window.is_none()
            && self.previous_plain
            && self
                .ring
                .back()
                .is_some_and(|last| last.text == line.text && last.stream == line.stream)
        {
            if !self.fold.repeat() {
                self.fold.observe(line, self.last_key, false);
            }
            // Counted in the template table with the next distinct line.
            self.pending_repeats += 1;
            self.novelty <<= 1;
            self.remember_repeat(line);
            return;
        }
        let windowed = window.is_some();
        let salient = self.observe_new(line, window, may_hold_anchor);
        self.previous_plain = !salient && !windowed && self.open.is_none();
    }

    /// Classifies `line` and keeps it where it belongs; true when it is
    /// error-like.
    fn observe_new(
        &mut self,
        line: &OutputLine,
        window: Option<MiddleWindow>,
        may_hold_anchor: bool,
    ) -> bool {
        let mut found = self
            .matcher
            .find_with_hint(&line.text, may_hold_anchor)
            .map(|found| found.kind);
        if let Some(window) = window {
            found = found.or(Some(window.kind));
            self.windows.keep(line.number, window);
        }
        let key = template_key(&line.text);
        let repeats = std::mem::take(&mut self.pending_repeats);
        self.templates
            .add(self.last_key, u32::try_from(repeats).unwrap_or(u32::MAX));
        let seen_before = self.templates.observe(key);
        let recent_new = (self.novelty & ((1 << RECENT_LINES) - 1)).count_ones();
        self.novelty = (self.novelty << 1) | u64::from(seen_before == 0);
        self.last_key = key;
        self.fold.observe(line, key, found.is_some());
        // An outlier starts a group of its own; inside an open group it is
        // only context (the group's error-like lines decide its ranks).
        if found.is_none()
            && self.open.is_none()
            && seen_before == 0
            && line.number > RARE_WARMUP
            && recent_new <= RECENT_NEW_AT_MOST
            && !line.text.trim().is_empty()
        {
            found = Some(Kind::Rare);
        }
        // A real failure inside a group of decoys starts a group of its own:
        // a group is shown by the kind of its first error-like line.
        if found.is_some_and(|kind| kind != Kind::Rare)
            && self.open.is_some()
            && self.groups.last().is_some_and(|group| group.decoy)
            && !self.decoys.is_decoy(&line.text)
        {
            self.open = None;
            self.held_blank = None;
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
                self.remember(line, false);
                return false;
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
                self.remember(line, found.is_some());
                return found.is_some();
            }
            self.open = None;
            self.held_blank = None;
        }
        if let Some(kind) = found {
            self.start_group(line, kind);
        }
        self.remember(line, found.is_some());
        found.is_some()
    }

    fn extend_open(&mut self, line: &OutputLine, kind: Option<Kind>) {
        let cost_before = self.last_group_cost();
        if let Some(group) = self.groups.last_mut() {
            group.push(line, kind.is_some());
            match kind {
                Some(Kind::Rare) => group.rare_lines.push((line.number, self.last_key)),
                Some(_) => group.rare = false,
                None => {}
            }
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
        let rare = kind == Kind::Rare;
        let decoy = !rare && self.decoys.is_decoy(&line.text);
        let decoys_full =
            (decoy || rare) && self.decoy_cost * 100 >= self.cap * DECOY_SHARE_PERCENT;
        if self.groups_cost >= self.cap || decoys_full {
            // An outlier that does not fit is no error-like line omitted.
            if !rare {
                self.record_overflow(line);
            }
            return;
        }
        let context = kind.context();
        let kept_until = self.groups.last().map_or(0, Group::last_number);
        let mut group = Group {
            decoy,
            rare,
            ..Group::default()
        };
        if rare {
            group.rare_lines.push((line.number, self.last_key));
        }
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
        if !context.block_before
            && !location_line(&line.text)
            && let Some(distance) = self
                .ring
                .iter()
                .rev()
                .take(LOCATION_LOOKBACK)
                .position(|earlier| location_line(&earlier.text))
        {
            // A message whose location is on a line above it (gfortran's
            // `x.f90:5:17:`, the source line and the caret, then `Error:`;
            // OCaml's `File "x.ml", line 2, …:` then `Error: …`): the block
            // starts at the location.
            before = before.max(distance + 1);
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
        if decoy || rare {
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

    /// Notes `line` (error-like when `salient`) after it was handled.
    fn remember(&mut self, line: &OutputLine, salient: bool) {
        let salient = salient
            && !self
                .groups
                .last()
                .is_some_and(|group| group.is_rare_line(line.number));
        self.decoys.observe(&line.text, salient);
        self.remember_number(line);
    }

    /// [`SalientTracker::remember_number`] for `line`, whose text and
    /// stream are the previous line's: what holds that text already only
    /// takes the new numbers.
    fn remember_repeat(&mut self, line: &OutputLine) {
        let previous = self.ring.back().map(|last| last.number);
        if self.ring.len() == MAX_BEFORE && self.same_at_back >= MAX_BEFORE {
            if let Some(mut slot) = self.ring.pop_front() {
                renumber(&mut slot, line);
                self.ring.push_back(slot);
            }
            // The heading is this text too when the previous line set it
            // (the same text qualifies the same way).
            if let Some(heading) = &mut self.heading
                && Some(heading.number) == previous
            {
                renumber(heading, line);
            }
            return;
        }
        let same = self.same_at_back;
        self.remember_number(line);
        self.same_at_back = (same + 1).min(MAX_BEFORE);
    }

    /// The look-back ring and the heading take `line`, whose text and
    /// class may equal the previous line's, but whose number does not.
    fn remember_number(&mut self, line: &OutputLine) {
        self.same_at_back = 1;
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

    /// The kept groups, in output order.
    pub(crate) fn groups(&self) -> &[Group] {
        &self.groups
    }

    pub(crate) fn overflow(&self) -> &Overflow {
        &self.overflow
    }

    /// The whole output folded by template (dropped when too large).
    pub(crate) fn fold(&self) -> &FoldView {
        &self.fold
    }

    /// Whether `group` is worth showing: a real failure, or an outlier whose
    /// template stayed rare to the end of the output.
    pub(crate) fn is_worth_showing(&self, group: &Group) -> bool {
        let count = |key: u64| {
            let pending = if key == self.last_key {
                self.pending_repeats
            } else {
                0
            };
            u64::from(self.templates.count(key)) + pending
        };
        !group.rare
            || group
                .rare_lines
                .iter()
                .any(|(_, key)| count(*key) <= u64::from(RARE_AT_MOST))
    }

    pub(crate) fn matcher(&self) -> &Matcher {
        &self.matcher
    }

    /// The middle window kept for line `number`, if any.
    pub(crate) fn window_of(&self, number: u64) -> Option<(Kind, &str)> {
        self.windows.of(number)
    }

    /// Number of error-like lines seen.
    pub fn salient_lines(&self) -> u64 {
        let kept: u64 = self
            .groups
            .iter()
            .flat_map(|group| {
                group
                    .entries
                    .iter()
                    .filter(|entry| entry.salient && !group.is_rare_line(entry.line.number))
            })
            .map(|entry| entry.count)
            .sum();
        kept + self.overflow.count
    }
}

/// Gives `slot`, which holds `line`'s text already, `line`'s numbers.
fn renumber(slot: &mut OutputLine, line: &OutputLine) {
    slot.number = line.number;
    slot.log_line = line.log_line;
    slot.original_chars = line.original_chars;
}

#[cfg(test)]
#[path = "tracker_tests.rs"]
mod tests;
