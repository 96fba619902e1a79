//! Masking a stream that arrives in pieces cut anywhere: a secret printed
//! in two writes (`printf %s "${T:0:10}"; printf %s "${T:10}"`) is masked
//! as if it had come in one.
//!
//! The end of each piece that could still become a secret (the start of a
//! literal, a token whose end has not come, a private key block before its
//! `END` line) is held back and looked at again with the next piece; the
//! rest is passed on at once. What is held is bounded: at most the longest
//! literal on the last line, or what a shape's check reads (a block of 64
//! KiB at most), and half as much again of what came since it was last
//! looked at (a large held part is scanned again only once that much more
//! came, so a block written a byte at a time costs linear time, not
//! quadratic). The result does not depend on where the stream was cut.
//!
//! Nothing is copied in the common case: a piece with no secret is passed
//! on as it came. Held bytes are decided together with the start of the
//! next piece only (a window), and the rest of that piece is again passed
//! on uncopied.

use std::ops::Range;
use std::sync::Arc;

use super::engine::Cache;
use super::redactor::{Redactor, Replacement};
use super::verdict::Text;

/// How much of the next piece held bytes are first decided with (more is
/// taken only when a check needs it). Tiny in tests, so that the property
/// tests go through every path.
const WINDOW: usize = if cfg!(test) { 16 } else { 8 * 1024 };
/// Held bytes from this size on are looked at again only once the bytes
/// that came since are half as many (see `push_inner`). Tiny in
/// tests, for the same reason.
const RESCAN_FLOOR: usize = if cfg!(test) { 24 } else { 1024 };

/// A decided part of the output: a range of the input, as it came, or
/// text built with masks in it.
enum Piece<'a> {
    Input(Range<usize>),
    Built(&'a [u8]),
}

/// One stream's masking state. Feed it with [`RedactStream::push`] in
/// order and end it with [`RedactStream::finish`]; what is decided is
/// handed to a callback, in order, in one or more parts.
#[derive(Debug)]
pub struct RedactStream {
    redactor: Arc<Redactor>,
    /// Bytes received and not yet decided.
    pending: Vec<u8>,
    /// The held bytes and a window of the next piece, while scanned.
    work: Vec<u8>,
    /// Masked text being built.
    out: Vec<u8>,
    /// How many of `pending` the last scan saw.
    scanned: usize,
    /// The byte before `pending` (a newline at the start).
    before: u8,
    replacements: Vec<Replacement>,
    cache: Cache,
    masked: u64,
}

impl RedactStream {
    /// A stream at its start.
    pub fn new(redactor: Arc<Redactor>) -> Self {
        Self {
            redactor,
            pending: Vec::new(),
            scanned: 0,
            work: Vec::new(),
            out: Vec::new(),
            before: b'\n',
            replacements: Vec::new(),
            cache: Cache::default(),
            masked: 0,
        }
    }

    /// The redactor it masks with.
    pub fn redactor(&self) -> &Arc<Redactor> {
        &self.redactor
    }

    /// How many secrets it masked so far.
    pub fn masked(&self) -> u64 {
        self.masked
    }

    /// True while bytes are held back, undecided.
    pub fn is_holding(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Takes the next bytes; hands what is decided, masked, to `emit`.
    pub fn push(&mut self, input: &[u8], mut emit: impl FnMut(&[u8])) {
        self.push_inner(input, false, &mut |piece| match piece {
            Piece::Input(range) => emit(&input[range]),
            Piece::Built(bytes) => emit(bytes),
        });
    }

    /// [`RedactStream::push`] for text, which is cut at character
    /// boundaries only: the parts are text too.
    pub fn push_str(&mut self, input: &str, mut emit: impl FnMut(&str)) {
        self.push_inner(input.as_bytes(), false, &mut |piece| {
            emit_text(input, piece, &mut emit);
        });
    }

    /// The stream ended: everything held is decided (a secret's value cut
    /// off after 8 or more of its characters is masked) and handed to
    /// `emit`. The stream can go on afterwards, as if a new one began.
    pub fn finish(&mut self, mut emit: impl FnMut(&[u8])) {
        self.push_inner(&[], true, &mut |piece| {
            if let Piece::Built(bytes) = piece {
                emit(bytes);
            }
        });
        self.before = b'\n';
    }

    /// [`RedactStream::finish`] for text.
    pub fn finish_str(&mut self, mut emit: impl FnMut(&str)) {
        self.push_inner(&[], true, &mut |piece| emit_text("", piece, &mut emit));
        self.before = b'\n';
    }

    fn push_inner(&mut self, input: &[u8], last: bool, emit: &mut dyn FnMut(Piece<'_>)) {
        // Held bytes are scanned again from their start. A large held part
        // (a private key block written a few bytes at a time) is looked at
        // again only once the bytes that came since are half its size, so
        // each byte is scanned a bounded number of times and the cost stays
        // linear however the output is cut.
        let unscanned = self.pending.len() - self.scanned + input.len();
        if !last && self.scanned >= RESCAN_FLOOR && unscanned * 2 < self.scanned {
            self.pending.extend_from_slice(input);
            return;
        }
        let mut from = 0;
        if !self.pending.is_empty() || last {
            let held = self.pending.len();
            let mut take = char_start(input, input.len().min(WINDOW.max(held)));
            let mut work = std::mem::take(&mut self.work);
            let decided = loop {
                work.clear();
                work.extend_from_slice(&self.pending);
                work.extend_from_slice(&input[..take]);
                let decided = self.scan(&work, last && take == input.len());
                if decided >= held || take == input.len() {
                    break decided;
                }
                // The held bytes need more of this piece to be decided.
                take = input.len();
            };
            self.pending.clear();
            self.scanned = 0;
            if decided > 0 {
                self.before = work[decided - 1];
            }
            self.emit_built(&work, decided, emit);
            if decided < held + take {
                if decided >= held && take < input.len() {
                    // Decided into the window: the rest of the piece is
                    // scanned as a piece of its own, from there.
                    from = decided - held;
                } else {
                    self.pending.extend_from_slice(&work[decided..]);
                    self.scanned = self.pending.len();
                    self.work = work;
                    return;
                }
            } else {
                from = take;
            }
            self.work = work;
        }
        if from == input.len() {
            return;
        }
        let rest = &input[from..];
        let decided = self.scan(rest, last);
        if decided > 0 {
            self.before = rest[decided - 1];
        }
        if self.replacements.is_empty() {
            if decided > 0 {
                emit(Piece::Input(from..from + decided));
            }
        } else {
            self.emit_built(rest, decided, emit);
        }
        self.pending.extend_from_slice(&rest[decided..]);
        self.scanned = self.pending.len();
    }

    /// Hands `bytes[..decided]` with the scan's replacements to `emit`.
    fn emit_built(&mut self, bytes: &[u8], decided: usize, emit: &mut dyn FnMut(Piece<'_>)) {
        if decided == 0 {
            return;
        }
        self.masked += self.replacements.len() as u64;
        let mut out = std::mem::take(&mut self.out);
        out.clear();
        self.redactor
            .write(bytes, decided, &self.replacements, &mut out);
        emit(Piece::Built(&out));
        self.out = out;
    }

    /// Scans `bytes`, which start where the undecided part does.
    fn scan(&mut self, bytes: &[u8], last: bool) -> usize {
        self.replacements.clear();
        self.redactor.scan(
            &Text {
                bytes,
                before: self.before,
                last,
            },
            &mut self.replacements,
            &mut self.cache,
        )
    }
}

/// Moves `at` back to the start of a UTF-8 character, so that a window of
/// text ends between characters.
fn char_start(bytes: &[u8], mut at: usize) -> usize {
    while at > 0 && at < bytes.len() && bytes[at] & 0xc0 == 0x80 {
        at -= 1;
    }
    at
}

fn emit_text(input: &str, piece: Piece<'_>, emit: &mut dyn FnMut(&str)) {
    match piece {
        Piece::Input(range) => match input.get(range.clone()) {
            Some(text) => emit(text),
            None => emit(&String::from_utf8_lossy(&input.as_bytes()[range])),
        },
        Piece::Built(bytes) => match std::str::from_utf8(bytes) {
            Ok(text) => emit(text),
            Err(_) => emit(&String::from_utf8_lossy(bytes)),
        },
    }
}
