//! The terminal emulator behind a job, and when its screen is what to show.
//!
//! Line-oriented programs (a shell, a REPL, `read -p`) are best shown as the
//! text they printed. Full-screen programs (`less`, `vi`, `top`) redraw
//! places on the screen; their byte stream is meaningless as text, and what
//! a person sees is the screen. A job shows the screen when the program is
//! on the alternate screen (`less`, `vi`), or when it moved the cursor to
//! absolute positions since the last look (`top`, `clear`): `ESC [ row ; col
//! H` or `f`, `ESC [ row d`, or set a scroll region (`ESC [ top ; bottom
//! r`). Relative moves (left, right, erase to end of line) do not count:
//! readline uses them to edit the input line of every shell and REPL.

use std::num::NonZeroU16;

use super::pty::TerminalSize;

/// Lines of scrollback the emulator keeps (the screen is what counts).
const SCROLLBACK: usize = 0;

/// A terminal emulator fed with everything the job prints.
pub(crate) struct ScreenTracker {
    parser: vt100::Parser,
    scanner: AddressScanner,
    /// The cursor was placed at absolute positions since the last look.
    addressed: bool,
}

impl std::fmt::Debug for ScreenTracker {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("ScreenTracker")
            .field("addressed", &self.addressed)
            .finish_non_exhaustive()
    }
}

fn non_zero(value: u16) -> NonZeroU16 {
    NonZeroU16::new(value).unwrap_or(NonZeroU16::MIN)
}

impl ScreenTracker {
    pub fn new(size: TerminalSize) -> Self {
        Self {
            parser: vt100::Parser::new(non_zero(size.rows), non_zero(size.columns), SCROLLBACK),
            scanner: AddressScanner::default(),
            addressed: false,
        }
    }

    pub fn feed(&mut self, bytes: &[u8]) {
        self.parser.process(bytes);
        if self.scanner.scan(bytes) {
            self.addressed = true;
        }
    }

    pub fn resize(&mut self, size: TerminalSize) {
        self.parser
            .set_size(non_zero(size.rows), non_zero(size.columns));
    }

    /// The program switched the cursor keys to application mode.
    pub fn application_cursor(&self) -> bool {
        self.parser.screen().application_cursor()
    }

    /// True when the screen, not the text, is what a person sees.
    pub fn is_full_screen(&self) -> bool {
        self.parser.screen().alternate_screen() || self.addressed
    }

    /// The screen as text when it is what to show (see the module docs);
    /// starts a new period for the cursor-addressing check.
    pub fn take_view(&mut self) -> Option<String> {
        let view = self.is_full_screen().then(|| self.render());
        self.addressed = false;
        view
    }

    /// The visible rows, without trailing blanks or trailing empty rows.
    pub fn render(&self) -> String {
        let contents = self.parser.screen().contents();
        let mut rows: Vec<&str> = contents.split('\n').map(str::trim_end).collect();
        while rows.last().is_some_and(|row| row.is_empty()) {
            rows.pop();
        }
        rows.join("\n")
    }
}

/// Finds absolute cursor placement in a byte stream, across reads.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum AddressScanner {
    #[default]
    Normal,
    Escape,
    /// Inside `ESC [`; `private` when the parameters start with `?`, `>`,
    /// `<` or `=` (modes, not movement).
    Csi {
        private: bool,
        length: usize,
    },
}

/// Longest CSI sequence followed before giving up on it.
const MAX_CSI_LENGTH: usize = 64;

impl AddressScanner {
    /// Scans `bytes`; true when it placed the cursor at an absolute position.
    fn scan(&mut self, bytes: &[u8]) -> bool {
        let mut found = false;
        for &byte in bytes {
            *self = match *self {
                Self::Normal | Self::Escape if byte == 0x1b => Self::Escape,
                Self::Escape if byte == b'[' => Self::Csi {
                    private: false,
                    length: 0,
                },
                Self::Normal | Self::Escape => Self::Normal,
                Self::Csi { length, .. } if length > MAX_CSI_LENGTH => Self::Normal,
                Self::Csi { private, length } => match byte {
                    b'?' | b'>' | b'<' | b'=' if length == 0 => Self::Csi {
                        private: true,
                        length: 1,
                    },
                    0x20..=0x3f => Self::Csi {
                        private,
                        length: length + 1,
                    },
                    0x40..=0x7e => {
                        if !private && matches!(byte, b'H' | b'f' | b'd' | b'r') {
                            found = true;
                        }
                        Self::Normal
                    }
                    0x1b => Self::Escape,
                    _ => Self::Normal,
                },
            };
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan_all(pieces: &[&[u8]]) -> bool {
        let mut scanner = AddressScanner::default();
        pieces
            .iter()
            .fold(false, |found, piece| scanner.scan(piece) | found)
    }

    #[test]
    fn absolute_placement_counts_and_line_editing_does_not() {
        assert!(scan_all(&[b"\x1b[H\x1b[2J"]));
        assert!(scan_all(&[b"x\x1b[12;", b"4Hy"]));
        assert!(scan_all(&[b"\x1b[1;24r"]));
        assert!(!scan_all(&[b"abc\x1b[K\x1b[3D\x1b[C\r\n"]));
        assert!(!scan_all(&[b"\x1b[?1049h"]), "a mode, not a move");
        assert!(!scan_all(&[b"\x1b[?2004h\x1b[0m"]));
    }

    #[test]
    fn shows_the_screen_on_the_alternate_screen() {
        let mut tracker = ScreenTracker::new(TerminalSize {
            columns: 20,
            rows: 5,
        });
        tracker.feed(b"line one\r\nline two\r\n");
        assert_eq!(tracker.take_view(), None);
        tracker.feed(b"\x1b[?1049hfirst\r\nsecond");
        assert_eq!(tracker.take_view().as_deref(), Some("first\nsecond"));
        tracker.feed(b"\x1b[?1049l");
        assert_eq!(tracker.take_view(), None);
    }

    #[test]
    fn shows_the_screen_once_after_cursor_addressing() {
        let mut tracker = ScreenTracker::new(TerminalSize {
            columns: 20,
            rows: 5,
        });
        tracker.feed(b"\x1b[H\x1b[2Jtop\x1b[3;1Hthird");
        assert_eq!(tracker.take_view().as_deref(), Some("top\n\nthird"));
        tracker.feed(b"\r\nmore");
        assert_eq!(tracker.take_view(), None);
    }
}
