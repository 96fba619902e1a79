//! The text a job printed, kept two ways: a bounded window in memory that
//! reads take from by cursor, and an optional log file with everything.
//!
//! The text is cleaned as it arrives ([`StreamCleaner`]: ANSI sequences
//! out, UTF-8 reassembled). `\r`-redrawn lines collapse when text is read
//! (the window) or when a line is complete (the log file), so a progress
//! bar shows its last state. Input is never written here: what was typed
//! appears only as far as the terminal echoed it, so text typed with echo
//! off is in neither.
//!
//! With a redactor, secrets are masked right after cleaning, before either
//! keeps the text: the transcript on disk never holds one.

use std::io::Write as _;
use std::sync::Arc;

use bashtool_core::{RedactStream, Redactor, StreamCleaner, collapse_carriage_returns};

/// Default bytes of cleaned text a job keeps in memory for reads.
pub const DEFAULT_TEXT_CAPACITY: usize = 1024 * 1024;
/// A line longer than this goes to the log file without waiting for its end.
const MAX_PENDING_LINE: usize = 64 * 1024;

/// What a read by cursor returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextRead {
    /// The text from the cursor on, `\r`-redrawn lines collapsed.
    pub text: String,
    /// Where the next read starts.
    pub next: u64,
    /// Bytes between the asked cursor and the oldest text still in memory,
    /// that this read could not return (they are in the log file).
    pub dropped: u64,
}

/// The cleaned text, its last `capacity` bytes in memory.
#[derive(Debug)]
pub(crate) struct TextWindow {
    cleaner: StreamCleaner,
    scratch: String,
    text: String,
    /// Stream offset of `text[0]`.
    start: u64,
    capacity: usize,
    redaction: Option<RedactStream>,
}

impl TextWindow {
    pub fn new(capacity: usize, redactor: Option<Arc<Redactor>>) -> Self {
        Self {
            cleaner: StreamCleaner::new(),
            scratch: String::new(),
            text: String::new(),
            start: 0,
            capacity: capacity.max(1024),
            redaction: redactor.map(RedactStream::new),
        }
    }

    /// Cleans (and masks) the next bytes of output, appends them, also to
    /// `log`.
    pub fn push(&mut self, bytes: &[u8], mut log: Option<&mut LogSink>) {
        let bytes = column_one_as_carriage_return(bytes);
        let cleaned = self.cleaner.clean(&bytes, &mut self.scratch);
        let text = &mut self.text;
        let mut keep = |masked: &str| {
            if let Some(log) = log.as_deref_mut() {
                log.push(masked);
            }
            text.push_str(masked);
        };
        match &mut self.redaction {
            Some(redaction) => redaction.push_str(cleaned, keep),
            None => keep(cleaned),
        }
        self.trim();
    }

    /// Drops the oldest text beyond the capacity.
    fn trim(&mut self) {
        if self.text.len() > self.capacity {
            // Drop the oldest quarter at once, not a few bytes per read.
            let mut cut = self.text.len() - self.capacity * 3 / 4;
            while !self.text.is_char_boundary(cut) {
                cut += 1;
            }
            self.text.drain(..cut);
            self.start += cut as u64;
        }
    }

    /// Decides what the masking holds back for the next bytes (the start of
    /// what may be a secret): the program waits for input, so its prompt
    /// must show. Of a secret's value cut there, 8 or more characters are
    /// masked.
    pub fn settle(&mut self, mut log: Option<&mut LogSink>) {
        let text = &mut self.text;
        if let Some(redaction) = self
            .redaction
            .as_mut()
            .filter(|redaction| redaction.is_holding())
        {
            redaction.finish_str(|masked| {
                if let Some(log) = log.as_deref_mut() {
                    log.push(masked);
                }
                text.push_str(masked);
            });
            self.trim();
        }
    }

    /// Flushes a character cut at the very end of the output, and what the
    /// masking held.
    pub fn finish(&mut self, mut log: Option<&mut LogSink>) {
        let mut tail = String::new();
        self.cleaner.finish(&mut tail);
        let text = &mut self.text;
        let mut keep = |masked: &str| {
            if let Some(log) = log.as_deref_mut() {
                log.push(masked);
            }
            text.push_str(masked);
        };
        match &mut self.redaction {
            Some(redaction) => {
                redaction.push_str(&tail, &mut keep);
                redaction.finish_str(&mut keep);
            }
            None => keep(&tail),
        }
        if let Some(log) = log {
            log.finish();
        }
    }

    /// How many secrets were masked so far.
    pub fn masked(&self) -> u64 {
        self.redaction.as_ref().map_or(0, RedactStream::masked)
    }

    /// The stream offset after the last byte.
    pub fn end(&self) -> u64 {
        self.start + self.text.len() as u64
    }

    /// Reads from `cursor` on, at most about `max_bytes` (whole characters).
    pub fn read(&self, cursor: u64, max_bytes: usize) -> TextRead {
        let from = cursor.clamp(self.start, self.end());
        let dropped = from - cursor.min(from);
        let mut offset = usize::try_from(from - self.start).unwrap_or(0);
        while !self.text.is_char_boundary(offset) {
            offset += 1;
        }
        let mut until = offset.saturating_add(max_bytes).min(self.text.len());
        while !self.text.is_char_boundary(until) {
            until -= 1;
        }
        TextRead {
            text: collapse_carriage_returns(&self.text[offset..until]),
            next: self.start + until as u64,
            dropped,
        }
    }
}

/// Moving the cursor to column 1 (`ESC [ G`, `ESC [ 1 G`) is what `\r`
/// does; line editors such as Node's REPL and Ruby's reline redraw their
/// input line that way. Rewritten to `\r`, the redraws collapse like any
/// other. A sequence cut by the end of a read is left to the cleaner,
/// which removes it.
fn column_one_as_carriage_return(bytes: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    const SEQUENCES: [&[u8]; 2] = [b"\x1b[G", b"\x1b[1G"];
    if !bytes.contains(&0x1b) {
        return std::borrow::Cow::Borrowed(bytes);
    }
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        let rest = &bytes[index..];
        if let Some(sequence) = SEQUENCES.iter().find(|sequence| rest.starts_with(sequence)) {
            out.push(b'\r');
            index += sequence.len();
        } else {
            out.push(bytes[index]);
            index += 1;
        }
    }
    std::borrow::Cow::Owned(out)
}

/// The log file: cleaned text, lines collapsed, up to a size limit.
#[derive(Debug)]
pub(crate) struct LogSink {
    file: std::fs::File,
    /// The line being written (collapsed when it ends).
    pending: String,
    written: u64,
    limit: u64,
    /// Writing stopped: the limit was hit or the disk failed.
    closed: bool,
}

impl LogSink {
    pub fn new(file: std::fs::File, limit: u64) -> Self {
        Self {
            file,
            pending: String::new(),
            written: 0,
            limit,
            closed: false,
        }
    }

    pub fn push(&mut self, text: &str) {
        if self.closed {
            return;
        }
        self.pending.push_str(text);
        if let Some(end) = self.pending.rfind('\n') {
            let complete: String = self.pending.drain(..=end).collect();
            self.write(&collapse_carriage_returns(&complete));
        } else if self.pending.len() > MAX_PENDING_LINE {
            let line = std::mem::take(&mut self.pending);
            self.write(&collapse_carriage_returns(&line));
        }
    }

    /// Writes the last, unfinished line.
    pub fn finish(&mut self) {
        let line = std::mem::take(&mut self.pending);
        if !line.is_empty() {
            self.write(&collapse_carriage_returns(&line));
        }
        let _ = self.file.flush();
    }

    fn write(&mut self, text: &str) {
        if self.closed {
            return;
        }
        let room = self.limit.saturating_sub(self.written);
        let result = if text.len() as u64 > room {
            self.closed = true;
            let mut cut = usize::try_from(room).unwrap_or(0);
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            self.file
                .write_all(&text.as_bytes()[..cut])
                .and_then(|()| self.file.write_all(b"\n[log file limit reached]\n"))
        } else {
            self.file.write_all(text.as_bytes())
        };
        self.written += text.len() as u64;
        if result.is_err() {
            self.closed = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_by_cursor_and_never_skips() {
        let mut window = TextWindow::new(DEFAULT_TEXT_CAPACITY, None);
        window.push(b"Continue? ", None);
        let first = window.read(0, usize::MAX);
        assert_eq!(first.text, "Continue? ");
        window.push(b"yes\r\ngot yes\r\n", None);
        let second = window.read(first.next, usize::MAX);
        assert_eq!(
            second,
            TextRead {
                text: "yes\ngot yes\n".to_owned(),
                next: 24,
                dropped: 0
            }
        );
    }

    #[test]
    fn a_move_to_column_one_redraws_the_line() {
        let mut window = TextWindow::new(DEFAULT_TEXT_CAPACITY, None);
        window.push(b"\x1b[1G> 6\x1b[1G\x1b[0J> 6*7\r\n42\r\n\x1b[G> ", None);
        assert_eq!(window.read(0, usize::MAX).text, "> 6*7\n42\n> ");
    }

    #[test]
    fn node_echoes_enter_as_two_carriage_returns() {
        // Bytes Node's REPL printed for `1+2` Enter.
        let mut window = TextWindow::new(DEFAULT_TEXT_CAPACITY, None);
        window.push(b"\x1b[1G\x1b[0J> \x1b[3G", None);
        window.push(
            b"1+2\r\r\n\x1b[33m3\x1b[39m\r\n\x1b[1G\x1b[0J> \x1b[3G",
            None,
        );
        assert_eq!(window.read(0, usize::MAX).text, "> 1+2\n3\n> ");
    }

    #[test]
    fn keeps_a_bounded_window_and_says_what_was_dropped() {
        let mut window = TextWindow::new(1024, None);
        for _ in 0..100 {
            window.push(&[b'x'; 100], None);
        }
        assert!(window.text.len() <= 1024);
        let read = window.read(0, usize::MAX);
        assert_eq!(read.next, 10_000);
        assert_eq!(read.dropped + read.text.len() as u64, 10_000);
        assert!(read.dropped > 0);
    }

    #[test]
    fn secrets_are_masked_in_the_window_and_the_log_even_when_cut() {
        let file = tempfile::NamedTempFile::new().expect("temp file");
        let mut sink = LogSink::new(file.reopen().expect("reopen"), 1 << 20);
        let redactor = Arc::new(Redactor::new([("API_TOKEN", "tok-0123456789abcdef")]));
        let mut window = TextWindow::new(DEFAULT_TEXT_CAPACITY, Some(redactor));
        window.push(b"token: tok-0123", Some(&mut sink));
        window.push(b"456789abcdef\r\npaste ", Some(&mut sink));
        window.push(b"key: tok-0123456", Some(&mut sink));
        // The program waits: what was held shows (the cut value masked).
        window.settle(Some(&mut sink));
        window.finish(Some(&mut sink));
        let expected = "token: [redacted: API_TOKEN]\npaste key: [redacted: API_TOKEN]";
        assert_eq!(window.read(0, usize::MAX).text, expected);
        assert_eq!(window.masked(), 2);
        assert_eq!(
            std::fs::read_to_string(file.path()).expect("read"),
            expected
        );
    }

    #[test]
    fn the_log_file_gets_collapsed_lines_up_to_its_limit() {
        let file = tempfile::NamedTempFile::new().expect("temp file");
        let mut sink = LogSink::new(file.reopen().expect("reopen"), 30);
        sink.push("10%\r50");
        sink.push("%\r100%\r\nnext\r\n");
        sink.push("a line that is too long for the limit\n");
        sink.finish();
        let text = std::fs::read_to_string(file.path()).expect("read");
        assert_eq!(
            text,
            "100%\nnext\na line that is too l\n[log file limit reached]\n"
        );
    }
}
