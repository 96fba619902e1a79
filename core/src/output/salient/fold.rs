//! The folded view: the whole output as runs of lines of one template (or
//! of a few templates that take turns, like apt's `Selecting …`,
//! `Preparing …`, `Unpacking …`), each run keeping its first and last lines
//! and the first line of each of its templates. When the output is over the
//! budget but its folded form fits, every distinct line is shown and each
//! long run is shown once with a count, e.g. `... (like "checked
//! src/module_N.py (N ms)", lines 13-1460 of the log: 1,448 lines omitted)
//! ...`, so nothing distinct is dropped.
//!
//! Bounded: the view keeps at most [`VIEW_CAP_BUDGETS`] budgets of display
//! cost. Past it, the lines kept at each end of a run halve (down to one);
//! past it with one line each end, the view is dropped and the layout falls
//! back to the head, the chosen middle and the tail.

use std::collections::VecDeque;

use crate::config::OutputConfig;
use crate::output::lines::OutputLine;

use super::groups::{Entry, copy_line, entry_cost};
use super::templates::template_display;
use super::units::{Unit, entry_unit, header_cost};

/// The view's cap, in budgets of display cost.
const VIEW_CAP_BUDGETS: usize = 3;
/// Lines kept at each end of a run at first.
const FIRST_EDGE: usize = 16;
/// The most templates one run folds together.
const MAX_RUN_KEYS: usize = 8;
/// Runs looked back at for a template that takes turns with others.
const LOOKBACK_RUNS: usize = 8;
/// What a run costs besides its lines, in the cap (its fold marker, on
/// average): bounds the number of runs kept.
const RUN_OVERHEAD: usize = 24;
/// Templates a fold marker names.
const MARKER_TEMPLATES: usize = 2;
/// A run of one template this short may start templates taking turns; a
/// longer one is a run of its own, and a line unlike it after it is an
/// outlier, not a turn.
const MAX_TURN_LINES: u64 = 8;

/// A kept line (or run of identical lines) with its template.
#[derive(Debug, Clone)]
struct Kept {
    key: u64,
    entry: Entry,
}

#[derive(Debug, Clone)]
struct Run {
    /// Templates in this run and their lines.
    keys: Vec<(u64, u64)>,
    /// The first lines.
    head: Vec<Kept>,
    /// The first line of each template whose first line is not in `head`.
    examples: Vec<Kept>,
    /// The latest lines after `head`.
    tail: VecDeque<Kept>,
    salient: bool,
}

impl Run {
    fn has_key(&self, key: u64) -> bool {
        self.keys.iter().any(|(known, _)| *known == key)
    }

    fn count_key(&mut self, key: u64, lines: u64) {
        match self.keys.iter_mut().find(|(known, _)| *known == key) {
            Some((_, count)) => *count += lines,
            None => self.keys.push((key, lines)),
        }
    }

    fn exemplified(&self, key: u64) -> bool {
        self.head
            .iter()
            .chain(&self.examples)
            .any(|kept| kept.key == key)
    }

    fn kept(&self) -> impl Iterator<Item = &Kept> {
        self.head.iter().chain(&self.examples).chain(&self.tail)
    }
}

/// What the folded layout shows: a line (or identical lines), or a fold.
pub(super) enum Shown<'a> {
    Line(Unit<'a>),
    Fold(String),
}

/// See the module docs.
#[derive(Debug, Default, Clone)]
pub(crate) struct FoldView {
    runs: Vec<Run>,
    /// Lines kept at each end of a run.
    edge: usize,
    /// Display cost of the kept lines, plus [`RUN_OVERHEAD`] per run.
    cost: usize,
    cap: usize,
    max_line_chars: usize,
    /// Over its cap with one line each end: the view keeps nothing more.
    dropped: bool,
    /// Lines that repeat the latest one, not yet counted in its entry: the
    /// short path of a repeated line only adds one here.
    pending: u64,
}

impl FoldView {
    pub(crate) fn new(budget: usize, max_line_chars: usize) -> Self {
        Self {
            runs: Vec::new(),
            edge: FIRST_EDGE,
            cost: 0,
            cap: budget.saturating_mul(VIEW_CAP_BUDGETS),
            max_line_chars,
            dropped: false,
            pending: 0,
        }
    }

    fn kept_cost(&self, kept: &Kept) -> usize {
        entry_cost(&kept.entry.line, kept.entry.count, self.max_line_chars)
    }

    /// Takes the next line, a repeat of the one before (same text and
    /// stream): counted now, added to the latest entry with the next line.
    /// False when the view has no line yet (the caller then observes it in
    /// full).
    pub(crate) fn repeat(&mut self) -> bool {
        if self.dropped {
            return true;
        }
        if self.runs.is_empty() {
            return false;
        }
        self.pending += 1;
        true
    }

    /// The latest entry: where pending repeats go.
    fn latest_mut(&mut self) -> Option<&mut Kept> {
        let run = self.runs.last_mut()?;
        run.tail.back_mut().or_else(|| run.head.last_mut())
    }

    /// Adds the pending repeats to the latest entry.
    fn settle(&mut self) {
        let pending = std::mem::take(&mut self.pending);
        if pending == 0 {
            return;
        }
        let max_line_chars = self.max_line_chars;
        let Some(latest) = self.latest_mut() else {
            return;
        };
        let before = entry_cost(&latest.entry.line, latest.entry.count, max_line_chars);
        latest.entry.count += pending;
        let after = entry_cost(&latest.entry.line, latest.entry.count, max_line_chars);
        let key = latest.key;
        if let Some(run) = self.runs.last_mut() {
            run.count_key(key, pending);
        }
        self.cost += after - before;
    }

    /// Takes the next line, of template `key`; `salient` lines never fold
    /// with plain ones.
    pub(crate) fn observe(&mut self, line: &OutputLine, key: u64, salient: bool) {
        if self.dropped {
            return;
        }
        self.settle();
        // Lines of one template fold whichever stream they came on (a
        // progress line on stderr between results on stdout).
        let joins = |run: &Run| run.salient == salient;
        let current = self
            .runs
            .last()
            .is_some_and(|run| joins(run) && run.has_key(key));
        if !current {
            let merge_from = (!salient).then(|| self.turn_taking_start(key)).flatten();
            if let Some(start) = merge_from {
                self.merge_from(start);
            } else {
                self.runs.push(Run {
                    keys: Vec::new(),
                    head: Vec::new(),
                    examples: Vec::new(),
                    tail: VecDeque::new(),
                    salient,
                });
                self.cost += RUN_OVERHEAD;
            }
        }
        self.push(line, key, salient);
        if self.cost > self.cap {
            self.shrink();
        }
    }

    /// Where a run of templates taking turns starts, when `key` was a
    /// template of one of the last runs and all from there are plain lines
    /// with few templates in all.
    fn turn_taking_start(&self, key: u64) -> Option<usize> {
        let last = self.runs.len().checked_sub(1)?;
        let earliest = last.saturating_sub(LOOKBACK_RUNS);
        let start = (earliest..last)
            .rev()
            .find(|index| self.runs[*index].has_key(key))?;
        let runs = &self.runs[start..];
        let first = &runs[0];
        let lines: u64 = first.keys.iter().map(|(_, count)| count).sum();
        if first.keys.len() == 1 && lines > MAX_TURN_LINES {
            return None;
        }
        let mut keys: Vec<u64> = Vec::new();
        for run in runs {
            if run.salient {
                return None;
            }
            for (key, _) in &run.keys {
                if !keys.contains(key) {
                    keys.push(*key);
                }
            }
        }
        (keys.len() <= MAX_RUN_KEYS).then_some(start)
    }

    /// Joins the runs from `start` to the last into one.
    fn merge_from(&mut self, start: usize) {
        let later: Vec<Run> = self.runs.drain(start + 1..).collect();
        self.cost -= RUN_OVERHEAD * later.len();
        for run in later {
            for (key, count) in &run.keys {
                self.runs[start].count_key(*key, *count);
            }
            let Run {
                head,
                examples,
                tail,
                ..
            } = run;
            let mut entries: Vec<Kept> = head.into_iter().chain(examples).chain(tail).collect();
            entries.sort_by_key(|kept| kept.entry.line.number);
            for kept in entries {
                // Already counted in the run's keys and in the view's cost.
                let cost = self.kept_cost(&kept);
                self.cost -= cost;
                self.place(start, kept);
            }
        }
    }

    /// Adds a new line's entry to the last run; a line identical to the
    /// latest one joins its entry.
    fn push(&mut self, line: &OutputLine, key: u64, salient: bool) {
        let last = self.runs.len() - 1;
        self.runs[last].count_key(key, 1);
        let max_line_chars = self.max_line_chars;
        let edge = self.edge;
        let run = &mut self.runs[last];
        let latest = run.tail.back_mut().or_else(|| run.head.last_mut());
        if let Some(latest) = latest
            && latest.key == key
            && latest.entry.absorb(line)
        {
            let count = latest.entry.count;
            let kept = &latest.entry.line;
            self.cost += entry_cost(kept, count, max_line_chars)
                - entry_cost(kept, count - 1, max_line_chars);
            return;
        }
        // The common case of a long run: the line goes to a full tail, whose
        // oldest entry makes room and lends its allocation (no allocation
        // per line).
        if run.tail.len() >= edge
            && run.exemplified(key)
            && let Some(mut slot) = run.tail.pop_front()
        {
            let dropped = entry_cost(&slot.entry.line, slot.entry.count, max_line_chars);
            copy_line(&mut slot.entry.line, line);
            slot.key = key;
            slot.entry.count = 1;
            slot.entry.salient = salient;
            self.cost = self.cost + entry_cost(line, 1, max_line_chars) - dropped;
            run.tail.push_back(slot);
            return;
        }
        let kept = Kept {
            key,
            entry: Entry {
                line: line.clone(),
                count: 1,
                salient,
            },
        };
        self.place(last, kept);
    }

    /// Puts an entry in run `index`: in its head while that has room, as an
    /// example when its template has none yet, else at the end of its tail.
    fn place(&mut self, index: usize, kept: Kept) {
        self.cost += self.kept_cost(&kept);
        let edge = self.edge;
        let run = &mut self.runs[index];
        if run.tail.is_empty() && run.head.len() < edge {
            run.head.push(kept);
            return;
        }
        if !run.exemplified(kept.key) {
            run.examples.push(kept);
            return;
        }
        run.tail.push_back(kept);
        if run.tail.len() > edge
            && let Some(dropped) = run.tail.pop_front()
        {
            self.cost -= entry_cost(
                &dropped.entry.line,
                dropped.entry.count,
                self.max_line_chars,
            );
        }
    }

    /// Halves the lines kept at each end of every run, or drops the view
    /// when one each is already too much.
    fn shrink(&mut self) {
        while self.cost > self.cap {
            if self.edge == 1 {
                self.runs = Vec::new();
                self.cost = 0;
                self.dropped = true;
                return;
            }
            self.edge /= 2;
            let edge = self.edge;
            for run in &mut self.runs {
                let dropped: Vec<Kept> = run.head.drain(edge.min(run.head.len())..).collect();
                for kept in dropped {
                    if !run.exemplified(kept.key) {
                        run.examples.push(kept);
                    }
                }
                while run.tail.len() > edge {
                    run.tail.pop_front();
                }
            }
            self.cost = self.runs.len() * RUN_OVERHEAD
                + self
                    .runs
                    .iter()
                    .flat_map(Run::kept)
                    .map(|kept| self.kept_cost(kept))
                    .sum::<usize>();
        }
    }

    /// The view with its pending repeats settled, for comparing two.
    #[cfg(test)]
    pub(crate) fn settled(&self) -> Self {
        let mut copy = self.clone();
        copy.settle();
        copy
    }

    /// Whether the view was dropped (over its cap).
    pub(crate) fn is_dropped(&self) -> bool {
        self.dropped
    }

    /// The folded layout within `budget`: the most lines at each end of a
    /// run (the same number for every run, so the largest runs fold first)
    /// such that the whole fits. `None` when even one line at each end is
    /// over the budget.
    pub(super) fn layout(&self, budget: usize, config: &OutputConfig) -> Option<Vec<Shown<'_>>> {
        if self.is_dropped() || self.runs.is_empty() {
            return None;
        }

        let fits = |lines: usize| {
            let shown = self.shown(lines);
            (shown_cost(&shown, config) <= budget).then_some(shown)
        };
        let mut best = fits(1)?;
        let (mut low, mut high) = (1, self.edge);
        while low < high {
            let middle = (low + high).div_ceil(2);
            match fits(middle) {
                Some(shown) => {
                    best = shown;
                    low = middle;
                }
                None => high = middle - 1,
            }
        }
        Some(best)
    }

    /// Every run with `lines` lines at each end, its examples, and a fold
    /// marker for each stretch it does not show.
    fn shown(&self, lines: usize) -> Vec<Shown<'_>> {
        let mut shown = Vec::new();
        let last_run = self.runs.len() - 1;
        for (index, run) in self.runs.iter().enumerate() {
            // Repeats of the latest line not yet in its entry count here.
            let latest = (index == last_run)
                .then(|| run.tail.back().or_else(|| run.head.last()))
                .flatten()
                .filter(|_| self.pending > 0);
            let count_of = |kept: &Kept| {
                let extra = latest
                    .filter(|latest| std::ptr::eq(*latest, kept))
                    .map_or(0, |_| self.pending);
                kept.entry.count + extra
            };
            // Head and tail are the run's lines in order, less its middle.
            let ordered: Vec<&Kept> = run.head.iter().chain(&run.tail).collect();
            let mut chosen: Vec<&Kept> = if ordered.len() <= 2 * lines {
                ordered
            } else {
                let tail_from = ordered.len() - lines;
                ordered[..lines]
                    .iter()
                    .chain(&ordered[tail_from..])
                    .copied()
                    .collect()
            };
            chosen.extend(&run.examples);
            chosen.sort_by_key(|kept| kept.entry.line.number);
            let hidden_keys: Vec<&Kept> = run
                .keys
                .iter()
                .filter(|(key, count)| {
                    let pending = latest
                        .filter(|latest| latest.key == *key)
                        .map_or(0, |_| self.pending);
                    let shown: u64 = chosen
                        .iter()
                        .filter(|kept| kept.key == *key)
                        .map(|kept| count_of(kept))
                        .sum();
                    shown < *count + pending
                })
                .filter_map(|(key, _)| run.kept().find(|kept| kept.key == *key))
                .take(MARKER_TEMPLATES)
                .collect();
            let mut previous: Option<&Kept> = None;
            for kept in chosen {
                if let Some(previous) = previous {
                    let gap = kept
                        .entry
                        .line
                        .number
                        .saturating_sub(previous.entry.last_number() + 1);
                    if gap > 0 {
                        shown.push(Shown::Fold(fold_marker(gap, previous, kept, &hidden_keys)));
                    }
                }
                let mut unit = entry_unit(&kept.entry);
                unit.count = count_of(kept);
                shown.push(Shown::Line(unit));
                previous = Some(kept);
            }
        }
        shown
    }
}

/// What a layout costs: its lines, its markers, and a header where the
/// stream changes (the first is fixed overhead).
fn shown_cost(shown: &[Shown<'_>], config: &OutputConfig) -> usize {
    let mut stream = None;
    shown
        .iter()
        .map(|item| match item {
            Shown::Line(unit) => {
                let cost = unit.cost(config) + header_cost(stream, unit.line.stream);
                stream = Some(unit.line.stream);
                cost
            }
            Shown::Fold(marker) => marker.chars().count() + 1,
        })
        .sum()
}

/// `1,448`: counts people read at a glance.
fn with_separators(value: u64) -> String {
    let digits = value.to_string();
    let mut grouped = String::with_capacity(digits.len() + digits.len() / 3);
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    grouped
}

/// The marker of `gap` lines folded between `before` and `after`, naming the
/// templates of the run that have lines not shown and where the lines are:
/// `... (like "checked src/module_N.py (N ms)", lines 19-1466 of the log:
/// 1,448 lines omitted) ...` (the plain layout's marker, with what the lines
/// were like).
fn fold_marker(gap: u64, before: &Kept, after: &Kept, templates: &[&Kept]) -> String {
    let noun = if gap == 1 { "line" } else { "lines" };
    let like: Vec<String> = templates
        .iter()
        .map(|kept| format!("\"{}\"", template_display(&kept.entry.line.text)))
        .collect();
    let first = before.entry.last_number() + 1;
    let last = after.entry.line.number - 1;
    let span = match (before.entry.line.log_line, after.entry.line.log_line) {
        (Some(before_log), Some(after_log)) => {
            let first_log = before_log + before.entry.count;
            span_text(first_log, after_log - 1, "of the log")
        }
        _ => span_text(first, last, "of the output"),
    };
    let count = with_separators(gap);
    if like.is_empty() {
        format!("... ({span}: {count} {noun} omitted) ...")
    } else {
        format!(
            "... (like {}, {span}: {count} {noun} omitted) ...",
            like.join(" or ")
        )
    }
}

fn span_text(first: u64, last: u64, of_what: &str) -> String {
    if first >= last {
        format!("line {first} {of_what}")
    } else {
        format!("lines {first}-{last} {of_what}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::chunk::Stream;
    use crate::output::salient::templates::template_key;

    fn line(number: u64, text: &str) -> OutputLine {
        OutputLine {
            stream: Stream::Stdout,
            text: text.to_owned(),
            number,
            log_line: Some(number + 1),
            original_chars: text.chars().count(),
        }
    }

    fn view_of(lines: &[String], budget: usize) -> FoldView {
        let mut view = FoldView::new(budget, 800);
        for (index, text) in lines.iter().enumerate() {
            let number = index as u64 + 1;
            let repeat = index > 0 && lines[index - 1] == *text;
            if !(repeat && view.repeat()) {
                view.observe(
                    &line(number, text),
                    template_key(text),
                    text.starts_with("error"),
                );
            }
        }
        view
    }

    fn render(view: &FoldView, budget: usize) -> Vec<String> {
        let config = OutputConfig::default();
        view.layout(budget, &config)
            .expect("fits")
            .iter()
            .map(|item| match item {
                Shown::Line(unit) if unit.count > 1 => {
                    format!("{} (x{})", unit.line.text, unit.count)
                }
                Shown::Line(unit) => unit.line.text.clone(),
                Shown::Fold(marker) => marker.clone(),
            })
            .collect()
    }

    #[test]
    fn a_long_run_folds_and_the_outlier_stays() {
        let mut lines: Vec<String> = vec!["start".into()];
        lines.extend((1..=1500).map(|n| format!("checked src/module_{n:03}.py ({} ms)", n % 40)));
        lines.insert(700, "cycle 699: count=33 but the model says 32".into());
        lines.push("done".into());
        let view = view_of(&lines, 400);
        let shown = render(&view, 400);
        assert_eq!(
            shown,
            [
                "start",
                "checked src/module_001.py (1 ms)",
                "... (like \"checked src/module_N.py (N ms)\", lines 4-700 of the log: 697 lines omitted) ...",
                "checked src/module_699.py (19 ms)",
                "cycle 699: count=33 but the model says 32",
                "checked src/module_700.py (20 ms)",
                "... (like \"checked src/module_N.py (N ms)\", lines 704-1502 of the log: 799 lines omitted) ...",
                "checked src/module_1500.py (20 ms)",
                "done",
            ]
        );
    }

    #[test]
    fn templates_taking_turns_fold_together_and_each_keeps_an_example() {
        let mut lines = Vec::new();
        for n in 1..=300 {
            lines.push(format!("Selecting previously unselected package lib{n}."));
            lines.push(format!("Unpacking lib{n} (1.{n}) ..."));
        }
        lines.push("Setting up everything".into());
        let view = view_of(&lines, 400);
        assert_eq!(view.runs.len(), 2);
        assert_eq!(
            render(&view, 400),
            [
                "Selecting previously unselected package lib1.",
                "Unpacking lib1 (1.1) ...",
                "Selecting previously unselected package lib2.",
                "... (like \"Selecting previously unselected package libN.\" or \"Unpacking libN (N) ...\", \
                 lines 5-598 of the log: 594 lines omitted) ...",
                "Unpacking lib299 (1.299) ...",
                "Selecting previously unselected package lib300.",
                "Unpacking lib300 (1.300) ...",
                "Setting up everything",
            ]
        );
    }

    #[test]
    fn identical_lines_count_in_one_entry() {
        let mut lines = vec!["start".to_owned()];
        lines.extend(std::iter::repeat_n("waiting for lock".to_owned(), 100_000));
        lines.push("end".into());
        let view = view_of(&lines, 8000);
        assert_eq!(
            render(&view, 8000),
            ["start", "waiting for lock (x100000)", "end"]
        );
    }

    #[test]
    fn a_view_over_its_cap_is_dropped_and_memory_stays_bounded() {
        let lines: Vec<String> = (0..20_000)
            .map(|n| {
                format!(
                    "{} distinct words here",
                    "w".repeat(n % 97 + 1) + &"q".repeat(n / 97)
                )
            })
            .collect();
        let view = view_of(&lines, 400);
        assert!(view.is_dropped());
        assert!(view.runs.is_empty());
        assert!(view.layout(400, &OutputConfig::default()).is_none());
    }

    #[test]
    fn lines_of_one_template_fold_across_streams() {
        let mut view = FoldView::new(8000, 800);
        for number in 1..=300_u64 {
            let stream = if number % 50 == 0 {
                Stream::Stderr
            } else {
                Stream::Stdout
            };
            let text = format!("row {number} done");
            let mut line = line(number, &text);
            line.stream = stream;
            view.observe(&line, template_key(&text), false);
        }
        assert_eq!(view.runs.len(), 1);
        assert_eq!(view.runs[0].keys, [(template_key("row 1 done"), 300)]);
    }

    #[test]
    fn counts_have_thousands_separators() {
        assert_eq!(with_separators(7), "7");
        assert_eq!(with_separators(1448), "1,448");
        assert_eq!(with_separators(1_234_567), "1,234,567");
    }
}
