//! The error-aware layout: seed 001's head and tail, shrunk to make room for
//! the error-like lines of the omitted middle, each group under a marker that
//! says where it is in the log; repeated lines collapsed; long lines
//! abbreviated around their error.

use std::fmt::Write as _;

use crate::config::OutputConfig;
use crate::exec::Stream;
use crate::output::lines::{HEADER_COST, omitted_marker};
use crate::output::{OutputBuffer, OutputLine};

use super::SalientTracker;
use super::choose::{choose_parts, entry_unit, omitted_errors};
use super::long_lines::display_long_line;
use super::markers::{Location, group_marker, tail_marker};
use super::tracker::{entry_cost, repeat_suffix};

/// One shown line standing for `count` identical consecutive lines, the
/// first of which is line `first`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Unit<'a> {
    pub line: &'a OutputLine,
    pub first: u64,
    pub count: u64,
    pub salient: bool,
}

impl Unit<'_> {
    pub(super) fn last(&self) -> u64 {
        self.first + self.count - 1
    }

    fn cost(&self, config: &OutputConfig) -> usize {
        entry_cost(self.line, self.count, config.max_line_chars)
    }

    /// Where this unit starts: its log line when logged, else its number.
    pub(super) fn location(&self) -> Location {
        match self.line.log_line {
            Some(log_line) => Location::Log(log_line + (self.first - self.line.number)),
            None => Location::Output(self.first),
        }
    }

    /// The part of this unit strictly between lines `after` and `before`.
    pub(super) fn restrict(self, after: u64, before: u64) -> Option<Self> {
        let first = self.first.max(after.saturating_add(1));
        let last = self.last().min(before.saturating_sub(1));
        (first <= last).then(|| Unit {
            first,
            count: last - first + 1,
            ..self
        })
    }
}

/// Consecutive identical lines become one unit.
fn collapse<'a>(lines: impl Iterator<Item = &'a OutputLine>) -> Vec<Unit<'a>> {
    let mut units: Vec<Unit<'a>> = Vec::new();
    for line in lines {
        if let Some(last) = units.last_mut()
            && line.number == last.last() + 1
            && line.stream == last.line.stream
            && line.original_chars == last.line.original_chars
            && line.text == last.line.text
        {
            last.count += 1;
            continue;
        }
        units.push(Unit {
            line,
            first: line.number,
            count: 1,
            salient: false,
        });
    }
    units
}

fn header_cost(previous: Option<Stream>, stream: Stream) -> usize {
    if previous.is_some_and(|previous| previous != stream) {
        HEADER_COST
    } else {
        0
    }
}

/// Cost of a run of units, with a header where the stream changes (the
/// first header is fixed overhead).
pub(super) fn units_cost(units: &[Unit<'_>], config: &OutputConfig) -> usize {
    let mut previous: Option<&Unit<'_>> = None;
    units
        .iter()
        .map(|unit| {
            let mut cost = unit.cost(config);
            if let Some(previous) = previous {
                cost += header_cost(Some(previous.line.stream), unit.line.stream);
                cost += jump_marker(previous, unit).map_or(0, |marker| marker.len() + 1);
            }
            previous = Some(unit);
            cost
        })
        .sum()
}

/// The marker between two units of a group that are not adjacent (a heading
/// and the error under it).
fn jump_marker(previous: &Unit<'_>, next: &Unit<'_>) -> Option<String> {
    let gap = next.first.saturating_sub(previous.last() + 1);
    (gap > 0).then(|| omitted_marker(gap))
}

/// Seed 001's split of `budget` on collapsed units: whole units from the
/// start within the head share, from the end within what the head left; at
/// least one each.
fn split<'a>(
    head_units: &[Unit<'a>],
    tail_units: &[Unit<'a>],
    config: &OutputConfig,
    budget: usize,
) -> (Vec<Unit<'a>>, Vec<Unit<'a>>) {
    let head_budget = budget * config.head_percent.min(100) / 100;
    let mut head = Vec::new();
    let mut used = 0;
    let mut previous = None;
    for unit in head_units {
        let cost = unit.cost(config) + header_cost(previous, unit.line.stream);
        if !head.is_empty() && used + cost > head_budget {
            break;
        }
        used += cost;
        previous = Some(unit.line.stream);
        head.push(*unit);
    }
    let head_end = head.last().map_or(0, Unit::last);
    // The tail gets the rest: less than its share when the first line alone
    // is over the head's, so the whole stays within the budget.
    let tail_budget = budget.saturating_sub(used);
    let mut tail = Vec::new();
    let mut used = 0;
    let mut next = None;
    for unit in tail_units.iter().rev() {
        let Some(unit) = unit.restrict(head_end, u64::MAX) else {
            break;
        };
        let cost = unit.cost(config) + header_cost(next, unit.line.stream);
        if !tail.is_empty() && used + cost > tail_budget {
            break;
        }
        used += cost;
        next = Some(unit.line.stream);
        tail.push(unit);
    }
    tail.reverse();
    (head, tail)
}

/// Writes units with a header where the stream changes.
struct Writer<'c> {
    text: String,
    stream: Option<Stream>,
    config: &'c OutputConfig,
    tracker: &'c SalientTracker,
}

impl Writer<'_> {
    fn unit(&mut self, unit: &Unit<'_>) {
        if self.stream != Some(unit.line.stream) {
            let _ = writeln!(self.text, "{}:", unit.line.stream);
            self.stream = Some(unit.line.stream);
        }
        let shown = display_long_line(unit.line, self.config, self.tracker);
        self.text.push_str(&shown);
        if unit.count > 1 {
            self.text.push_str(&repeat_suffix(unit.count));
        }
        self.text.push('\n');
    }

    fn marker(&mut self, marker: &str) {
        self.text.push_str(marker);
        self.text.push('\n');
    }
}

/// The whole output as runs of identical lines, when that fits `budget`.
fn collapsed_whole(writer: &mut Writer<'_>, budget: usize) -> bool {
    let Some(runs) = writer.tracker.runs() else {
        return false;
    };
    let units: Vec<Unit<'_>> = runs.iter().map(entry_unit).collect();
    if units_cost(&units, writer.config) > budget {
        return false;
    }
    for unit in &units {
        writer.unit(unit);
    }
    true
}

/// Error-aware layout of an over-budget buffer (see the module docs).
pub(crate) fn format_error_aware(
    buffer: &OutputBuffer,
    config: &OutputConfig,
    budget: usize,
) -> String {
    let tracker = buffer.salient();
    let mut writer = Writer {
        text: String::new(),
        stream: None,
        config,
        tracker,
    };
    if collapsed_whole(&mut writer, budget) {
        return writer.text;
    }
    let head_units = collapse(buffer.head().iter());
    let tail_units = collapse(buffer.tail());
    // Seed 001 shows at least the first and the last line, however long:
    // the error-like lines only get what those leave.
    let floor = [head_units.first(), tail_units.last()]
        .into_iter()
        .flatten()
        .map(|unit| unit.cost(config) + HEADER_COST)
        .sum::<usize>();
    let salient_budget =
        (budget * config.salient_percent.min(100) / 100).min(budget.saturating_sub(floor));

    // Pass 1: the middle left by a head and tail that gave up the whole
    // salient share; fill the share with the first groups that fit.
    let (head, tail) = split(&head_units, &tail_units, config, budget - salient_budget);
    let middle = (
        head.last().map_or(0, Unit::last),
        tail.first().map_or(u64::MAX, |unit| unit.first),
    );
    let (mut parts, used) = choose_parts(
        tracker.groups(),
        middle,
        salient_budget,
        buffer.total_lines(),
        config,
    );

    // Pass 2: head and tail take back what the groups did not use; lines
    // they now show leave the groups.
    let (head, tail) = split(&head_units, &tail_units, config, budget - used);
    let head_end = head.last().map_or(0, Unit::last);
    let tail_start = tail
        .first()
        .map_or(buffer.total_lines() + 1, |unit| unit.first);
    for part in &mut parts {
        part.units = part
            .units
            .iter()
            .filter_map(|unit| unit.restrict(head_end, tail_start))
            .collect();
    }
    parts.retain(|part| part.units.iter().any(|unit| unit.salient));
    let (omitted, first_omitted) = omitted_errors(tracker, &parts, (head_end, tail_start));

    for unit in &head {
        writer.unit(unit);
    }
    let mut previous_end = head_end;
    for part in &parts {
        let (Some(first), Some(last)) = (part.units.first(), part.units.last()) else {
            continue;
        };
        let gap = first.first - previous_end - 1;
        writer.marker(&group_marker(gap, first.location(), last.location()));
        let mut previous: Option<&Unit<'_>> = None;
        for unit in &part.units {
            if let Some(marker) = previous.and_then(|previous| jump_marker(previous, unit)) {
                writer.marker(&marker);
            }
            writer.unit(unit);
            previous = Some(unit);
        }
        previous_end = last.last();
    }
    let gap = tail_start.saturating_sub(previous_end + 1);
    if let Some(marker) = tail_marker(gap, omitted, first_omitted) {
        writer.marker(&marker);
    }
    for unit in &tail {
        writer.unit(unit);
    }
    writer.text
}
