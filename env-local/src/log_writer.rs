//! Writing one call's log: buffered, and past its size cap cut to the
//! output's first part and last part with a marker line between them
//! ([`CapLayout`]), in memory bounded by the buffer whatever the output's
//! size.
//!
//! Once the output outgrows the cap, what follows the first part is
//! written into a ring: the rest of the file, overwritten from its start
//! when it is full, behind a marker line that says so. Each byte is
//! written once, wherever the cap falls; rewriting the file's end in place
//! at every overflow instead (keeping the last half, reading it again for
//! its line count) cost a quarter of a `bashtool call` of a gigabyte of
//! output (docs/performance.md). When the writer is dropped (the command
//! ended), the ring's last part is put in order in a new file that takes
//! the log's name: its first part, the final marker, and the output's last
//! `tail` bytes from a line start. So the finished file depends on the
//! output alone, never on how it was written. Should that new file not be
//! made (a full disk), the log stays as it was written, its marker saying
//! that what follows it is out of order.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{FileExt as _, OpenOptionsExt as _};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use bashtool_core::{CappedLog, format_bytes};

use crate::logs::{CapLayout, mark_in_use, with_suffix};

/// Buffer of the log writer: few syscalls for chatty commands.
const LOG_BUFFER: usize = 256 * 1024;
/// Chunk in which the finished log is copied.
const COPY_CHUNK: usize = 256 * 1024;
/// How far around a cut the finished log looks for a line end, so that
/// its last part starts with a whole line.
const LINE_ALIGN: u64 = 4096;
/// The suffix of the file the finished log is put together in.
pub(crate) const FINISHING_SUFFIX: &str = ".part";

/// Line counts of the output written to a log (what [`CappedLog`] needs).
#[derive(Debug, Default, Clone, Copy)]
struct Lines {
    /// Output bytes written so far.
    bytes: u64,
    /// Line ends in the whole output.
    newlines: u64,
    /// Whether the last byte was a line end.
    ends_with_newline: bool,
    /// Line ends in the first part (the first `head` bytes).
    head_newlines: u64,
    /// Whether the first part ends with a line end (once it is complete).
    head_ends_line: bool,
}

/// How the finished, capped log is laid out (see [`CappedLog`]).
#[derive(Debug, Clone, Copy)]
struct Cut {
    /// Line ends in what the file keeps of the last part.
    kept_newlines: u64,
}

/// The last part of an output past its cap, while it is written: the file
/// from `start` to the cap, filled from its start again when full.
#[derive(Debug, Clone, Copy)]
struct Ring {
    /// Where it starts in the file (after the first part and the marker).
    start: u64,
    /// Where the next byte goes.
    at: u64,
    /// How many of its bytes hold output (all, once it went round).
    held: u64,
}

/// A log file being written (see the module docs).
#[derive(Debug)]
pub struct LogWriter {
    file: File,
    path: PathBuf,
    /// Bytes waiting to be written at `end` (or into the ring).
    buffer: Vec<u8>,
    /// Length of the file (without the buffer).
    end: u64,
    layout: CapLayout,
    ring: Option<Ring>,
    lines: Lines,
    pub(crate) written: Arc<AtomicU64>,
    pub(crate) capped: Arc<Mutex<Option<CappedLog>>>,
    pub(crate) open: Arc<AtomicBool>,
}

impl LogWriter {
    pub(crate) fn new(file: File, path: PathBuf, layout: CapLayout) -> Self {
        Self {
            file,
            path,
            buffer: Vec::with_capacity(LOG_BUFFER),
            end: 0,
            layout,
            ring: None,
            lines: Lines::default(),
            written: Arc::new(AtomicU64::new(0)),
            capped: Arc::new(Mutex::new(None)),
            open: Arc::new(AtomicBool::new(true)),
        }
    }

    /// Counts the lines of `bytes`, the output that follows what was
    /// counted so far.
    fn count(&mut self, bytes: &[u8]) {
        let lines = &mut self.lines;
        let in_head = usize::try_from(self.layout.head.saturating_sub(lines.bytes))
            .unwrap_or(usize::MAX)
            .min(bytes.len());
        let head_newlines = memchr::memchr_iter(b'\n', &bytes[..in_head]).count() as u64;
        let rest_newlines = memchr::memchr_iter(b'\n', &bytes[in_head..]).count() as u64;
        lines.head_newlines += head_newlines;
        lines.newlines += head_newlines + rest_newlines;
        lines.bytes += bytes.len() as u64;
        if in_head > 0 && lines.bytes >= self.layout.head {
            lines.head_ends_line = bytes[in_head - 1] == b'\n';
        }
        if let Some(&last) = bytes.last() {
            lines.ends_with_newline = last == b'\n';
        }
    }

    /// Capacity of the ring that starts at `start`.
    fn ring_room(&self, start: u64) -> u64 {
        self.layout.cap - start
    }

    fn flush_buffer(&mut self) -> std::io::Result<()> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        let buffer = std::mem::take(&mut self.buffer);
        let outcome = if self.ring.is_some() {
            self.write_ring(&buffer)
        } else {
            let outcome = self.file.write_all_at(&buffer, self.end);
            if outcome.is_ok() {
                self.end += buffer.len() as u64;
            }
            outcome
        };
        self.buffer = buffer;
        self.buffer.clear();
        outcome
    }

    /// Writes `bytes` into the ring (only their last ring's worth, when
    /// more).
    fn write_ring(&mut self, mut bytes: &[u8]) -> std::io::Result<()> {
        let Some(mut ring) = self.ring else {
            return Ok(());
        };
        let room = self.ring_room(ring.start);
        if bytes.len() as u64 >= room {
            bytes = &bytes[bytes.len() - usize::try_from(room).unwrap_or(usize::MAX)..];
            ring.at = ring.start;
        }
        while !bytes.is_empty() {
            let space = usize::try_from(self.layout.cap - ring.at)
                .unwrap_or(usize::MAX)
                .min(bytes.len());
            self.file.write_all_at(&bytes[..space], ring.at)?;
            ring.at += space as u64;
            ring.held = (ring.held + space as u64).min(room);
            self.end = self.end.max(ring.at);
            if ring.at == self.layout.cap {
                ring.at = ring.start;
            }
            bytes = &bytes[space..];
        }
        self.ring = Some(ring);
        Ok(())
    }

    /// The output outgrew the cap with `bytes` (counted, not written): the
    /// first part is completed, the marker of a log being written goes
    /// after it, and what follows is the ring. The marker covers the
    /// oldest bytes after the first part, which the finished log never
    /// keeps.
    fn start_ring(&mut self, mut bytes: &[u8]) -> std::io::Result<()> {
        let head = self.layout.head;
        if self.end < head {
            let fill = usize::try_from(head - self.end)
                .unwrap_or(usize::MAX)
                .min(bytes.len());
            self.file.write_all_at(&bytes[..fill], self.end)?;
            self.end += fill as u64;
            bytes = &bytes[fill..];
        }
        let separator = if self.lines.head_ends_line { "" } else { "\n" };
        let marker = format!(
            "{separator}[... the output is over the log's size cap of {}: until the command \
             ends, what follows holds its latest part out of order; then the log keeps its \
             first and last parts, in order ...]\n",
            format_bytes(self.layout.cap)
        );
        let start = head + marker.len() as u64;
        self.file.write_all_at(marker.as_bytes(), head)?;
        self.end = self.end.max(start);
        self.ring = Some(Ring {
            start,
            at: start.max(self.end),
            held: self.end - start,
        });
        if self.end == self.layout.cap
            && let Some(ring) = &mut self.ring
        {
            ring.at = ring.start;
        }
        self.write_ring(bytes)
    }

    /// Reads `buffer.len()` bytes of the ring's content from `from` (0 is
    /// its oldest byte held).
    fn read_ring(&self, ring: Ring, from: u64, buffer: &mut [u8]) -> std::io::Result<()> {
        let room = self.ring_room(ring.start);
        // The oldest byte: the next to be overwritten once it went round.
        let oldest = if ring.held == room {
            ring.at
        } else {
            ring.start
        };
        let mut filled = 0;
        while filled < buffer.len() {
            let logical = from + filled as u64;
            let mut physical = oldest + logical;
            if physical >= self.layout.cap {
                physical -= room;
            }
            let count = usize::try_from(self.layout.cap - physical)
                .unwrap_or(usize::MAX)
                .min(buffer.len() - filled);
            self.file
                .read_exact_at(&mut buffer[filled..filled + count], physical)?;
            filled += count;
        }
        Ok(())
    }

    /// Hands the ring's content from `from` to its end to `each`, in
    /// order, a chunk's worth at a time.
    fn each_ring_chunk(
        &self,
        ring: Ring,
        mut from: u64,
        chunk: &mut [u8],
        mut each: impl FnMut(&[u8]) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        while from < ring.held {
            let length = usize::try_from(ring.held - from)
                .unwrap_or(usize::MAX)
                .min(chunk.len());
            self.read_ring(ring, from, &mut chunk[..length])?;
            each(&chunk[..length])?;
            from += length as u64;
        }
        Ok(())
    }

    /// Where the finished log's last part starts in the ring: the last
    /// `tail` bytes, from a line end shortly before them, else shortly
    /// after; `true` when no line end was near (it starts inside a line).
    fn cut(&self, ring: Ring, chunk: &mut [u8]) -> std::io::Result<(u64, bool)> {
        let total = ring.held;
        let mut cut = total.saturating_sub(self.layout.tail);
        if cut == 0 {
            return Ok((0, false));
        }
        let align = LINE_ALIGN.min(self.layout.cap / 16);
        let from = cut.saturating_sub(align);
        let length = usize::try_from(cut - from).unwrap_or(0);
        self.read_ring(ring, from, &mut chunk[..length])?;
        if let Some(newline) = memchr::memrchr(b'\n', &chunk[..length]) {
            return Ok((from + newline as u64 + 1, false));
        }
        let length = usize::try_from(align.min(total - cut)).unwrap_or(0);
        self.read_ring(ring, cut, &mut chunk[..length])?;
        match memchr::memchr(b'\n', &chunk[..length]) {
            Some(newline) => {
                cut += newline as u64 + 1;
                Ok((cut, false))
            }
            None => Ok((cut, true)),
        }
    }

    /// Puts the finished log together (see the module docs) in a new file
    /// that then takes the log's name.
    fn finish_ring(&mut self, ring: Ring) -> std::io::Result<()> {
        let mut chunk = vec![0_u8; COPY_CHUNK];
        let (cut, mid_line) = self.cut(ring, &mut chunk)?;
        let head = self.layout.head;
        let part = with_suffix(&self.path, FINISHING_SUFFIX);
        let _ = std::fs::remove_file(&part);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&part)?;
        let assembled = self.assemble(&file, ring, cut, mid_line, &mut chunk);
        let renamed = assembled.and_then(|cut| {
            mark_in_use(&file)?;
            std::fs::rename(&part, &self.path)?;
            Ok(cut)
        });
        let cut_lines = match renamed {
            Ok(cut_lines) => cut_lines,
            Err(error) => {
                let _ = std::fs::remove_file(&part);
                return Err(error);
            }
        };
        self.file = file;
        self.end = self.file.metadata().map_or(head, |metadata| metadata.len());
        self.publish(cut_lines);
        Ok(())
    }

    /// Writes the finished log into `file`: the first part, the marker and
    /// the ring's content from `cut`.
    fn assemble(
        &self,
        file: &File,
        ring: Ring,
        cut: u64,
        mid_line: bool,
        chunk: &mut [u8],
    ) -> std::io::Result<Cut> {
        let head = self.layout.head;
        let mut position = 0;
        while position < head {
            let length = usize::try_from(head - position)
                .unwrap_or(usize::MAX)
                .min(chunk.len());
            self.file.read_exact_at(&mut chunk[..length], position)?;
            file.write_all_at(&chunk[..length], position)?;
            position += length as u64;
        }
        // The marker tells the kept part's first line number: its lines
        // are counted first (a read of the page cache), then it is copied.
        let mut kept_newlines = 0;
        self.each_ring_chunk(ring, cut, chunk, |bytes| {
            kept_newlines += memchr::memchr_iter(b'\n', bytes).count() as u64;
            Ok(())
        })?;
        let marker = self.marker(ring, cut, kept_newlines, mid_line);
        file.write_all_at(marker.as_bytes(), head)?;
        let mut target = head + marker.len() as u64;
        self.each_ring_chunk(ring, cut, chunk, |bytes| {
            file.write_all_at(bytes, target)?;
            target += bytes.len() as u64;
            Ok(())
        })?;
        Ok(Cut { kept_newlines })
    }

    /// The finished log's marker line, the newline before it included.
    fn marker(&self, ring: Ring, cut: u64, kept_newlines: u64, mid_line: bool) -> String {
        let lines = &self.lines;
        let kept = ring.held - cut;
        let omitted = lines.bytes.saturating_sub(self.layout.head) - kept;
        let next_line = lines.newlines - kept_newlines + 1;
        let separator = if lines.head_ends_line { "" } else { "\n" };
        let next = if mid_line {
            format!("the next line is the end of line {next_line} of the full log")
        } else {
            format!("the next line is line {next_line} of the full log")
        };
        format!(
            "{separator}[... {} omitted here: the output was over the log's size cap of {}; {next} ...]\n",
            format_bytes(omitted),
            format_bytes(self.layout.cap)
        )
    }

    /// What the model is told about the finished log (see [`CappedLog`]).
    fn publish(&self, cut: Cut) {
        let lines = &self.lines;
        let head_last_line = lines.head_newlines + u64::from(!lines.head_ends_line);
        let last_line = lines.newlines + u64::from(lines.bytes > 0 && !lines.ends_with_newline);
        let capped = CappedLog {
            cap_bytes: self.layout.cap,
            head_last_line,
            tail_first_line: lines.newlines - cut.kept_newlines + 1,
            last_line,
            // The first part's lines, then the marker's line.
            tail_first_file_line: head_last_line + 2,
        };
        *self.capped.lock().unwrap_or_else(PoisonError::into_inner) = Some(capped);
    }
}

impl Write for LogWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.count(bytes);
        let length = self.end + self.buffer.len() as u64;
        if self.ring.is_some() || length + bytes.len() as u64 <= self.layout.cap {
            self.buffer.extend_from_slice(bytes);
            if self.buffer.len() >= LOG_BUFFER {
                self.flush_buffer()?;
            }
        } else {
            self.flush_buffer()?;
            self.start_ring(bytes)?;
        }
        // The size of the file once the buffer is written: never more
        // than the cap (the ring's writes wrap inside it).
        let size = (self.end + self.buffer.len() as u64).min(self.layout.cap);
        self.written.store(size, Ordering::Relaxed);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.flush_buffer()
    }
}

impl Drop for LogWriter {
    fn drop(&mut self) {
        let _ = self.flush_buffer();
        if let Some(ring) = self.ring {
            let _ = self.finish_ring(ring);
        }
        self.written.store(self.end, Ordering::Relaxed);
        self.open.store(false, Ordering::Relaxed);
    }
}
