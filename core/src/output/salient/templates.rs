//! Templates: a line with its variable parts masked (numbers, hex ids and
//! hashes, paths and file names, quoted strings, durations, percentages),
//! so that the lines one loop prints share one template whatever the values
//! they carry; and a bounded table of how often each template was seen.
//!
//! The template is never built as a string on the hot path: [`template_key`]
//! hashes the masked bytes as it scans them, one pass over the first
//! [`TEMPLATE_BYTES`] bytes of the line. [`template_display`] builds the
//! readable form (`checked src/module_N.py (N ms)`) only for the few
//! templates a marker names.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Bytes of a line that make its template: enough for the words that say
/// what kind of line it is, cheap for a line of megabytes.
pub(crate) const TEMPLATE_BYTES: usize = 192;
/// The most templates counted at once.
pub(crate) const MAX_TEMPLATES: usize = 4096;
/// Slots looked at to choose which template to forget when the table is
/// full: the least seen of them goes.
const EVICTION_SCAN: usize = 8;
/// Chars of a template shown in a marker.
const DISPLAY_CHARS: usize = 72;

/// What a masked piece of a line stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Piece {
    /// Literal bytes of the line (constant across the lines of a template).
    Literal,
    /// A number, a duration, a percentage, a date, a hex id or hash.
    Number,
    /// A path or a file name.
    Path,
    /// A quoted string.
    Quoted,
}

/// Byte classes, one table lookup per byte (this runs on every line).
const TOKEN: u8 = 1;
const DIGIT: u8 = 2;
/// A byte a number may hold besides digits: `1,448`, `0.25`, `2026-11-26`,
/// `12/200`, `18:00:43`.
const NUMBER_PART: u8 = 4;
const HEX: u8 = 8;
const SLASH: u8 = 16;

static CLASSES: [u8; 256] = {
    let mut table = [0_u8; 256];
    let mut byte = 0;
    while byte < 256 {
        let b = byte as u8;
        let mut class = 0;
        if b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'/' | b'-' | b'~' | b'+' | b'@')
        {
            class |= TOKEN;
        }
        if b.is_ascii_digit() {
            class |= DIGIT | NUMBER_PART | HEX;
        }
        if matches!(b, b'.' | b',' | b'_' | b'-' | b'/' | b':') {
            class |= NUMBER_PART;
        }
        if matches!(b, b'a'..=b'f' | b'A'..=b'F' | b'-') {
            class |= HEX;
        }
        if b == b'/' {
            class |= SLASH;
        }
        table[byte] = class;
        byte += 1;
    }
    table
};

/// Bytes a path or file name is made of (and a word, a number, an id).
fn is_token_byte(byte: u8) -> bool {
    CLASSES[usize::from(byte)] & TOKEN != 0
}

fn is_word_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_'
}

/// A token that is all number: digits with separators (`1,448`, `0.25`,
/// `2026-11-26`, `12/200`), a hex number (`0x7ffd`), a hex id or hash with
/// at least one digit (`a3f9c2e`, a UUID). `all` is the AND of the token's
/// byte classes, `any` their OR.
fn is_number_token(token: &[u8], all: u8, any: u8) -> bool {
    if any & DIGIT == 0 {
        return false;
    }
    if all & NUMBER_PART != 0 || (token.len() >= 6 && all & HEX != 0) {
        return true;
    }
    token
        .strip_prefix(b"0x")
        .is_some_and(|hex| !hex.is_empty() && hex.iter().all(u8::is_ascii_hexdigit))
}

/// A path (`src/a.rs`, `/usr/lib`, `https://x/y`) or a file name
/// (`main.rs`, `report.tex`): a slash, or a short extension that starts
/// with a letter after a name. `any` is the OR of the token's byte classes.
fn is_path_token(token: &[u8], any: u8) -> bool {
    if any & SLASH != 0 {
        return true;
    }
    // The extension is at most 5 bytes: look at the token's end only.
    let tail_start = token.len().saturating_sub(7);
    let Some(dot) = token[tail_start..]
        .iter()
        .rposition(|byte| *byte == b'.')
        .map(|at| tail_start + at)
    else {
        return false;
    };
    let extension = &token[dot + 1..];
    dot > 0
        && (1..=5).contains(&extension.len())
        && extension[0].is_ascii_alphabetic()
        && extension.iter().all(u8::is_ascii_alphanumeric)
}

/// Walks the masked pieces of `text` (its first [`TEMPLATE_BYTES`] bytes):
/// runs of spaces become one space, and every other piece is handed to
/// `emit` with its kind (a literal piece with its bytes).
fn mask(text: &str, mut emit: impl FnMut(Piece, &[u8])) {
    let mut end = text.len().min(TEMPLATE_BYTES);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let bytes = &text.as_bytes()[..end];
    let mut index = 0;
    while index < bytes.len() {
        let byte = bytes[index];
        if byte == b' ' || byte == b'\t' {
            let spaces = bytes[index..]
                .iter()
                .take_while(|byte| **byte == b' ' || **byte == b'\t')
                .count();
            emit(Piece::Literal, b" ");
            index += spaces;
            continue;
        }
        // Typographic quotes (gcc's `‘x’`, `“x”`): a string when they close.
        if byte == 0xE2
            && let Some(close) = typographic_close(&bytes[index..])
            && let Some(end) = memchr::memmem::find(&bytes[index + 3..], close)
        {
            emit(Piece::Quoted, &bytes[index..index + 3]);
            index += 3 + end + 3;
            continue;
        }
        let after_word = index > 0 && is_word_byte(bytes[index - 1]);
        if matches!(byte, b'"' | b'\'' | b'`') && !after_word {
            // A quote opens a string only after a non-word byte (not the
            // apostrophe of `don't`) and when it closes on the line.
            if let Some(close) = memchr::memchr(byte, &bytes[index + 1..]) {
                emit(Piece::Quoted, &bytes[index..=index]);
                index += close + 2;
                continue;
            }
        }
        if is_token_byte(byte) {
            // One pass finds the token's end and what its bytes are. `3,204`
            // and `18:00:43` are one number: a comma or a colon between
            // digits goes on the token.
            let mut end = index;
            let (mut all, mut any) = (u8::MAX, 0);
            while end < bytes.len() {
                let class = CLASSES[usize::from(bytes[end])];
                let joins = class & TOKEN != 0
                    || (matches!(bytes[end], b',' | b':')
                        && bytes[end - 1].is_ascii_digit()
                        && bytes.get(end + 1).is_some_and(u8::is_ascii_digit));
                if !joins {
                    break;
                }
                all &= class;
                any |= class;
                end += 1;
            }
            let length = end - index;
            let token = &bytes[index..end];
            if is_number_token(token, all, any) {
                emit(Piece::Number, token);
            } else if is_path_token(token, any) {
                emit(Piece::Path, token);
            } else if any & DIGIT != 0 {
                mask_digits(token, &mut emit);
            } else {
                emit(Piece::Literal, token);
            }
            index += length;
            continue;
        }
        emit(Piece::Literal, &bytes[index..=index]);
        index += 1;
    }
}

/// The closing quote of the typographic quote `bytes` starts with.
fn typographic_close(bytes: &[u8]) -> Option<&'static [u8]> {
    match bytes.get(..3)? {
        [0xE2, 0x80, 0x98] => Some("’".as_bytes()),
        [0xE2, 0x80, 0x9C] => Some("”".as_bytes()),
        _ => None,
    }
}

/// A word with numbers in it (`module_001`, `v1.2.3`, `E0308`): each number
/// (digits, with `.`/`,` between digits) masked, the letters kept.
fn mask_digits(token: &[u8], emit: &mut impl FnMut(Piece, &[u8])) {
    let mut start = 0;
    let mut index = 0;
    while index < token.len() {
        if token[index].is_ascii_digit() {
            if start < index {
                emit(Piece::Literal, &token[start..index]);
            }
            let mut end = index;
            while end < token.len()
                && (token[end].is_ascii_digit()
                    || (matches!(token[end], b'.' | b',')
                        && token.get(end + 1).is_some_and(u8::is_ascii_digit)))
            {
                end += 1;
            }
            emit(Piece::Number, &token[index..end]);
            index = end;
            start = end;
        } else {
            index += 1;
        }
    }
    if start < token.len() {
        emit(Piece::Literal, &token[start..]);
    }
}

/// Hashes a stream of bytes eight at a time: one multiply per word, not per
/// byte (a multiply per byte was most of the cost of a line).
struct WordHasher {
    state: u64,
    word: u64,
    filled: u32,
}

impl WordHasher {
    const SEED: u64 = 0xcbf2_9ce4_8422_2325;
    const FACTOR: u64 = 0x9E37_79B9_7F4A_7C15;

    fn mix(&mut self) {
        self.state = (self.state.rotate_left(23) ^ self.word).wrapping_mul(Self::FACTOR);
        self.word = 0;
        self.filled = 0;
    }

    fn byte(&mut self, byte: u8) {
        self.word |= u64::from(byte) << (8 * self.filled);
        self.filled += 1;
        if self.filled == 8 {
            self.mix();
        }
    }

    fn bytes(&mut self, mut bytes: &[u8]) {
        while self.filled == 0 && bytes.len() >= 8 {
            let (word, rest) = bytes.split_at(8);
            self.word = u64::from_le_bytes(word.try_into().unwrap_or_default());
            self.mix();
            bytes = rest;
        }
        for byte in bytes {
            self.byte(*byte);
        }
    }

    fn finish(mut self) -> u64 {
        // The length of the last word decides too (`a` and `a\0`).
        self.word ^= u64::from(self.filled) << 59;
        self.mix();
        self.state ^ (self.state >> 29)
    }
}

/// The template of `text` as a 64-bit hash of the masked bytes (a
/// collision only merges two templates' counts).
pub(crate) fn template_key(text: &str) -> u64 {
    let mut hasher = WordHasher {
        state: WordHasher::SEED,
        word: 0,
        filled: 0,
    };
    mask(text, |piece, bytes| match piece {
        // Spaces do not count: tools pad columns to the width of a value.
        Piece::Literal if bytes == b" " => {}
        Piece::Literal => hasher.bytes(bytes),
        // Bytes no line holds, one per kind of masked piece.
        Piece::Number => hasher.byte(0x01),
        Piece::Path => hasher.byte(0x02),
        Piece::Quoted => hasher.byte(0x03),
    });
    // Never 0: callers use 0 for "no template".
    hasher.finish().max(1)
}

/// The readable template of `text` for a marker: numbers as `N`, quoted
/// strings as `"…"`, paths with their numbers masked, at most
/// [`DISPLAY_CHARS`] chars.
pub(crate) fn template_display(text: &str) -> String {
    let mut shown = Vec::with_capacity(DISPLAY_CHARS + 8);
    mask(text, |piece, bytes| match piece {
        Piece::Literal => shown.extend_from_slice(bytes),
        Piece::Number => shown.push(b'N'),
        Piece::Path => mask_digits(bytes, &mut |piece, bytes| match piece {
            Piece::Number => shown.push(b'N'),
            _ => shown.extend_from_slice(bytes),
        }),
        Piece::Quoted => {
            shown.extend_from_slice(bytes);
            shown.extend_from_slice("…".as_bytes());
            shown.extend_from_slice(typographic_close(bytes).unwrap_or(bytes));
        }
    });
    // The pieces cut the line only at ASCII bytes and at a char boundary,
    // so they join into whole chars.
    let text = String::from_utf8_lossy(&shown);
    let text = text.trim();
    let mut chars = text.chars();
    let mut display: String = chars.by_ref().take(DISPLAY_CHARS).collect();
    if chars.next().is_some() {
        display.push('…');
    }
    display
}

/// A hasher for keys that are hashes already.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*byte);
        }
    }

    fn write_u64(&mut self, value: u64) {
        self.0 = value;
    }
}

pub(crate) type KeyMap<V> = HashMap<u64, V, BuildHasherDefault<KeyHasher>>;

/// How often each template was seen, for at most [`MAX_TEMPLATES`]
/// templates: when the table is full, a new template replaces the least
/// seen of a few slots (a clock hand walks the slots), so frequent
/// templates stay counted and memory stays fixed. A template forgotten and
/// seen again starts over at one: it was rare when it was forgotten.
#[derive(Debug, Default)]
pub(crate) struct TemplateTable {
    counts: KeyMap<(u32, usize)>,
    slots: Vec<u64>,
    hand: usize,
}

impl TemplateTable {
    /// Counts one more line of template `key`; returns how many were seen
    /// before it.
    pub(crate) fn observe(&mut self, key: u64) -> u32 {
        if let Some((count, _)) = self.counts.get_mut(&key) {
            let before = *count;
            *count = count.saturating_add(1);
            return before;
        }
        let slot = if self.slots.len() < MAX_TEMPLATES {
            self.slots.push(key);
            self.slots.len() - 1
        } else {
            let slot = (0..EVICTION_SCAN)
                .map(|step| (self.hand + step) % self.slots.len())
                .min_by_key(|slot| {
                    self.counts
                        .get(&self.slots[*slot])
                        .map_or(0, |(count, _)| *count)
                })
                .unwrap_or(self.hand);
            self.hand = (slot + 1) % self.slots.len();
            self.counts.remove(&self.slots[slot]);
            self.slots[slot] = key;
            slot
        };
        self.counts.insert(key, (1, slot));
        0
    }

    /// Adds `more` lines of template `key`, already counted once (the
    /// repeats of an identical line).
    pub(crate) fn add(&mut self, key: u64, more: u32) {
        if let Some((count, _)) = self.counts.get_mut(&key) {
            *count = count.saturating_add(more);
        }
    }

    /// Lines of template `key` seen (0 when forgotten: it was rare).
    pub(crate) fn count(&self, key: u64) -> u32 {
        self.counts.get(&key).map_or(0, |(count, _)| *count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_of_one_loop_share_a_template() {
        let same = [
            (
                "checked src/module_001.py (12 ms)",
                "checked lib/x/module_2.py (7 ms)",
            ),
            ("Compiling serde v1.0.229", "Compiling serde v1.0.154"),
            (
                "tests/test_a.py::test_1 PASSED [ 1%]",
                "tests/test_b.py::test_20 PASSED [100%]",
            ),
            (
                "Get:12 http://deb.debian.org/x 3,204 kB",
                "Get:7 http://deb.debian.org/y/z 12 kB",
            ),
            ("commit a3f9c2e1 by 'ann'", "commit 0b1c2d3e by 'bob smith'"),
            ("took 1.5s", "took 12s"),
            ("row   7 done", "row 1234 done"),
            ("at 0x7ffd1234: main (a.c:3)", "at 0x4005d6: main (b.c:12)"),
            (
                "2026-11-26 18:00:43 INFO ready",
                "2026-11-27 09:12:01 INFO ready",
            ),
        ];
        for (one, other) in same {
            assert_eq!(template_key(one), template_key(other), "{one} / {other}");
        }
        let different = [
            ("test a ... ok", "test a ... FAILED"),
            (
                "error[E0308]: mismatched types",
                "error[E0425]: cannot find value",
            ),
            ("Compiling serde v1", "Downloading serde v1"),
            ("it's done", "it is done"),
        ];
        for (one, other) in different {
            assert_ne!(template_key(one), template_key(other), "{one} / {other}");
        }
    }

    #[test]
    fn a_template_reads_like_its_lines() {
        assert_eq!(
            template_display("checked src/module_001.py (12 ms)"),
            "checked src/module_N.py (N ms)"
        );
        assert_eq!(
            template_display("INSERT 0 1 for 'user42@example.com'"),
            "INSERT N N for '…'"
        );
        assert_eq!(
            template_display("  Compiling  serde v1.0.229"),
            "Compiling serde vN"
        );
        assert_eq!(
            template_display(&"long words ".repeat(20)).chars().count(),
            DISPLAY_CHARS + 1
        );
    }

    #[test]
    fn masking_never_splits_a_char() {
        for text in [
            "é".repeat(200),
            format!("'{}'", "🦀".repeat(60)),
            "x\"é".into(),
        ] {
            let _ = template_key(&text);
            let shown = template_display(&text);
            assert!(!shown.contains('\u{fffd}'), "{shown}");
        }
    }

    proptest::proptest! {
        #[test]
        fn any_text_has_a_template_and_a_readable_form(text in "\\PC{0,300}") {
            let _ = template_key(&text);
            let shown = template_display(&text);
            proptest::prop_assert!(shown.chars().count() <= DISPLAY_CHARS + 1);
        }
    }

    #[test]
    fn the_table_keeps_frequent_templates_and_forgets_rare_ones() {
        let mut table = TemplateTable::default();
        for _ in 0..10 {
            table.observe(7);
        }
        for key in 100..100 + 2 * MAX_TEMPLATES as u64 {
            table.observe(key);
        }
        assert_eq!(table.count(7), 10);
        assert_eq!(table.counts.len(), MAX_TEMPLATES);
        assert_eq!(table.observe(7), 10);
        table.add(7, 5);
        assert_eq!(table.count(7), 16);
    }
}
