//! What a shape's check says about the bytes after one of its anchors, and
//! the view of the text it checks.

/// The verdict of a shape's check at an anchor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Not this shape: the anchor is ordinary text.
    No,
    /// `start..end` is a credential of this kind: replace it.
    Mask {
        start: usize,
        end: usize,
        label: &'static str,
    },
    /// The text ends before the check can decide: wait for more.
    More,
}

/// The text a check looks at: the bytes from where the stream's undecided
/// part starts, the byte before them, and whether more bytes may come.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Text<'a> {
    pub bytes: &'a [u8],
    /// The byte before `bytes[0]` (a newline at the start of a stream).
    pub before: u8,
    /// No more bytes will come: decide with what is there.
    pub last: bool,
}

impl Text<'_> {
    /// The byte before `position`.
    pub fn byte_before(&self, position: usize) -> u8 {
        if position == 0 {
            self.before
        } else {
            self.bytes[position - 1]
        }
    }

    /// The verdict when a check reached the end of the text at `position`
    /// undecided: wait for more, unless none will come (then `decide`).
    pub fn at_end(&self, decide: impl FnOnce() -> Verdict) -> Verdict {
        if self.last { decide() } else { Verdict::More }
    }
}

/// ASCII letters and digits.
pub(crate) fn is_alphanumeric(byte: u8) -> bool {
    byte.is_ascii_alphanumeric()
}

/// Bytes of a word: letters, digits and `_`.
pub(crate) fn is_word(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_'
}

/// The standard base64 alphabet and its padding.
pub(crate) fn is_base64(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'+' | b'/' | b'=')
}
