//! The bounded output buffer: joins chunks into lines, keeps only what
//! formatting needs (a head window and a tail window), and streams every
//! line to an optional log writer, so memory never grows with output.

use std::collections::VecDeque;
use std::io::Write;

use crate::config::OutputConfig;
use crate::exec::Stream;

/// The next error-pattern anchor in a chunk, as far as searched.
#[derive(Clone, Copy)]
enum Anchor {
    Unknown,
    At(usize),
    NoneLeft,
}

/// How many dropped line allocations are kept for reuse.
const MAX_SPARE_TEXTS: usize = 8;

/// One line of output as the model and a UI see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputLine {
    pub stream: Stream,
    /// The line without its newline. Lines longer than the retention cap keep
    /// only their beginning and end (see `original_chars`).
    pub text: String,
    /// 1-based number of this line in the command's output.
    pub number: u64,
    /// 1-based line in the log file where this line starts, when logged.
    pub log_line: Option<u64>,
    /// Length of the full line in chars; larger than `text` when clipped.
    pub original_chars: usize,
}

impl OutputLine {
    /// True when the middle of a very long line was not retained.
    pub fn is_clipped(&self) -> bool {
        self.original_chars > self.text.chars().count()
    }
}

/// A line still being assembled. Long lines keep their first and last
/// `cap / 2` chars; the middle is counted, not kept.
#[derive(Debug, Default)]
struct PendingLine {
    head: String,
    head_chars: usize,
    tail: String,
    tail_chars: usize,
    total_chars: usize,
    /// A `\r` was seen: the next visible char starts the line over, as a
    /// terminal redraw would (progress bars).
    carriage_return: bool,
    /// Part of this line is already in the log (it grew past the cap).
    logged_chars: usize,
    log_line: Option<u64>,
    /// Raw text not yet written to the log.
    unlogged: String,
    /// An error-like token seen in the part of a long line not kept.
    middle_window: Option<crate::output::salient::MiddleWindow>,
}

impl PendingLine {
    /// Nothing pending at all: a new line may bypass the assembly.
    fn is_untouched(&self) -> bool {
        self.total_chars == 0
            && !self.carriage_return
            && self.unlogged.is_empty()
            && self.logged_chars == 0
    }

    fn is_empty(&self) -> bool {
        self.total_chars == 0 && !self.carriage_return
    }
}

/// The bounded output of one command. Feed it with [`OutputBuffer::push`],
/// close it with [`OutputBuffer::finish`].
pub struct OutputBuffer {
    config: OutputConfig,
    /// Max chars kept of one line: enough to abbreviate it and keep context.
    line_cap: usize,
    pending: [PendingLine; 2],
    head: Vec<OutputLine>,
    head_cost: usize,
    head_full: bool,
    tail: VecDeque<OutputLine>,
    tail_cost: usize,
    total_lines: u64,
    total_bytes: u64,
    total_cost: u64,
    /// Stream of the last completed line: a change costs a header.
    last_stream: Option<Stream>,
    log: Option<Box<dyn Write + Send>>,
    log_lines: u64,
    log_stream: Option<Stream>,
    /// The log currently ends in the middle of a line of this stream.
    log_open_line: Option<Stream>,
    log_error: Option<String>,
    finished: bool,
    /// Allocations of dropped tail lines, reused for new lines.
    spare_texts: Vec<String>,
    salient: crate::output::salient::SalientTracker,
}

impl std::fmt::Debug for OutputBuffer {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("OutputBuffer")
            .field("total_lines", &self.total_lines)
            .field("total_bytes", &self.total_bytes)
            .field("head", &self.head.len())
            .field("tail", &self.tail.len())
            .field("logging", &self.log.is_some())
            .finish_non_exhaustive()
    }
}

impl Default for OutputBuffer {
    fn default() -> Self {
        Self::new(&OutputConfig::default())
    }
}

/// The last `keep` chars of `text`, which has `count` chars.
fn keep_last_chars(text: &str, count: usize, keep: usize) -> &str {
    if count <= keep {
        return text;
    }
    let start = text
        .char_indices()
        .nth(count - keep)
        .map_or(text.len(), |(byte, _)| byte);
    &text[start..]
}

/// Chars in `text`; ASCII (the common case) is counted by its length.
fn char_count(text: &str) -> usize {
    if text.is_ascii() {
        text.len()
    } else {
        text.chars().count()
    }
}

fn stream_index(stream: Stream) -> usize {
    match stream {
        Stream::Stdout => 0,
        Stream::Stderr => 1,
    }
}

impl OutputBuffer {
    pub fn new(config: &OutputConfig) -> Self {
        Self {
            config: config.clone(),
            line_cap: config.max_line_chars.max(16) * 4,
            pending: [PendingLine::default(), PendingLine::default()],
            head: Vec::new(),
            head_cost: 0,
            head_full: false,
            tail: VecDeque::new(),
            tail_cost: 0,
            total_lines: 0,
            total_bytes: 0,
            total_cost: 0,
            last_stream: None,
            log: None,
            log_lines: 0,
            log_stream: None,
            log_open_line: None,
            log_error: None,
            finished: false,
            spare_texts: Vec::new(),
            salient: crate::output::salient::SalientTracker::new(config),
        }
    }

    /// A buffer that also writes the full output to `log`, which starts with
    /// `$ <command>` and has a `stdout:`/`stderr:` header where the stream
    /// changes, like the model text. Write errors turn logging off and are
    /// reported by [`OutputBuffer::log_error`]; they never fail the command.
    pub fn with_log(config: &OutputConfig, log: Box<dyn Write + Send>, command: &str) -> Self {
        let mut buffer = Self::new(config);
        buffer.log = Some(log);
        buffer.log_write(&format!("$ {command}\n"));
        buffer
    }

    /// A finished buffer holding `text` as stdout (for tests and mocks).
    pub fn from_text(config: &OutputConfig, stream: Stream, text: &str) -> Self {
        let mut buffer = Self::new(config);
        buffer.push(stream, text);
        buffer.finish();
        buffer
    }

    pub fn config(&self) -> &OutputConfig {
        &self.config
    }

    /// Adds a chunk of cleaned text. Lines split across chunks are joined;
    /// `\r\n` ends a line; a lone `\r` redraws the line (last state wins).
    pub fn push(&mut self, stream: Stream, text: &str) {
        if self.finished || text.is_empty() {
            return;
        }
        self.total_bytes += text.len() as u64;
        let index = stream_index(stream);
        let mut rest = text;
        // Where the next error-pattern anchor is in `text`, searched lazily
        // once per stretch of lines without one: lines before it skip the
        // error scan (one SIMD pass per chunk instead of a call per line).
        let mut anchor = Anchor::Unknown;
        let scanning = self.salient.is_enabled();
        // memchr2 finds line ends at memory speed; this loop runs for every
        // line of a gigabyte of output.
        while let Some(position) = memchr::memchr2(b'\n', b'\r', rest.as_bytes()) {
            let (piece, after) = rest.split_at(position);
            if after.as_bytes()[0] == b'\n' {
                if self.pending[index].is_untouched() && piece.len() <= self.line_cap / 2 {
                    let start = text.len() - rest.len();
                    let end = start + piece.len();
                    let may_hold_anchor = scanning && {
                        if matches!(anchor, Anchor::At(at) if at < start) {
                            anchor = Anchor::Unknown;
                        }
                        if matches!(anchor, Anchor::Unknown) {
                            anchor =
                                crate::output::salient::first_anchor(&text.as_bytes()[start..])
                                    .map_or(Anchor::NoneLeft, |offset| Anchor::At(start + offset));
                        }
                        matches!(anchor, Anchor::At(at) if at < end)
                    };
                    self.complete_short_line(stream, piece, may_hold_anchor);
                } else {
                    self.append_pending(index, stream, piece);
                    self.complete_line(stream);
                }
            } else {
                self.append_pending(index, stream, piece);
                self.pending[index].carriage_return = true;
            }
            rest = &after[1..];
        }
        self.append_pending(index, stream, rest);
    }

    /// The common case: a whole line that arrived in one piece and is short
    /// enough to keep whole. No pending state, no second copy for the log.
    fn complete_short_line(&mut self, stream: Stream, piece: &str, may_hold_anchor: bool) {
        let mut log_line = None;
        if self.log.is_some() {
            self.log_begin_line(stream);
            log_line = Some(self.log_lines + 1);
            self.log_write_counted(piece, 0);
            self.log_write_counted("\n", 1);
        }
        let mut text = self.spare_texts.pop().unwrap_or_default();
        text.clear();
        text.push_str(piece);
        self.add_line(
            stream,
            text,
            log_line,
            char_count(piece),
            None,
            may_hold_anchor,
        );
    }

    fn append_pending(&mut self, index: usize, stream: Stream, piece: &str) {
        if piece.is_empty() {
            return;
        }
        if self.pending[index].carriage_return {
            self.restart_pending(index, stream);
        }
        let cap = self.line_cap;
        let half = cap / 2;
        let pending = &mut self.pending[index];
        let piece_chars = piece.chars().count();
        pending.total_chars += piece_chars;
        let head_room = half.saturating_sub(pending.head_chars);
        if head_room > 0 {
            let taken_bytes = piece
                .char_indices()
                .nth(head_room)
                .map_or(piece.len(), |(byte, _)| byte);
            let taken = &piece[..taken_bytes];
            pending.head.push_str(taken);
            pending.head_chars += taken.chars().count();
            let remainder = &piece[taken_bytes..];
            pending.tail.push_str(remainder);
            pending.tail_chars += remainder.chars().count();
        } else {
            pending.tail.push_str(piece);
            pending.tail_chars += piece_chars;
        }
        // Amortized trim: let the tail grow to `cap`, then keep its last half.
        if pending.tail_chars > cap {
            let drop_chars = pending.tail_chars - half;
            let drop_bytes = pending
                .tail
                .char_indices()
                .nth(drop_chars)
                .map_or(pending.tail.len(), |(byte, _)| byte);
            {
                // Error-aware shortening wants the text around an error even
                // in the middle of a line of megabytes: look before forgetting.
                // A token cut by the trim point is still seen whole.
                let mut overlap = (drop_bytes + 64).min(pending.tail.len());
                while !pending.tail.is_char_boundary(overlap) {
                    overlap -= 1;
                }
                let (dropped, rest) = pending.tail.split_at(overlap);
                let kept = pending.middle_window.take();
                pending.middle_window = self.salient.middle_window(kept, dropped, rest);
            }
            pending.tail.drain(..drop_bytes);
            pending.tail_chars = half;
        }
        if self.log.is_some() {
            let pending = &mut self.pending[index];
            pending.unlogged.push_str(piece);
            // A line this long would be lost to the log if we waited for its
            // end: write it as it comes.
            if pending.total_chars > cap {
                self.flush_pending_to_log(index, stream);
            }
        }
    }

    fn restart_pending(&mut self, index: usize, stream: Stream) {
        let was_logged = self.pending[index].logged_chars > 0;
        if was_logged {
            // The redrawn line is already partly in the log: end it there.
            self.finish_logged_line(index, stream);
        }
        self.pending[index] = PendingLine::default();
    }

    fn flush_pending_to_log(&mut self, index: usize, stream: Stream) {
        if self.pending[index].unlogged.is_empty() {
            return;
        }
        if self.log_open_line != Some(stream) {
            self.log_begin_line(stream);
            if self.pending[index].log_line.is_none() {
                self.pending[index].log_line = Some(self.log_lines + 1);
            }
        }
        let text = std::mem::take(&mut self.pending[index].unlogged);
        self.pending[index].logged_chars += text.chars().count();
        self.log_write(&text);
        self.log_open_line = Some(stream);
    }

    fn finish_logged_line(&mut self, index: usize, stream: Stream) {
        self.flush_pending_to_log(index, stream);
        if self.log_open_line == Some(stream) {
            self.log_write("\n");
            self.log_open_line = None;
        }
    }

    fn complete_line(&mut self, stream: Stream) {
        let index = stream_index(stream);
        let pending = std::mem::take(&mut self.pending[index]);
        let mut log_line = pending.log_line;
        if self.log.is_some() {
            if pending.logged_chars > 0 {
                self.pending[index].unlogged.clone_from(&pending.unlogged);
                self.pending[index].logged_chars = pending.logged_chars;
                self.pending[index].log_line = pending.log_line;
                self.finish_logged_line(index, stream);
                self.pending[index] = PendingLine::default();
            } else {
                self.log_begin_line(stream);
                log_line = Some(self.log_lines + 1);
                self.log_write(&pending.unlogged);
                self.log_write("\n");
            }
        }
        let mut text = pending.head;
        text.push_str(keep_last_chars(
            &pending.tail,
            pending.tail_chars,
            self.line_cap / 2,
        ));
        let window = pending.middle_window;
        self.add_line(stream, text, log_line, pending.total_chars, window, true);
    }

    fn line_cost(&self, line: &OutputLine) -> usize {
        line.original_chars.min(self.config.max_line_chars) + 1
    }

    /// Numbers a completed line and keeps what formatting needs of it.
    /// `may_hold_anchor: false` when the chunk's prefilter pass found no
    /// error anchor in it.
    fn add_line(
        &mut self,
        stream: Stream,
        text: String,
        log_line: Option<u64>,
        original_chars: usize,
        window: Option<crate::output::salient::MiddleWindow>,
        may_hold_anchor: bool,
    ) {
        self.total_lines += 1;
        let line = OutputLine {
            stream,
            text,
            number: self.total_lines,
            log_line,
            original_chars,
        };
        let cost = self.line_cost(&line);
        let budget = self.config.budget_chars();
        // A `stdout:`/`stderr:` header is shown where the stream changes; with
        // interleaved streams the headers would otherwise escape the budget.
        let header = if self.last_stream.is_some_and(|last| last != line.stream) {
            crate::output::format::HEADER_COST
        } else {
            0
        };
        self.last_stream = Some(line.stream);
        self.total_cost += (cost + header) as u64;
        self.salient
            .observe_with_hint(&line, window, may_hold_anchor);
        if !self.head_full {
            if self.head_cost + cost <= budget || self.head.is_empty() {
                self.head_cost += cost;
                self.head.push(line.clone());
            } else {
                self.head_full = true;
            }
        }
        self.tail_cost += cost;
        self.tail.push_back(line);
        while self.tail.len() > 1 && self.tail_cost > budget {
            if let Some(dropped) = self.tail.pop_front() {
                self.tail_cost -= self.line_cost(&dropped);
                // Reuse the allocation for the next line instead of a
                // malloc/free pair per line.
                if self.spare_texts.len() < MAX_SPARE_TEXTS
                    && dropped.text.capacity() <= self.line_cap * 4
                {
                    self.spare_texts.push(dropped.text);
                }
            }
        }
    }

    fn log_begin_line(&mut self, stream: Stream) {
        if self.log_open_line.take().is_some() {
            self.log_write("\n");
        }
        if self.log_stream != Some(stream) {
            self.log_write_counted(&format!("{stream}:\n"), 1);
            self.log_stream = Some(stream);
        }
    }

    fn log_write(&mut self, text: &str) {
        let newlines = memchr::memchr_iter(b'\n', text.as_bytes()).count();
        self.log_write_counted(text, newlines);
    }

    /// Writes `text`, which holds `newlines` line ends, to the log.
    fn log_write_counted(&mut self, text: &str, newlines: usize) {
        if text.is_empty() {
            return;
        }
        if let Some(log) = &mut self.log {
            match log.write_all(text.as_bytes()) {
                Ok(()) => self.log_lines += newlines as u64,
                Err(error) => {
                    self.log_error = Some(format!("writing the log file failed: {error}"));
                    self.log = None;
                }
            }
        }
    }

    /// Ends the output: an unterminated last line becomes a line, and the log
    /// is flushed. Later pushes are ignored. Calling it twice is harmless.
    pub fn finish(&mut self) {
        if self.finished {
            return;
        }
        for stream in [Stream::Stdout, Stream::Stderr] {
            if !self.pending[stream_index(stream)].is_empty() {
                self.complete_line(stream);
            }
        }
        if let Some(log) = &mut self.log
            && let Err(error) = log.flush()
        {
            self.log_error = Some(format!("writing the log file failed: {error}"));
        }
        self.log = None;
        self.finished = true;
    }

    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// Number of complete lines seen.
    pub fn total_lines(&self) -> u64 {
        self.total_lines
    }

    /// Bytes of (cleaned) text seen.
    pub fn total_bytes(&self) -> u64 {
        self.total_bytes
    }

    /// Sum of the display cost (abbreviated length + newline) of all lines,
    /// and of the stream headers between them (the first is overhead).
    pub fn total_cost(&self) -> u64 {
        self.total_cost
    }

    /// True when every line is retained (nothing had to be dropped).
    pub fn is_complete(&self) -> bool {
        !self.head_full
    }

    /// The first lines, up to the budget.
    pub fn head(&self) -> &[OutputLine] {
        &self.head
    }

    /// The last lines, up to the budget.
    pub fn tail(&self) -> impl DoubleEndedIterator<Item = &OutputLine> + ExactSizeIterator {
        self.tail.iter()
    }

    pub fn salient(&self) -> &crate::output::salient::SalientTracker {
        &self.salient
    }

    /// The retained lines in order, without duplicates, and the number of
    /// lines dropped between head and tail. For live display.
    pub fn retained(&self) -> (Vec<&OutputLine>, u64) {
        let last_head = self.head.last().map_or(0, |line| line.number);
        let mut lines: Vec<&OutputLine> = self.head.iter().collect();
        let tail: Vec<&OutputLine> = self
            .tail
            .iter()
            .filter(|line| line.number > last_head)
            .collect();
        let omitted = tail.first().map_or(0, |first| first.number - last_head - 1);
        lines.extend(tail);
        (lines, omitted)
    }

    /// The text of the line being assembled on `stream`, if any (for live
    /// display of a prompt or a progress bar).
    pub fn partial_line(&self, stream: Stream) -> Option<String> {
        let pending = &self.pending[stream_index(stream)];
        (!pending.is_empty()).then(|| format!("{}{}", pending.head, pending.tail))
    }

    /// Why the log stopped, when writing it failed.
    pub fn log_error(&self) -> Option<&str> {
        self.log_error.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[derive(Clone, Default)]
    struct SharedLog(Arc<Mutex<Vec<u8>>>);

    impl Write for SharedLog {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().expect("log lock").extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl SharedLog {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().expect("log lock").clone()).expect("utf8 log")
        }
    }

    fn texts(buffer: &OutputBuffer) -> Vec<String> {
        buffer
            .retained()
            .0
            .into_iter()
            .map(|line| line.text.clone())
            .collect()
    }

    #[test]
    fn finds_error_lines_deep_inside_one_large_chunk() {
        let mut chunk = String::new();
        for number in 0..5000 {
            match number {
                1234 => chunk.push_str("error[E0308]: mismatched types\n"),
                4321 => chunk.push_str("grep: x: Permission denied\n"),
                _ => chunk.push_str("   Compiling crate v1.0.0\n"),
            }
        }
        let mut buffer = OutputBuffer::default();
        buffer.push(Stream::Stdout, &chunk);
        buffer.finish();
        assert_eq!(buffer.salient().salient_lines(), 2);
    }

    #[test]
    fn joins_lines_split_across_chunks() {
        let mut buffer = OutputBuffer::default();
        buffer.push(Stream::Stdout, "hel");
        buffer.push(Stream::Stdout, "lo\nwor");
        buffer.push(Stream::Stdout, "ld\n");
        buffer.finish();
        assert_eq!(texts(&buffer), ["hello", "world"]);
        assert_eq!(buffer.total_lines(), 2);
        assert_eq!(buffer.total_bytes(), 12);
    }

    #[test]
    fn keeps_multibyte_characters_split_across_chunks_whole() {
        let mut buffer = OutputBuffer::default();
        buffer.push(Stream::Stdout, "é");
        buffer.push(Stream::Stdout, "🦀\n");
        buffer.finish();
        assert_eq!(texts(&buffer), ["é🦀"]);
    }

    #[test]
    fn unterminated_last_line_becomes_a_line_on_finish() {
        let mut buffer = OutputBuffer::default();
        buffer.push(Stream::Stdout, "a\nb");
        assert_eq!(buffer.partial_line(Stream::Stdout).as_deref(), Some("b"));
        buffer.finish();
        buffer.finish();
        assert_eq!(texts(&buffer), ["a", "b"]);
    }

    #[test]
    fn carriage_return_redraws_the_line_and_crlf_ends_it() {
        let mut buffer = OutputBuffer::default();
        buffer.push(Stream::Stdout, "10%\r20%\r");
        buffer.push(Stream::Stdout, "100%\ndos\r\nline\r");
        buffer.push(Stream::Stdout, "\n");
        buffer.finish();
        assert_eq!(texts(&buffer), ["100%", "dos", "line"]);
    }

    #[test]
    fn keeps_streams_apart_while_lines_are_pending() {
        let mut buffer = OutputBuffer::default();
        buffer.push(Stream::Stdout, "out-");
        buffer.push(Stream::Stderr, "err\n");
        buffer.push(Stream::Stdout, "line\n");
        buffer.finish();
        let lines: Vec<(Stream, String)> = buffer
            .retained()
            .0
            .into_iter()
            .map(|line| (line.stream, line.text.clone()))
            .collect();
        assert_eq!(
            lines,
            [
                (Stream::Stderr, "err".to_owned()),
                (Stream::Stdout, "out-line".to_owned())
            ]
        );
    }

    #[test]
    fn memory_stays_bounded_by_the_budget() {
        let mut buffer = OutputBuffer::default();
        for number in 0..100_000 {
            buffer.push(Stream::Stdout, &format!("line {number}\n"));
        }
        buffer.finish();
        let budget = OutputConfig::default().budget_chars();
        assert!(
            buffer
                .head()
                .iter()
                .map(|line| line.text.len() + 1)
                .sum::<usize>()
                <= budget
        );
        assert!(buffer.tail().map(|line| line.text.len() + 1).sum::<usize>() <= budget);
        assert_eq!(buffer.head()[0].text, "line 0");
        assert_eq!(
            buffer.tail().last().map(|line| line.text.as_str()),
            Some("line 99999")
        );
        assert_eq!(buffer.total_lines(), 100_000);
        let (_, omitted) = buffer.retained();
        assert_eq!(
            omitted,
            100_000 - buffer.head().len() as u64 - buffer.tail().len() as u64
        );
    }

    #[test]
    fn clips_the_middle_of_a_huge_line() {
        let config = OutputConfig::default();
        let mut buffer = OutputBuffer::new(&config);
        buffer.push(Stream::Stdout, "start");
        for _ in 0..10_000 {
            buffer.push(Stream::Stdout, &"x".repeat(100));
        }
        buffer.push(Stream::Stdout, "end\n");
        buffer.finish();
        let line = &buffer.head()[0];
        assert!(line.is_clipped());
        assert_eq!(line.original_chars, 5 + 1_000_000 + 3);
        assert!(line.text.starts_with("start"));
        assert!(line.text.ends_with("end"));
        assert_eq!(line.text.chars().count(), config.max_line_chars * 4);
    }

    #[test]
    fn log_gets_every_line_with_command_and_stream_headers() {
        let log = SharedLog::default();
        let mut buffer =
            OutputBuffer::with_log(&OutputConfig::default(), Box::new(log.clone()), "make");
        buffer.push(Stream::Stdout, "one\ntw");
        buffer.push(Stream::Stderr, "oops\n");
        buffer.push(Stream::Stdout, "o\n");
        buffer.finish();
        assert_eq!(
            log.text(),
            "$ make\nstdout:\none\nstderr:\noops\nstdout:\ntwo\n"
        );
        let log_lines: Vec<Option<u64>> = buffer
            .retained()
            .0
            .iter()
            .map(|line| line.log_line)
            .collect();
        assert_eq!(log_lines, [Some(3), Some(5), Some(7)]);
    }

    #[test]
    fn log_keeps_a_huge_line_whole() {
        let log = SharedLog::default();
        let mut buffer =
            OutputBuffer::with_log(&OutputConfig::default(), Box::new(log.clone()), "x");
        let piece = "y".repeat(1000);
        for _ in 0..20 {
            buffer.push(Stream::Stdout, &piece);
        }
        buffer.push(Stream::Stdout, "\nnext\n");
        buffer.finish();
        assert_eq!(
            log.text(),
            format!("$ x\nstdout:\n{}\nnext\n", piece.repeat(20))
        );
        assert_eq!(buffer.head()[1].log_line, Some(4));
    }

    #[test]
    fn log_write_failure_turns_logging_off_and_is_reported() {
        struct Full;
        impl Write for Full {
            fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
                Err(std::io::Error::other("No space left on device"))
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let mut buffer = OutputBuffer::with_log(&OutputConfig::default(), Box::new(Full), "x");
        buffer.push(Stream::Stdout, "still counted\n");
        buffer.finish();
        assert_eq!(
            buffer.log_error(),
            Some("writing the log file failed: No space left on device")
        );
        assert_eq!(texts(&buffer), ["still counted"]);
    }
}
