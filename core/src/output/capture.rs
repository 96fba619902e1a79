//! Core's end of a command's output. An environment hands over raw bytes as
//! they arrive, per stream; the capture cleans them (UTF-8 reassembly,
//! ANSI/OSC stripping), keeps the bounded windows of the tool's
//! [`OutputConfig`], streams every line to the log writer the environment
//! attached, and passes the cleaned text to the live sink. So every adapter
//! gets the same cleaning and the same budget, and none holds an
//! `OutputConfig` of its own.
//!
//! With a [`Redactor`] ([`OutputCapture::redacting`]), secrets are masked
//! right after cleaning, before anything else sees the text: the buffer
//! (so the model and the log), the live sink (progress) and the tap.

use std::io::Write;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::config::OutputConfig;
use crate::output::buffer::OutputBuffer;
use crate::output::chunk::{OutputChunk, OutputSink, Stream};
use crate::output::clean::StreamCleaner;
use crate::output::lines::OutputLine;
use crate::redact::{RedactStream, Redactor};

/// Where one command's output goes. Cheap to clone: clones feed the same
/// capture (an environment may read stdout and stderr on two tasks).
#[derive(Clone)]
pub struct OutputCapture {
    inner: Arc<Mutex<CaptureState>>,
}

struct CaptureState {
    buffer: OutputBuffer,
    cleaners: [StreamCleaner; 2],
    /// Cleaned text when it had to be rebuilt (escapes, invalid UTF-8).
    scratch: String,
    sink: Option<OutputSink>,
    raw_tap: Option<RawTap>,
    /// Each stream's masking, when secrets are masked.
    redaction: Option<Redaction>,
}

struct Redaction {
    streams: [RedactStream; 2],
    /// Masked elsewhere (the far side of a remote environment).
    elsewhere: u64,
}

/// Sees every raw byte pushed into a capture, before cleaning, in arrival
/// order (a server that forwards the bytes to a remote client); when the
/// capture masks secrets, the cleaned and masked text instead, so that no
/// secret leaves through it.
pub type RawTap = Arc<dyn Fn(Stream, &[u8]) + Send + Sync>;

impl std::fmt::Debug for OutputCapture {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("OutputCapture")
            .field("buffer", &self.lock().buffer)
            .finish_non_exhaustive()
    }
}

impl Default for OutputCapture {
    fn default() -> Self {
        Self::new(&OutputConfig::default(), None)
    }
}

fn index(stream: Stream) -> usize {
    match stream {
        Stream::Stdout => 0,
        Stream::Stderr => 1,
    }
}

impl OutputCapture {
    /// A capture with `config`'s windows, sending cleaned text to `sink`.
    pub fn new(config: &OutputConfig, sink: Option<OutputSink>) -> Self {
        Self {
            inner: Arc::new(Mutex::new(CaptureState {
                buffer: OutputBuffer::new(config),
                cleaners: [StreamCleaner::new(), StreamCleaner::new()],
                scratch: String::new(),
                sink,
                raw_tap: None,
                redaction: None,
            })),
        }
    }

    /// Masks secrets with `redactor` from now on (before the first byte),
    /// or not when `None`.
    #[must_use]
    pub fn redacting(self, redactor: Option<Arc<Redactor>>) -> Self {
        self.lock().redaction = redactor.map(|redactor| Redaction {
            streams: [
                RedactStream::new(Arc::clone(&redactor)),
                RedactStream::new(redactor),
            ],
            elsewhere: 0,
        });
        self
    }

    /// The redactor this capture masks with, if any: an environment masks
    /// what it keeps beside the capture with it too (a background job's
    /// output file, an interactive job's transcript).
    pub fn redactor(&self) -> Option<Arc<Redactor>> {
        self.lock()
            .redaction
            .as_ref()
            .map(|redaction| Arc::clone(redaction.streams[0].redactor()))
    }

    /// Counts `count` secrets masked before the bytes reached this capture
    /// (by a remote environment's server), for the result's note.
    pub fn add_redacted(&self, count: u64) {
        if let Some(redaction) = &mut self.lock().redaction {
            redaction.elsewhere += count;
        }
    }

    fn lock(&self) -> MutexGuard<'_, CaptureState> {
        // Every update is complete before the lock is released, except a
        // panic inside the buffer, after which a partial line is the worst.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Streams the full output to `log` from now on: `$ <command>`, then
    /// every line with a `stdout:`/`stderr:` header where the stream
    /// changes. Attach it before the first byte arrives.
    pub fn attach_log(&self, log: Box<dyn Write + Send>, command: &str) {
        let mut state = self.lock();
        let command = match &state.redaction {
            Some(redaction) => redaction.streams[0].redactor().redact(command).into_owned(),
            None => command.to_owned(),
        };
        state.buffer.set_log(log, &command);
    }

    /// Hands every raw byte pushed from now on to `tap` as well, unchanged,
    /// under the capture's lock so the order across streams is kept. For a
    /// server that forwards a command's bytes to a client whose own capture
    /// cleans and bounds them (`bashtool serve`).
    pub fn set_raw_tap(&self, tap: RawTap) {
        self.lock().raw_tap = Some(tap);
    }

    /// Takes the next raw bytes of `stream`. They may end anywhere, in the
    /// middle of a character or an escape sequence.
    pub fn push(&self, stream: Stream, bytes: &[u8]) {
        let mut guard = self.lock();
        let state = &mut *guard;
        let Some(redaction) = &mut state.redaction else {
            if let Some(tap) = &state.raw_tap {
                tap(stream, bytes);
            }
            let text = state.cleaners[index(stream)].clean(bytes, &mut state.scratch);
            deliver(&mut state.buffer, state.sink.as_ref(), None, stream, text);
            return;
        };
        let text = state.cleaners[index(stream)].clean(bytes, &mut state.scratch);
        let (buffer, sink, tap) = (
            &mut state.buffer,
            state.sink.as_ref(),
            state.raw_tap.as_ref(),
        );
        redaction.streams[index(stream)].push_str(text, |masked| {
            deliver(buffer, sink, tap, stream, masked);
        });
    }

    /// Takes text that is already clean (an environment that cleaned on its
    /// side, a mock). Escapes in it are still removed.
    pub fn push_text(&self, stream: Stream, text: &str) {
        self.push(stream, text.as_bytes());
    }

    /// The stream ended: a character cut off at its end becomes U+FFFD.
    pub fn end_stream(&self, stream: Stream) {
        let mut guard = self.lock();
        let state = &mut *guard;
        state.scratch.clear();
        state.cleaners[index(stream)].finish(&mut state.scratch);
        let text = state.scratch.as_str();
        let (buffer, sink, tap) = (
            &mut state.buffer,
            state.sink.as_ref(),
            state.raw_tap.as_ref(),
        );
        match &mut state.redaction {
            Some(redaction) => {
                let masking = &mut redaction.streams[index(stream)];
                masking.push_str(text, |masked| deliver(buffer, sink, tap, stream, masked));
                masking.finish_str(|masked| deliver(buffer, sink, tap, stream, masked));
            }
            None => deliver(buffer, sink, None, stream, text),
        }
    }

    /// Ends both streams and returns the finished buffer. The capture is
    /// empty afterwards (a second call returns an empty finished buffer).
    pub fn finish(&self) -> OutputBuffer {
        self.end_stream(Stream::Stdout);
        self.end_stream(Stream::Stderr);
        let mut state = self.lock();
        let config = state.buffer.config().clone();
        let mut buffer = std::mem::replace(&mut state.buffer, OutputBuffer::new(&config));
        buffer.finish();
        if let Some(redaction) = &mut state.redaction {
            let count = redaction.elsewhere
                + redaction
                    .streams
                    .iter()
                    .map(RedactStream::masked)
                    .sum::<u64>();
            buffer.set_redacted(count);
        }
        buffer
    }

    /// The retained lines so far and how many lines were dropped between
    /// the head and the tail: what a UI shows while the command runs.
    pub fn retained_lines(&self) -> (Vec<OutputLine>, u64) {
        let state = self.lock();
        let (lines, omitted) = state.buffer.retained();
        (lines.into_iter().cloned().collect(), omitted)
    }

    /// Bytes and lines seen so far.
    pub fn totals(&self) -> (u64, u64) {
        let state = self.lock();
        (state.buffer.total_bytes(), state.buffer.total_lines())
    }
}

/// Hands cleaned (and masked) text on: to the buffer, the live sink and,
/// when given, the tap.
fn deliver(
    buffer: &mut OutputBuffer,
    sink: Option<&OutputSink>,
    tap: Option<&RawTap>,
    stream: Stream,
    text: &str,
) {
    if text.is_empty() {
        return;
    }
    if let Some(tap) = tap {
        tap(stream, text.as_bytes());
    }
    buffer.push(stream, text);
    if let Some(sink) = sink {
        sink(&OutputChunk {
            stream,
            text: text.to_owned(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cleans_bytes_split_anywhere_and_keeps_arrival_order() {
        let capture = OutputCapture::default();
        let crab = "🦀".as_bytes();
        capture.push(Stream::Stdout, b"\x1b[31");
        capture.push(Stream::Stdout, b"mred\x1b[0m ");
        capture.push(Stream::Stdout, &crab[..2]);
        capture.push(Stream::Stderr, b"oops\n");
        capture.push(Stream::Stdout, &crab[2..]);
        capture.push(Stream::Stdout, b"\n");
        let buffer = capture.finish();
        let lines: Vec<(Stream, String)> = buffer
            .retained()
            .0
            .into_iter()
            .map(|line| (line.stream, line.text.clone()))
            .collect();
        assert_eq!(
            lines,
            vec![
                (Stream::Stderr, "oops".to_owned()),
                (Stream::Stdout, "red 🦀".to_owned()),
            ]
        );
    }

    #[test]
    fn a_character_cut_at_the_end_becomes_a_replacement() {
        let capture = OutputCapture::default();
        capture.push(Stream::Stdout, b"end\xe2\x82");
        let buffer = capture.finish();
        assert_eq!(buffer.retained().0[0].text, "end\u{FFFD}");
    }

    #[test]
    fn the_raw_tap_gets_the_bytes_unchanged_in_order() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let tap_seen = Arc::clone(&seen);
        let capture = OutputCapture::default();
        capture.set_raw_tap(Arc::new(move |stream, bytes: &[u8]| {
            tap_seen
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push((stream, bytes.to_vec()));
        }));
        capture.push(Stream::Stdout, b"\x1b[31mred\xff");
        capture.push(Stream::Stderr, b"\r\n");
        assert_eq!(
            *seen.lock().unwrap_or_else(PoisonError::into_inner),
            vec![
                (Stream::Stdout, b"\x1b[31mred\xff".to_vec()),
                (Stream::Stderr, b"\r\n".to_vec()),
            ]
        );
    }

    #[test]
    fn the_sink_gets_cleaned_text() {
        let seen = Arc::new(Mutex::new(String::new()));
        let sink_seen = Arc::clone(&seen);
        let sink: OutputSink = Arc::new(move |chunk: &OutputChunk| {
            sink_seen
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push_str(&chunk.text);
        });
        let capture = OutputCapture::new(&OutputConfig::default(), Some(sink));
        capture.push(Stream::Stdout, b"\x1b]0;title\x07hi\n");
        assert_eq!(*seen.lock().unwrap_or_else(PoisonError::into_inner), "hi\n");
    }
}
