//! Shortening and formatting output for the model, the plain layout: stream
//! headers where the stream changes, long lines abbreviated, and when over
//! budget the head (30%) and the tail (70%) in whole lines with the gap
//! marked.

use std::borrow::Cow;
use std::fmt::Write as _;

use crate::config::{OutputConfig, Shortening};
use crate::output::buffer::OutputBuffer;
use crate::output::chunk::Stream;

/// What the gap marker looks like, for docs and descriptions.
pub const OMISSION_MARKER_EXAMPLE: &str = "... (N lines omitted) ...";
use crate::output::lines::HEADER_COST;
use crate::output::lines::{ELLIPSIS, OutputLine, display_line, line_cost, omitted_marker};

/// The output part of the model text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormattedOutput {
    /// The text for the model.
    pub text: String,
    /// Lines were omitted or abbreviated.
    pub truncated: bool,
}

/// Keeps a line of at most `max_chars` chars; a longer one becomes its first
/// and last `max_chars / 2 - 3` chars around `...` (397 + 397 for
/// 800). Works on chars, so it never splits a character.
pub fn abbreviate_line(line: &str, max_chars: usize) -> Cow<'_, str> {
    let count = line.chars().count();
    if count <= max_chars {
        return Cow::Borrowed(line);
    }
    let keep = (max_chars / 2).saturating_sub(3).max(1);
    let head_end = line
        .char_indices()
        .nth(keep)
        .map_or(line.len(), |(byte, _)| byte);
    let tail_start = line
        .char_indices()
        .nth(count - keep)
        .map_or(line.len(), |(byte, _)| byte);
    Cow::Owned(format!(
        "{}{ELLIPSIS}{}",
        &line[..head_end],
        &line[tail_start..]
    ))
}

/// Formats the buffer within the configured budget.
pub fn format_output(buffer: &OutputBuffer, config: &OutputConfig) -> FormattedOutput {
    format_output_with_budget(buffer, config, config.budget_chars())
}

/// Renders lines with a header where the stream changes.
#[derive(Default)]
pub(crate) struct Renderer {
    pub text: String,
    stream: Option<Stream>,
}

impl Renderer {
    pub fn line(&mut self, line: &OutputLine, config: &OutputConfig) {
        if self.stream != Some(line.stream) {
            let _ = writeln!(self.text, "{}:", line.stream);
            self.stream = Some(line.stream);
        }
        self.text.push_str(&display_line(line, config));
        self.text.push('\n');
    }

    /// A line as error-aware mode shows it (a long line keeps the window
    /// around its error).
    pub fn salient_line(
        &mut self,
        line: &OutputLine,
        config: &OutputConfig,
        tracker: &crate::output::salient::SalientTracker,
    ) {
        if self.stream != Some(line.stream) {
            let _ = writeln!(self.text, "{}:", line.stream);
            self.stream = Some(line.stream);
        }
        self.text
            .push_str(&crate::output::salient::display_line(line, config, tracker));
        self.text.push('\n');
    }

    pub fn marker(&mut self, marker: &str) {
        self.text.push_str(marker);
        self.text.push('\n');
    }
}

/// Formats the buffer within `budget` chars of output lines (markers and
/// headers are fixed overhead on top).
pub fn format_output_with_budget(
    buffer: &OutputBuffer,
    config: &OutputConfig,
    budget: usize,
) -> FormattedOutput {
    let mut renderer = Renderer::default();
    let fits = buffer.is_complete() && buffer.total_cost() <= budget as u64;
    if fits {
        let mut truncated = false;
        for line in buffer.head() {
            truncated |= line.original_chars > config.max_line_chars;
            if config.shortening == Shortening::ErrorAware {
                renderer.salient_line(line, config, buffer.salient());
            } else {
                renderer.line(line, config);
            }
        }
        return FormattedOutput {
            text: renderer.text,
            truncated,
        };
    }
    if config.shortening == Shortening::ErrorAware {
        return FormattedOutput {
            text: crate::output::salient::format_error_aware(buffer, config, budget),
            truncated: true,
        };
    }
    let (head, tail) = split_head_tail(buffer, config, budget);
    for line in &head {
        renderer.line(line, config);
    }
    let last_head = head.last().map_or(0, |line| line.number);
    let first_tail = tail
        .first()
        .map_or(buffer.total_lines() + 1, |line| line.number);
    let omitted = first_tail.saturating_sub(last_head + 1);
    if omitted > 0 {
        renderer.marker(&omitted_marker(omitted));
    }
    for line in &tail {
        renderer.line(line, config);
    }
    FormattedOutput {
        text: renderer.text,
        truncated: true,
    }
}

/// The plain split: whole lines from the start within the head share
/// (`head_percent` of `budget`), whole lines from the end within the rest;
/// at least one line each.
pub(crate) fn split_head_tail<'a>(
    buffer: &'a OutputBuffer,
    config: &OutputConfig,
    budget: usize,
) -> (Vec<&'a OutputLine>, Vec<&'a OutputLine>) {
    let head_budget = budget * config.head_percent.min(100) / 100;
    let tail_budget = budget - head_budget;
    let mut head: Vec<&OutputLine> = Vec::new();
    let mut used = 0;
    for line in buffer.head() {
        let header = head
            .last()
            .filter(|previous| previous.stream != line.stream)
            .map_or(0, |_| HEADER_COST);
        let cost = line_cost(line, config) + header;
        if !head.is_empty() && used + cost > head_budget {
            break;
        }
        used += cost;
        head.push(line);
    }
    let last_head = head.last().map_or(0, |line| line.number);
    let mut tail: Vec<&OutputLine> = Vec::new();
    let mut used = 0;
    for line in buffer.tail().rev() {
        let header = tail
            .last()
            .filter(|next| next.stream != line.stream)
            .map_or(0, |_| HEADER_COST);
        let cost = line_cost(line, config) + header;
        if line.number <= last_head || (!tail.is_empty() && used + cost > tail_budget) {
            break;
        }
        used += cost;
        tail.push(line);
    }
    tail.reverse();
    (head, tail)
}

/// `1.5 KiB`, `12.0 MiB`: sizes for people and models.
pub fn format_bytes(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain() -> OutputConfig {
        OutputConfig {
            shortening: Shortening::Plain,
            ..OutputConfig::default()
        }
    }

    fn buffer_of(text: &str, config: &OutputConfig) -> OutputBuffer {
        OutputBuffer::from_text(config, Stream::Stdout, text)
    }

    #[test]
    fn short_lines_are_kept_as_they_are() {
        assert_eq!(abbreviate_line("hello", 800), "hello");
        assert_eq!(abbreviate_line(&"a".repeat(800), 800), "a".repeat(800));
    }

    #[test]
    fn long_lines_keep_397_chars_each_side() {
        let line = format!("{}{}{}", "a".repeat(397), "b".repeat(10), "c".repeat(397));
        assert_eq!(
            abbreviate_line(&line, 800),
            format!("{}...{}", "a".repeat(397), "c".repeat(397))
        );
    }

    #[test]
    fn abbreviation_respects_char_boundaries() {
        let line = "é".repeat(1000);
        let short = abbreviate_line(&line, 800);
        assert_eq!(short.chars().count(), 397 * 2 + 3);
    }

    #[test]
    fn output_within_budget_is_shown_whole_with_stream_headers() {
        let config = plain();
        let mut buffer = OutputBuffer::new(&config);
        buffer.push(Stream::Stdout, "building\n");
        buffer.push(Stream::Stderr, "warning: x\n");
        buffer.push(Stream::Stdout, "done\n");
        buffer.finish();
        let formatted = format_output(&buffer, &config);
        assert_eq!(
            formatted.text,
            "stdout:\nbuilding\nstderr:\nwarning: x\nstdout:\ndone\n"
        );
        assert!(!formatted.truncated);
    }

    #[test]
    fn keeps_whole_lines_head_and_tail_when_over_budget() {
        let config = plain();
        let text: String = (1..=10_000)
            .map(|number| format!("line {number}\n"))
            .collect();
        let formatted = format_output(&buffer_of(&text, &config), &config);
        let lines: Vec<&str> = formatted.text.lines().collect();
        assert_eq!(lines[0], "stdout:");
        assert_eq!(lines[1], "line 1");
        assert_eq!(*lines.last().expect("lines"), "line 10000");
        let marker = lines
            .iter()
            .find(|line| line.starts_with("... ("))
            .expect("marker");
        let shown = lines.len() - 2;
        assert_eq!(
            *marker,
            format!("... ({} lines omitted) ...", 10_000 - shown)
        );
        // Head gets about 30% of the budget, tail about 70%.
        let marker_index = lines.iter().position(|line| line == marker).expect("index");
        let head_chars: usize = lines[1..marker_index]
            .iter()
            .map(|line| line.len() + 1)
            .sum();
        let tail_chars: usize = lines[marker_index + 1..]
            .iter()
            .map(|line| line.len() + 1)
            .sum();
        assert!(head_chars <= 2400 && head_chars > 2350, "head {head_chars}");
        assert!(tail_chars <= 5600 && tail_chars > 5550, "tail {tail_chars}");
        assert!(formatted.truncated);
    }

    #[test]
    fn keeps_at_least_one_line_each_side() {
        let config = OutputConfig {
            max_output_tokens: 10,
            ..plain()
        };
        let text = format!("{}\nmiddle\n{}\n", "f".repeat(100), "l".repeat(100));
        let formatted = format_output(&buffer_of(&text, &config), &config);
        assert_eq!(
            formatted.text,
            format!(
                "stdout:\n{}\n... (1 line omitted) ...\n{}\n",
                "f".repeat(100),
                "l".repeat(100)
            )
        );
    }

    #[test]
    fn interleaved_streams_pay_for_their_headers() {
        let config = plain();
        let mut buffer = OutputBuffer::new(&config);
        for number in 0..3000 {
            let stream = if number % 2 == 0 {
                Stream::Stdout
            } else {
                Stream::Stderr
            };
            buffer.push(stream, "x\n");
        }
        buffer.finish();
        let formatted = format_output(&buffer, &config);
        assert!(formatted.truncated);
        let chars = formatted.text.chars().count();
        assert!(chars <= config.budget_chars() + 60, "{chars} chars");
    }

    #[test]
    fn formats_sizes() {
        assert_eq!(format_bytes(12), "12 B");
        assert_eq!(format_bytes(1536), "1.5 KiB");
        assert_eq!(format_bytes(1_073_741_824), "1.0 GiB");
    }
}
