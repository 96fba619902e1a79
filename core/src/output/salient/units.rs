//! Units of the error-aware layout: one shown line standing for one line or
//! for a run of identical lines, with what it costs on display.

use crate::config::OutputConfig;
use crate::output::chunk::Stream;
use crate::output::lines::OutputLine;
use crate::output::lines::{HEADER_COST, omitted_marker};

use super::groups::{Entry, entry_cost};
use super::markers::Location;

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

    pub(super) fn cost(&self, config: &OutputConfig) -> usize {
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
pub(super) fn collapse<'a>(lines: impl Iterator<Item = &'a OutputLine>) -> Vec<Unit<'a>> {
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

pub(super) fn header_cost(previous: Option<Stream>, stream: Stream) -> usize {
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
pub(super) fn jump_marker(previous: &Unit<'_>, next: &Unit<'_>) -> Option<String> {
    let gap = next.first.saturating_sub(previous.last() + 1);
    (gap > 0).then(|| omitted_marker(gap))
}

pub(super) fn entry_unit(entry: &Entry) -> Unit<'_> {
    Unit {
        line: &entry.line,
        first: entry.line.number,
        count: entry.count,
        salient: entry.salient,
    }
}
