//! The few control sequences a job must notice in the output stream, on top
//! of what the emulator does with them:
//! - absolute cursor placement (`ESC [ r ; c H` or `f`, `ESC [ r d`, a
//!   scroll region `ESC [ t ; b r`): the program draws a screen;
//! - queries a terminal must answer (cursor position `ESC [ 6 n`, status
//!   `ESC [ 5 n`, device attributes `ESC [ c`, `ESC [ > c`): programs such
//!   as Ruby's `irb` (reline) and some prompts send one and wait for the
//!   reply before they draw anything.
//!
//! Sequences may be cut anywhere by the reads, so the scanner keeps its
//! state between calls.

/// What a sequence means for the job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Notice {
    /// The cursor was placed at an absolute position.
    Addressed,
    /// `ESC [ 6 n`: report the cursor position.
    CursorPositionQuery,
    /// `ESC [ 5 n`: report the terminal's status.
    StatusQuery,
    /// `ESC [ c`: primary device attributes.
    PrimaryAttributesQuery,
    /// `ESC [ > c`: secondary device attributes.
    SecondaryAttributesQuery,
}

/// Longest parameter string kept (queries have one or two characters).
const MAX_PARAMETERS: usize = 16;

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum State {
    #[default]
    Normal,
    Escape,
    /// Inside `ESC [`.
    Csi,
}

/// Finds [`Notice`]s in a byte stream, across reads.
#[derive(Debug, Default, Clone)]
pub(crate) struct SequenceScanner {
    state: State,
    /// `?`, `>`, `<` or `=` right after `ESC [` (a private sequence).
    marker: Option<u8>,
    parameters: [u8; MAX_PARAMETERS],
    length: usize,
}

impl SequenceScanner {
    /// Scans one byte; the notice it completes, if any.
    pub fn step(&mut self, byte: u8) -> Option<Notice> {
        match self.state {
            State::Normal | State::Escape if byte == 0x1b => self.state = State::Escape,
            State::Escape if byte == b'[' => {
                self.state = State::Csi;
                self.marker = None;
                self.length = 0;
            }
            State::Normal | State::Escape => self.state = State::Normal,
            State::Csi => match byte {
                b'?' | b'>' | b'<' | b'=' if self.length == 0 && self.marker.is_none() => {
                    self.marker = Some(byte);
                }
                0x20..=0x3f => {
                    if self.length < MAX_PARAMETERS {
                        self.parameters[self.length] = byte;
                    }
                    self.length += 1;
                }
                0x40..=0x7e => {
                    self.state = State::Normal;
                    return self.finish(byte);
                }
                0x1b => self.state = State::Escape,
                _ => self.state = State::Normal,
            },
        }
        None
    }

    fn finish(&self, final_byte: u8) -> Option<Notice> {
        let parameters = &self.parameters[..self.length.min(MAX_PARAMETERS)];
        if self.length > MAX_PARAMETERS {
            return None;
        }
        match (self.marker, final_byte, parameters) {
            (None, b'H' | b'f' | b'd' | b'r', _) => Some(Notice::Addressed),
            (None, b'n', b"6") => Some(Notice::CursorPositionQuery),
            (None, b'n', b"5") => Some(Notice::StatusQuery),
            (None, b'c', b"" | b"0") => Some(Notice::PrimaryAttributesQuery),
            (Some(b'>'), b'c', b"" | b"0") => Some(Notice::SecondaryAttributesQuery),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn notices(pieces: &[&[u8]]) -> Vec<Notice> {
        let mut scanner = SequenceScanner::default();
        pieces
            .iter()
            .flat_map(|piece| piece.iter().copied())
            .filter_map(|byte| scanner.step(byte))
            .collect()
    }

    #[test]
    fn absolute_placement_counts_and_line_editing_does_not() {
        assert_eq!(notices(&[b"\x1b[H\x1b[2J"]), [Notice::Addressed]);
        assert_eq!(notices(&[b"x\x1b[12;", b"4Hy"]), [Notice::Addressed]);
        assert_eq!(notices(&[b"\x1b[1;24r"]), [Notice::Addressed]);
        assert_eq!(notices(&[b"abc\x1b[K\x1b[3D\x1b[C\r\n"]), []);
        assert_eq!(notices(&[b"\x1b[?1049h"]), [], "a mode, not a move");
        assert_eq!(notices(&[b"\x1b[?2004h\x1b[0m"]), []);
    }

    #[test]
    fn finds_the_queries_a_terminal_answers() {
        assert_eq!(
            notices(&[b"\x1b[1G\xe2\x96\xbd\x1b[6", b"n"]),
            [Notice::CursorPositionQuery]
        );
        assert_eq!(notices(&[b"\x1b[5n"]), [Notice::StatusQuery]);
        assert_eq!(
            notices(&[b"\x1b[c\x1b[0c\x1b[>c"]),
            [
                Notice::PrimaryAttributesQuery,
                Notice::PrimaryAttributesQuery,
                Notice::SecondaryAttributesQuery
            ]
        );
        assert_eq!(
            notices(&[b"\x1b[?6n\x1b[16n"]),
            [],
            "other reports are not asked for"
        );
    }
}
