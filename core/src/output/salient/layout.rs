//! The error-aware layout: the whole output folded by template when that
//! fits; else the plain layout's head (30%) and tail (70%), shrunk to make
//! room for the error-like lines (and outliers) of the omitted middle, each
//! group under a marker that says where it is in the log; repeated lines
//! collapsed; long lines abbreviated around their error.

use std::fmt::Write as _;

use crate::config::OutputConfig;
use crate::output::buffer::OutputBuffer;
use crate::output::chunk::Stream;
use crate::output::lines::HEADER_COST;

use super::choose::{choose_parts, omitted_errors};
use super::fold::Shown;
use super::groups::Group;
use super::groups::repeat_suffix;
use super::long_lines::display_long_line;
use super::markers::{group_marker, tail_marker};
use super::tracker::SalientTracker;
use super::units::{Unit, collapse, header_cost, jump_marker};

/// The plain 30/70 split of `budget` on collapsed units: whole units from the
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

/// The whole output folded by template, when that fits `budget`: every
/// distinct line shown, long runs of one template once with a count.
fn folded_whole(writer: &mut Writer<'_>, budget: usize) -> bool {
    let Some(shown) = writer.tracker.fold().layout(budget, writer.config) else {
        return false;
    };
    for item in &shown {
        match item {
            Shown::Line(unit) => writer.unit(unit),
            Shown::Fold(marker) => writer.marker(marker),
        }
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
    if folded_whole(&mut writer, budget) {
        return writer.text;
    }
    let head_units = collapse(buffer.head().iter());
    let tail_units = collapse(buffer.tail());
    // The plain layout shows at least the first and the last line, however long:
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
    let groups: Vec<&Group> = tracker
        .groups()
        .iter()
        .filter(|group| tracker.is_worth_showing(group))
        .collect();
    let (mut parts, used) = choose_parts(
        &groups,
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
    // A part keeps its error-like lines; one whose error-like line the head
    // now shows keeps the rest of its block when that follows the head.
    parts.retain(|part| {
        part.units.iter().any(|unit| unit.salient)
            || part
                .units
                .first()
                .is_some_and(|unit| unit.first == head_end + 1)
    });
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
        writer.marker(&group_marker(
            gap,
            first.location(),
            last.location(),
            part.rare,
        ));
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
