//! Streaming every line to the log file: `$ <command>`, then the lines
//! with a `stdout:`/`stderr:` header where the stream changes. A write error
//! turns logging off and is reported; it never fails the command.

use std::io::Write as _;

use crate::output::buffer::OutputBuffer;
use crate::output::chunk::Stream;

impl OutputBuffer {
    pub(super) fn flush_pending_to_log(&mut self, index: usize, stream: Stream) {
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
    pub(super) fn finish_logged_line(&mut self, index: usize, stream: Stream) {
        self.flush_pending_to_log(index, stream);
        if self.log_open_line == Some(stream) {
            self.log_write("\n");
            self.log_open_line = None;
        }
    }
    pub(super) fn log_begin_line(&mut self, stream: Stream) {
        if self.log_open_line.take().is_some() {
            self.log_write("\n");
        }
        if self.log_stream != Some(stream) {
            self.log_write_counted(&format!("{stream}:\n"), 1);
            self.log_stream = Some(stream);
        }
    }
    pub(super) fn log_write(&mut self, text: &str) {
        let newlines = memchr::memchr_iter(b'\n', text.as_bytes()).count();
        self.log_write_counted(text, newlines);
    }
    /// Writes `text`, which holds `newlines` line ends, to the log.
    pub(super) fn log_write_counted(&mut self, text: &str, newlines: usize) {
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
}
