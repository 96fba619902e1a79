//! Output hygiene: bytes from a pipe become the text the model sees.
//!
//! A read can end anywhere: in the middle of a UTF-8 character or of an
//! escape sequence. [`StreamCleaner`] keeps that state between reads, so the
//! result does not depend on how the kernel happened to split the stream.
//! Invalid bytes become U+FFFD; ANSI/OSC/DCS escape sequences and control
//! characters other than `\t`, `\n` and `\r` are removed (`\r` is left for
//! [`bashtool_core::OutputBuffer`], which collapses redrawn lines). A
//! backspace erases the character before it, as a terminal shows overstrike.

/// Longest escape string (OSC, DCS, ...) we wait for before giving up on it,
/// so that a stray `ESC ]` cannot swallow the rest of the output.
const MAX_ESCAPE_STRING_CHARS: usize = 8192;
/// Longest CSI sequence (parameters are short in practice).
const MAX_CSI_CHARS: usize = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Escape {
    #[default]
    Normal,
    /// After ESC.
    Esc,
    /// ESC followed by intermediate bytes (`ESC ( B`).
    EscIntermediate,
    /// Control Sequence: `ESC [` parameters, intermediates, final byte.
    Csi { chars: usize },
    /// OSC, DCS, SOS, PM, APC: a string ended by BEL or ST (`ESC \`).
    Text { chars: usize },
    /// ESC inside a string: `\` ends it, anything else starts a new escape.
    TextEsc,
}

/// Decodes and cleans one stream incrementally. One per stream: stdout and
/// stderr have their own partial characters and escape sequences.
#[derive(Debug, Default)]
pub struct StreamCleaner {
    /// The start of a UTF-8 character cut by the end of the last read (at
    /// most 3 bytes).
    carry: Vec<u8>,
    escape: Escape,
}

/// Bytes that need more than a copy: C0 controls other than tab, newline
/// and CR, DEL, and 0xC2 (the UTF-8 lead byte of the C1 controls).
#[allow(clippy::needless_bitwise_bool)]
fn is_special(byte: u8) -> bool {
    // Bitwise, not short-circuit: this lets the compiler vectorize the scan
    // in `has_special`, the hot loop for big outputs.
    ((byte < 0x20) & (byte != b'\t') & (byte != b'\n') & (byte != b'\r'))
        | (byte == 0x7f)
        | (byte == 0xc2)
}

/// True if any byte needs more than a copy. Scans in blocks without early
/// exit inside a block, so that each block is a few SIMD instructions.
fn has_special(bytes: &[u8]) -> bool {
    bytes.chunks(64).any(|block| {
        block
            .iter()
            .fold(false, |found, &byte| found | is_special(byte))
    })
}

fn utf8_len(lead: u8) -> usize {
    match lead {
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf7 => 4,
        _ => 1,
    }
}

impl StreamCleaner {
    /// A cleaner at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Cleans `bytes`, the next read of the stream. The text is borrowed from
    /// `bytes` when nothing needs changing (the common case, no copy), else
    /// built in `scratch`.
    pub fn clean<'a>(&mut self, bytes: &'a [u8], scratch: &'a mut String) -> &'a str {
        if self.carry.is_empty()
            && self.escape == Escape::Normal
            && !has_special(bytes)
            && let Ok(text) = std::str::from_utf8(bytes)
        {
            return text;
        }
        scratch.clear();
        let mut input = bytes;
        if !self.carry.is_empty() {
            input = self.complete_carry(input, scratch);
        }
        loop {
            match std::str::from_utf8(input) {
                Ok(text) => {
                    self.feed(text, scratch);
                    break;
                }
                Err(error) => {
                    let (valid, rest) = input.split_at(error.valid_up_to());
                    // `valid_up_to` guarantees this prefix is UTF-8.
                    self.feed(std::str::from_utf8(valid).unwrap_or_default(), scratch);
                    if let Some(length) = error.error_len() {
                        self.feed("\u{FFFD}", scratch);
                        input = &rest[length..];
                    } else {
                        // An incomplete character at the end: wait for the
                        // next read instead of replacing it.
                        self.carry.extend_from_slice(rest);
                        break;
                    }
                }
            }
        }
        scratch
    }

    /// Completes the character carried over from the last read with the
    /// first bytes of this one; returns the rest of the input.
    fn complete_carry<'a>(&mut self, input: &'a [u8], out: &mut String) -> &'a [u8] {
        let needed = utf8_len(self.carry[0]);
        let mut used = 0;
        while self.carry.len() < needed && used < input.len() {
            let byte = input[used];
            if byte & 0xc0 != 0x80 {
                // Not a continuation byte: the carried bytes were invalid.
                self.carry.clear();
                self.feed("\u{FFFD}", out);
                return &input[used..];
            }
            self.carry.push(byte);
            used += 1;
        }
        if self.carry.len() < needed {
            return &input[used..];
        }
        let carry = std::mem::take(&mut self.carry);
        match std::str::from_utf8(&carry) {
            Ok(text) => self.feed(text, out),
            Err(_) => self.feed("\u{FFFD}", out),
        }
        &input[used..]
    }

    /// Flushes a character left incomplete at the end of the stream.
    pub fn finish(&mut self, scratch: &mut String) {
        scratch.clear();
        if !self.carry.is_empty() {
            self.carry.clear();
            scratch.push('\u{FFFD}');
        }
        self.escape = Escape::Normal;
    }

    fn feed(&mut self, text: &str, out: &mut String) {
        let mut rest = text;
        while !rest.is_empty() {
            if self.escape == Escape::Normal {
                // Copy the run of ordinary text in one go.
                let run = rest.bytes().position(is_special).unwrap_or(rest.len());
                out.push_str(&rest[..run]);
                rest = &rest[run..];
            }
            let Some(character) = rest.chars().next() else {
                break;
            };
            rest = &rest[character.len_utf8()..];
            self.step(character, out);
        }
    }

    fn step(&mut self, character: char, out: &mut String) {
        let code = character as u32;
        match self.escape {
            Escape::Normal => match character {
                '\u{1b}' => self.escape = Escape::Esc,
                '\u{9b}' => self.escape = Escape::Csi { chars: 0 },
                '\u{90}' | '\u{98}' | '\u{9d}' | '\u{9e}' | '\u{9f}' => {
                    self.escape = Escape::Text { chars: 0 };
                }
                '\u{8}' => {
                    if out.ends_with(|last: char| last != '\n') {
                        out.pop();
                    }
                }
                '\t' | '\n' | '\r' => out.push(character),
                _ if character.is_control() => {}
                _ => out.push(character),
            },
            Escape::Esc => match code {
                0x5b => self.escape = Escape::Csi { chars: 0 },
                0x5d | 0x50 | 0x58 | 0x5e | 0x5f => self.escape = Escape::Text { chars: 0 },
                0x1b => {}
                0x20..=0x2f => self.escape = Escape::EscIntermediate,
                0x30..=0x7e => self.escape = Escape::Normal,
                _ => self.abort(character, out),
            },
            Escape::EscIntermediate => match code {
                0x20..=0x2f => {}
                0x30..=0x7e => self.escape = Escape::Normal,
                _ => self.abort(character, out),
            },
            Escape::Csi { chars } => match code {
                0x20..=0x3f if chars < MAX_CSI_CHARS => {
                    self.escape = Escape::Csi { chars: chars + 1 };
                }
                0x40..=0x7e => self.escape = Escape::Normal,
                0x1b => self.escape = Escape::Esc,
                _ => self.abort(character, out),
            },
            Escape::Text { chars } => match character {
                '\u{7}' | '\u{9c}' => self.escape = Escape::Normal,
                '\u{1b}' => self.escape = Escape::TextEsc,
                // No escape string spans lines in practice: a newline means
                // the sequence was broken, and the text after it is output.
                '\n' => self.abort(character, out),
                _ if chars >= MAX_ESCAPE_STRING_CHARS => self.abort(character, out),
                _ => self.escape = Escape::Text { chars: chars + 1 },
            },
            Escape::TextEsc => {
                if character == '\\' {
                    self.escape = Escape::Normal;
                } else {
                    self.escape = Escape::Esc;
                    self.step(character, out);
                }
            }
        }
    }

    /// Ends a malformed sequence and handles `character` as ordinary text.
    fn abort(&mut self, character: char, out: &mut String) {
        self.escape = Escape::Normal;
        self.step(character, out);
    }
}

/// Cleans a whole text at once, also collapsing `\r`-redrawn lines to their
/// last state and CRLF to LF (for reading background job output files).
pub fn clean_text(bytes: &[u8]) -> String {
    let mut cleaner = StreamCleaner::new();
    let mut scratch = String::new();
    let mut text = cleaner.clean(bytes, &mut scratch).to_owned();
    let mut tail = String::new();
    cleaner.finish(&mut tail);
    text.push_str(&tail);
    collapse_carriage_returns(&text)
}

/// Keeps what follows the last `\r` of each line (a terminal's last redraw).
pub fn collapse_carriage_returns(text: &str) -> String {
    if !text.contains('\r') {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    for (index, line) in text.split('\n').enumerate() {
        if index > 0 {
            out.push('\n');
        }
        // A `\r` with nothing after it overwrites nothing (`text\r\r\n`, as
        // a program in raw mode may echo Enter): only the trailing ones go.
        let line = line.trim_end_matches('\r');
        out.push_str(line.rsplit('\r').next().unwrap_or(line));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clean_all(pieces: &[&[u8]]) -> String {
        let mut cleaner = StreamCleaner::new();
        let mut text = String::new();
        let mut scratch = String::new();
        for piece in pieces {
            text.push_str(cleaner.clean(piece, &mut scratch));
        }
        cleaner.finish(&mut scratch);
        text.push_str(&scratch);
        text
    }

    #[test]
    fn passes_plain_text_through() {
        assert_eq!(clean_all(&[b"hello\tworld\r\n"]), "hello\tworld\r\n");
    }

    #[test]
    fn keeps_a_character_split_across_reads() {
        let crab = "🦀".as_bytes();
        assert_eq!(
            clean_all(&[b"a", &crab[..1], &crab[1..3], &crab[3..], b"b"]),
            "a🦀b"
        );
        let e_acute = "é".as_bytes();
        assert_eq!(clean_all(&[&e_acute[..1], &e_acute[1..]]), "é");
    }

    #[test]
    fn replaces_invalid_bytes() {
        assert_eq!(clean_all(&[b"a\xffb\xc3(c"]), "a\u{FFFD}b\u{FFFD}(c");
        assert_eq!(clean_all(&[b"a\xf0\x9f", b"x"]), "a\u{FFFD}x");
        assert_eq!(clean_all(&[b"end\xe2\x82"]), "end\u{FFFD}");
    }

    #[test]
    fn strips_escape_sequences_split_across_reads() {
        assert_eq!(clean_all(&[b"\x1b[1;3", b"1mred\x1b[0m ok"]), "red ok");
        assert_eq!(
            clean_all(&[
                b"\x1b]0;title\x07x\x1b]8;;http://a\x1b",
                b"\\link\x1b]8;;\x1b\\"
            ]),
            "xlink"
        );
        assert_eq!(clean_all(&[b"\x1b(Bcharset\x1b=keypad"]), "charsetkeypad");
        assert_eq!(clean_all(&["\u{9b}31mC1\u{9b}0m".as_bytes()]), "C1");
        assert_eq!(clean_all(&[b"\x1bP1$r\x1b\\dcs"]), "dcs");
    }

    #[test]
    fn a_broken_escape_string_ends_at_the_newline() {
        assert_eq!(
            clean_all(&[b"a\x1b]never ended\nvisible\n"]),
            "a\nvisible\n"
        );
    }

    #[test]
    fn removes_control_characters_but_tab_newline_and_cr() {
        assert_eq!(clean_all(&[b"a\x00b\x07c\x7fd\x0ce\r\n"]), "abcde\r\n");
    }

    #[test]
    fn backspace_erases_the_previous_character() {
        assert_eq!(clean_all(&[b"b\x08bold _\x08u\n\x08x"]), "bold u\nx");
    }

    #[test]
    fn carriage_returns_at_the_end_of_a_line_overwrite_nothing() {
        assert_eq!(collapse_carriage_returns("1+2\r\r\n3\r\n"), "1+2\n3\n");
        assert_eq!(collapse_carriage_returns("50%\r100%\r\r"), "100%");
    }

    #[test]
    fn clean_text_collapses_progress_lines() {
        assert_eq!(
            clean_text(b"10%\r50%\r100%\nnext\r\n\x1b[32mok\x1b[0m"),
            "100%\nnext\nok"
        );
    }
}
