//! The bounded output buffer: joins chunks into lines, keeps only what
//! formatting needs (a head window and a tail window), and streams every
//! line to an optional log writer, so memory never grows with output.

use std::collections::VecDeque;
use std::io::Write;

use crate::config::OutputConfig;

mod assembly;
mod log;
mod pending;
mod retention;

use crate::output::chunk::Stream;
use crate::output::lines::OutputLine;
use pending::{PendingLine, char_count};

/// The next error-pattern anchor in a chunk, as far as searched.
#[derive(Clone, Copy)]
enum Anchor {
    Unknown,
    At(usize),
    NoneLeft,
}

/// How many dropped line allocations are kept for reuse.
pub(super) const MAX_SPARE_TEXTS: usize = 8;

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
    /// Secrets masked in the output before it reached the buffer.
    redacted: u64,
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

pub(super) fn stream_index(stream: Stream) -> usize {
    match stream {
        Stream::Stdout => 0,
        Stream::Stderr => 1,
    }
}

impl OutputBuffer {
    /// An empty buffer with `config`'s windows.
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
            redacted: 0,
        }
    }

    /// A buffer that also writes the full output to `log`, which starts with
    /// `$ <command>` and has a `stdout:`/`stderr:` header where the stream
    /// changes, like the model text. Write errors turn logging off and are
    /// reported by [`OutputBuffer::log_error`]; they never fail the command.
    pub fn with_log(config: &OutputConfig, log: Box<dyn Write + Send>, command: &str) -> Self {
        let mut buffer = Self::new(config);
        buffer.set_log(log, command);
        buffer
    }

    /// Starts logging to `log` (see [`OutputBuffer::with_log`]). Output
    /// pushed before this is not in the log.
    pub fn set_log(&mut self, log: Box<dyn Write + Send>, command: &str) {
        self.log = Some(log);
        self.log_write(&format!("$ {command}\n"));
    }

    /// A finished buffer holding `text` as stdout (for tests and mocks).
    pub fn from_text(config: &OutputConfig, stream: Stream, text: &str) -> Self {
        let mut buffer = Self::new(config);
        buffer.push(stream, text);
        buffer.finish();
        buffer
    }

    /// The windows it keeps.
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
        // Whole short lines reach the log as one write per stretch of them:
        // their bytes lie together in `text`, each with its newline. (Two
        // writes per line through the log's layers cost more than the rest
        // of a line's bookkeeping.) The offset where the unwritten stretch
        // starts:
        let mut log_from: Option<usize> = None;
        // memchr2 finds line ends at memory speed; this loop runs for every
        // line of a gigabyte of output.
        while let Some(position) = memchr::memchr2(b'\n', b'\r', rest.as_bytes()) {
            let (piece, after) = rest.split_at(position);
            let start = text.len() - rest.len();
            if after.as_bytes()[0] == b'\n' {
                if self.pending[index].is_untouched() && piece.len() <= self.line_cap / 2 {
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
                    self.complete_short_line(stream, piece, may_hold_anchor, &mut log_from, start);
                } else {
                    self.write_log_stretch(text, &mut log_from, start);
                    self.append_pending(index, stream, piece);
                    self.complete_line(stream);
                }
            } else {
                self.write_log_stretch(text, &mut log_from, start);
                self.append_pending(index, stream, piece);
                self.pending[index].carriage_return = true;
            }
            rest = &after[1..];
        }
        self.write_log_stretch(text, &mut log_from, text.len() - rest.len());
        self.append_pending(index, stream, rest);
    }

    /// The common case: a whole line that arrived in one piece and is short
    /// enough to keep whole. No pending state, no second copy for the log:
    /// the line joins the stretch of `text` from `log_from`, which
    /// [`OutputBuffer::write_log_stretch`] writes; `start` is where it
    /// begins in `text`.
    fn complete_short_line(
        &mut self,
        stream: Stream,
        piece: &str,
        may_hold_anchor: bool,
        log_from: &mut Option<usize>,
        start: usize,
    ) {
        let mut log_line = None;
        if self.log.is_some() {
            if log_from.is_none() {
                // A stretch continues only lines of this stream, after
                // which no line is open: only its first line may need the
                // header or the end of an open line before it.
                self.log_begin_line(stream);
                *log_from = Some(start);
            }
            self.log_lines += 1;
            log_line = Some(self.log_lines);
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

    /// Writes the stretch of whole lines of `text` from `log_from` up to
    /// `end` (their lines were counted as they came).
    fn write_log_stretch(&mut self, text: &str, log_from: &mut Option<usize>, end: usize) {
        if let Some(from) = log_from.take() {
            self.log_write_counted(&text[from..end], 0);
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

    /// True once [`OutputBuffer::finish`] was called.
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

    /// The error-like lines kept from the middle (error-aware mode).
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

    /// How many secrets were masked in this output (see
    /// [`crate::OutputCapture::redacting`]).
    pub fn redacted(&self) -> u64 {
        self.redacted
    }

    pub(crate) fn set_redacted(&mut self, count: u64) {
        self.redacted = count;
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

    /// What the log holds and which log line each kept line points at do
    /// not depend on how the output was cut into chunks: whole lines take
    /// the stretch path, cut ones the pending path.
    fn log_and_numbers(chunks: &[(Stream, String)]) -> (String, Vec<(u64, Option<u64>)>) {
        let log = SharedLog::default();
        let config = OutputConfig {
            max_output_tokens: 40,
            ..OutputConfig::default()
        };
        let mut buffer = OutputBuffer::with_log(&config, Box::new(log.clone()), "cmd");
        for (stream, text) in chunks {
            buffer.push(*stream, text);
        }
        buffer.finish();
        let mut numbers: Vec<(u64, Option<u64>)> = buffer
            .head()
            .iter()
            .chain(buffer.tail())
            .map(|line| (line.number, line.log_line))
            .collect();
        numbers.dedup();
        (log.text(), numbers)
    }

    proptest::proptest! {
        #[test]
        fn chunking_changes_neither_the_log_nor_the_log_lines(
            pieces in proptest::collection::vec(
                (proptest::bool::ANY, "(ab|c\n|\n|\r\n|x\r|é|error: y\n){1,12}"),
                1..10,
            ),
            cut in 1_usize..7,
        ) {
            let stream = |stdout: bool| if stdout { Stream::Stdout } else { Stream::Stderr };
            let whole: Vec<(Stream, String)> = pieces
                .iter()
                .map(|(stdout, text)| (stream(*stdout), text.clone()))
                .collect();
            // The same bytes, each piece cut into chunks of `cut` chars.
            let cut_up: Vec<(Stream, String)> = pieces
                .iter()
                .flat_map(|(stdout, text)| {
                    let chars: Vec<char> = text.chars().collect();
                    chars
                        .chunks(cut)
                        .map(|chunk| (stream(*stdout), chunk.iter().collect::<String>()))
                        .collect::<Vec<_>>()
                })
                .collect();
            proptest::prop_assert_eq!(log_and_numbers(&whole), log_and_numbers(&cut_up));
        }
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
