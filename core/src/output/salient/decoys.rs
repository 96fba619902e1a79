//! Decoys: error-like lines that are usually noise. A failure listed under
//! a `Pending:` or `Skipped:` heading (rspec prints `Failure/Error` for
//! pending examples), and an error-like line whose shape (its text less
//! numbers, quoted strings and hex) was already seen in [`FREQUENT`]
//! error-like lines, like the dozens of harmless `ENOENT` lines of an
//! `strace` run before the one that matters. Only error-like lines are
//! hashed: the rest of a big output pays for the heading check alone.
//!
//! Bounded: at most [`MAX_SHAPES`] shapes are counted.

use std::collections::HashMap;

/// How often a shape must have been seen before its lines are decoys.
const FREQUENT: u32 = 3;
/// The most shapes counted at once.
const MAX_SHAPES: usize = 1024;
/// Bytes of a line that make its shape.
const SHAPE_BYTES: usize = 160;

/// Headings of sections whose failures are expected.
const DECOY_HEADINGS: &[&str] = &[
    "pending", "skipped", "ignored", "todo", "xfail", "xfailed", "expected",
];

#[derive(Debug, Default)]
pub(crate) struct DecoyWatch {
    shapes: HashMap<u64, u32>,
    in_decoy_section: bool,
}

impl DecoyWatch {
    /// Whether the error-like line `text` (not yet observed) is a decoy.
    pub(crate) fn is_decoy(&self, text: &str) -> bool {
        self.in_decoy_section
            || self
                .shapes
                .get(&shape(text))
                .is_some_and(|seen| *seen >= FREQUENT)
    }

    /// Notes a line of the output (every line, in order; `salient` when it
    /// is error-like).
    pub(crate) fn observe(&mut self, text: &str, salient: bool) {
        if let Some(heading) = section_heading(text) {
            self.in_decoy_section = DECOY_HEADINGS
                .iter()
                .any(|decoy| heading.eq_ignore_ascii_case(decoy));
        }
        if !salient {
            return;
        }
        let key = shape(text);
        if let Some(seen) = self.shapes.get_mut(&key) {
            *seen = seen.saturating_add(1);
        } else if self.shapes.len() < MAX_SHAPES {
            self.shapes.insert(key, 1);
        }
    }
}

/// `Pending:` in `Pending: (Failures listed here are expected …)`: the first
/// word of a line that is not indented, when a colon ends it.
fn section_heading(text: &str) -> Option<&str> {
    // The colon first (memchr): most lines have none, or a non-letter
    // before it, and this runs on every line of the output.
    let colon = memchr::memchr(b':', text.as_bytes())?;
    let word = &text[..colon];
    (colon > 0 && word.bytes().all(|byte| byte.is_ascii_alphabetic())).then_some(word)
}

/// A hash of the line's first bytes without digits, hex numbers and the
/// contents of quoted strings: the lines one loop prints share it.
fn shape(text: &str) -> u64 {
    // FNV-1a: this runs on every line, and needs no protection against
    // chosen collisions (a collision only changes what is shown first).
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut quote: Option<u8> = None;
    let mut previous = 0_u8;
    for &byte in text.as_bytes().iter().take(SHAPE_BYTES) {
        let skip = match quote {
            Some(open) => {
                if byte == open {
                    quote = None;
                }
                true
            }
            None if byte == b'"' || byte == b'\'' => {
                quote = Some(byte);
                false
            }
            None => {
                byte.is_ascii_digit() || (byte.is_ascii_hexdigit() && previous.is_ascii_hexdigit())
            }
        };
        previous = byte;
        if !skip {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shape_seen_often_marks_its_lines_as_decoys() {
        let mut watch = DecoyWatch::default();
        let line = |path: &str| {
            format!(
                "openat(AT_FDCWD, \"{path}\", O_RDONLY) = -1 ENOENT (No such file or directory)"
            )
        };
        for path in ["/a", "/b/c", "/d"] {
            assert!(!watch.is_decoy(&line(path)));
            watch.observe(&line(path), true);
        }
        assert!(watch.is_decoy(&line("/e")));
        assert!(
            !watch.is_decoy("openat(AT_FDCWD, \"conf\", O_RDONLY) = -1 EACCES (Permission denied)")
        );
    }

    #[test]
    fn failures_under_a_pending_heading_are_decoys_until_the_next_heading() {
        let mut watch = DecoyWatch::default();
        watch.observe(
            "Pending: (Failures listed here are expected and do not affect your suite's status)",
            false,
        );
        watch.observe("", false);
        assert!(watch.is_decoy("     Failure/Error: expect(1).to eq(2)"));
        watch.observe("Failures:", false);
        assert!(!watch.is_decoy("     Failure/Error: expect(1).to eq(2)"));
    }
}
