//! The error-aware layout: seed 001's head and tail, shrunk to make room for
//! the error-like lines of the omitted middle, each group under a marker that
//! says where it is in the log; repeated lines collapsed; long lines
//! abbreviated around their error.

use std::borrow::Cow;
use std::fmt::Write as _;

use crate::config::OutputConfig;
use crate::exec::Stream;
use crate::output::format::{display_line, omitted_marker};
use crate::output::{OutputBuffer, OutputLine};

use super::SalientTracker;
use super::patterns::Matcher;
use super::tracker::{Entry, Group, entry_cost, repeat_suffix};

/// `stdout:\n` or `stderr:\n`, where the stream changes.
use crate::output::format::HEADER_COST;
const ELLIPSIS: &str = "...";

/// One shown line standing for `count` identical consecutive lines, the
/// first of which is line `first`.
#[derive(Debug, Clone, Copy)]
struct Unit<'a> {
    line: &'a OutputLine,
    first: u64,
    count: u64,
    salient: bool,
}

impl Unit<'_> {
    fn last(&self) -> u64 {
        self.first + self.count - 1
    }

    fn cost(&self, config: &OutputConfig) -> usize {
        entry_cost(self.line, self.count, config.max_line_chars)
    }

    /// Where this unit starts: its log line when logged, else its number.
    fn location(&self) -> Location {
        match self.line.log_line {
            Some(log_line) => Location::Log(log_line + (self.first - self.line.number)),
            None => Location::Output(self.first),
        }
    }

    /// The part of this unit strictly between lines `after` and `before`.
    fn restrict(self, after: u64, before: u64) -> Option<Self> {
        let first = self.first.max(after.saturating_add(1));
        let last = self.last().min(before.saturating_sub(1));
        (first <= last).then(|| Unit {
            first,
            count: last - first + 1,
            ..self
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Location {
    Log(u64),
    Output(u64),
}

impl Location {
    fn line(self) -> u64 {
        match self {
            Self::Log(line) | Self::Output(line) => line,
        }
    }

    fn of_what(self) -> &'static str {
        match self {
            Self::Log(_) => "of the log",
            Self::Output(_) => "of the output",
        }
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
fn units_cost(units: &[Unit<'_>], config: &OutputConfig) -> usize {
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

/// The marker before a group of error-like lines.
fn group_marker(gap: u64, first: Location, last: Location) -> String {
    let span = if first.line() == last.line() {
        format!("line {} {}", first.line(), first.of_what())
    } else {
        format!("lines {}-{} {}", first.line(), last.line(), first.of_what())
    };
    if gap == 0 {
        format!("... (error-like lines follow, {span}) ...")
    } else {
        let noun = if gap == 1 { "line" } else { "lines" };
        format!("... ({gap} {noun} omitted; error-like lines follow, {span}) ...")
    }
}

/// The marker before the tail, with the error-like lines that did not fit.
fn tail_marker(gap: u64, omitted: u64, first_omitted: Option<Location>) -> Option<String> {
    let note = first_omitted.filter(|_| omitted > 0).map(|first| {
        let noun = if omitted == 1 { "line" } else { "lines" };
        format!(
            "{omitted} more error-like {noun}, the first at line {} {}",
            first.line(),
            first.of_what()
        )
    });
    let noun = if gap == 1 { "line" } else { "lines" };
    match (gap, note) {
        (0, None) => None,
        (0, Some(note)) => Some(format!("... ({note}, were omitted) ...")),
        (_, None) => Some(format!("... ({gap} {noun} omitted) ...")),
        (_, Some(note)) => Some(format!(
            "... ({gap} {noun} omitted; they include {note}) ..."
        )),
    }
}

/// The char index `index` of `text` as a byte offset.
fn byte_at(text: &str, index: usize) -> usize {
    text.char_indices()
        .nth(index)
        .map_or(text.len(), |(byte, _)| byte)
}

/// A long line whose error-like token sits in its middle: its start, a window
/// around the token and its end, within `max_chars`. `None` when the plain
/// first/last abbreviation already shows the token.
fn window_around_token(line: &OutputLine, max_chars: usize, matcher: &Matcher) -> Option<String> {
    const MIN_LINE_CHARS: usize = 60;
    if line.original_chars <= max_chars || max_chars < MIN_LINE_CHARS {
        return None;
    }
    let text = &line.text;
    let found = matcher.find(text)?;
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

/// A long line as shown in error-aware mode: around its error-like token
/// when that sits in its middle, else seed 001's first and last chars.
pub(crate) fn display_long_line<'a>(
    line: &'a OutputLine,
    config: &OutputConfig,
    tracker: &SalientTracker,
) -> Cow<'a, str> {
    let matcher = tracker.matcher();
    if let Some(window) = window_around_token(line, config.max_line_chars, matcher) {
        return Cow::Owned(window);
    }
    // The token was in the part of a huge line the buffer did not keep.
    if line.is_clipped()
        && matcher.find(&line.text).is_none()
        && let Some(window) = tracker.window_of(line.number)
    {
        return Cow::Owned(with_middle_window(line, config.max_line_chars, window));
    }
    display_line(line, config)
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

/// A group of error-like lines chosen for the middle.
struct Part<'a> {
    units: Vec<Unit<'a>>,
}

fn entry_unit(entry: &Entry) -> Unit<'_> {
    Unit {
        line: &entry.line,
        first: entry.line.number,
        count: entry.count,
        salient: entry.salient,
    }
}

/// The chars a part costs besides its lines: its marker (with a gap as large
/// as it can be) and a stream header.
fn part_overhead(units: &[Unit<'_>], total_lines: u64) -> usize {
    match (units.first(), units.last()) {
        (Some(first), Some(last)) => {
            group_marker(total_lines, first.location(), last.location()).len() + 1 + HEADER_COST
        }
        _ => 0,
    }
}

/// The first groups whose lines between `head_end` and `tail_start` fit
/// `budget` (markers included), and what they cost. A group too big for
/// what is left loses its context before, then lines from its end; later
/// groups do not jump ahead of it, because the root cause usually comes
/// first.
fn choose_parts<'a>(
    groups: &'a [Group],
    (head_end, tail_start): (u64, u64),
    budget: usize,
    total_lines: u64,
    config: &OutputConfig,
) -> (Vec<Part<'a>>, usize) {
    let cost = |units: &[Unit<'_>]| units_cost(units, config) + part_overhead(units, total_lines);
    let mut parts = Vec::new();
    let mut used = 0;
    for group in groups {
        let units: Vec<Unit<'_>> = group
            .entries
            .iter()
            .filter_map(|entry| entry_unit(entry).restrict(head_end, tail_start))
            .collect();
        if !units.iter().any(|unit| unit.salient) {
            continue;
        }
        if used + cost(&units) <= budget {
            used += cost(&units);
            parts.push(Part { units });
            continue;
        }
        let start = units.iter().position(|unit| unit.salient).unwrap_or(0);
        let mut trimmed: Vec<Unit<'_>> = Vec::new();
        for unit in &units[start..] {
            trimmed.push(*unit);
            if used + cost(&trimmed) > budget {
                trimmed.pop();
                break;
            }
        }
        if !trimmed.is_empty() {
            used += cost(&trimmed);
            parts.push(Part { units: trimmed });
        }
        break;
    }
    (parts, used)
}

/// How many error-like lines between `head_end` and `tail_start` are not
/// shown, and where the first of them is.
fn omitted_errors(
    tracker: &SalientTracker,
    parts: &[Part<'_>],
    (head_end, tail_start): (u64, u64),
) -> (u64, Option<Location>) {
    let shown: Vec<Unit<'_>> = parts.iter().flat_map(|part| part.units.clone()).collect();
    let covering = |number: u64| {
        shown
            .iter()
            .find(|unit| unit.first <= number && number <= unit.last())
    };
    let mut omitted = 0;
    let mut first_omitted = None;
    let salient = tracker
        .groups()
        .iter()
        .flat_map(|group| &group.entries)
        .filter(|entry| entry.salient);
    for entry in salient {
        let Some(unit) = entry_unit(entry).restrict(head_end, tail_start) else {
            continue;
        };
        let covered: u64 = shown
            .iter()
            .filter_map(|shown| shown.restrict(unit.first - 1, unit.last() + 1))
            .map(|overlap| overlap.count)
            .sum();
        if covered >= unit.count {
            continue;
        }
        omitted += unit.count - covered;
        if first_omitted.is_none() {
            let mut number = unit.first;
            while let Some(shown) = covering(number) {
                number = shown.last() + 1;
            }
            first_omitted = unit
                .restrict(number - 1, u64::MAX)
                .map(|rest| rest.location());
        }
    }
    // Those that came after the groups were full, less those in the tail.
    let overflow = tracker.overflow();
    let in_tail = overflow
        .recent
        .iter()
        .filter(|number| **number >= tail_start)
        .count() as u64;
    let overflow_omitted = overflow.count.saturating_sub(in_tail);
    if overflow_omitted > 0 {
        omitted += overflow_omitted;
        if first_omitted.is_none()
            && let Some((number, log_line)) = overflow.first
        {
            first_omitted = Some(log_line.map_or(Location::Output(number), Location::Log));
        }
    }
    (omitted, first_omitted)
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn markers_name_the_log_lines_and_the_omitted_errors() {
        assert_eq!(
            group_marker(1180, Location::Log(1203), Location::Log(1210)),
            "... (1180 lines omitted; error-like lines follow, lines 1203-1210 of the log) ..."
        );
        assert_eq!(
            group_marker(0, Location::Output(7), Location::Output(7)),
            "... (error-like lines follow, line 7 of the output) ..."
        );
        assert_eq!(
            tail_marker(523, 12, Some(Location::Log(4410))).as_deref(),
            Some(
                "... (523 lines omitted; they include 12 more error-like lines, the first at line 4410 of the log) ..."
            )
        );
        assert_eq!(
            tail_marker(1, 0, None).as_deref(),
            Some("... (1 line omitted) ...")
        );
        assert_eq!(tail_marker(0, 0, None), None);
    }
}
