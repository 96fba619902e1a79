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
//!
//! Like a real terminal, the emulator answers the queries programs send
//! (cursor position, status, device attributes; see [`super::sequences`]):
//! some wait for the answer before drawing anything.

use std::num::NonZeroU16;

use super::sequences::{Notice, SequenceScanner};
use bashtool_process::TerminalSize;

/// Lines of scrollback the emulator keeps (the screen is what counts).
const SCROLLBACK: usize = 0;

/// A terminal emulator fed with everything the job prints.
pub(crate) struct ScreenTracker {
    parser: vt100::Parser,
    scanner: SequenceScanner,
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
            scanner: SequenceScanner::default(),
            addressed: false,
        }
    }

    /// Feeds the next bytes of output; appends to `replies` what the
    /// terminal answers to the queries among them (to be typed back).
    pub fn feed(&mut self, bytes: &[u8], replies: &mut Vec<u8>) {
        let mut processed = 0;
        for (index, &byte) in bytes.iter().enumerate() {
            let Some(notice) = self.scanner.step(byte) else {
                continue;
            };
            if notice == Notice::Addressed {
                self.addressed = true;
                continue;
            }
            // The answer describes the screen as it is right after the query.
            self.parser.process(&bytes[processed..=index]);
            processed = index + 1;
            match notice {
                Notice::CursorPositionQuery => {
                    let (row, column) = self.parser.screen().cursor_position();
                    replies.extend_from_slice(
                        format!("\x1b[{};{}R", u32::from(row) + 1, u32::from(column) + 1)
                            .as_bytes(),
                    );
                }
                Notice::StatusQuery => replies.extend_from_slice(b"\x1b[0n"),
                // A VT100 with advanced video, as xterm says in its default.
                Notice::PrimaryAttributesQuery => replies.extend_from_slice(b"\x1b[?1;2c"),
                Notice::SecondaryAttributesQuery => replies.extend_from_slice(b"\x1b[>0;0;0c"),
                Notice::Addressed => {}
            }
        }
        self.parser.process(&bytes[processed..]);
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
    /// An empty screen is no view (a full-screen program that just left
    /// its alternate screen leaves the main one as it was, often empty).
    pub fn take_view(&mut self) -> Option<String> {
        let view = self
            .is_full_screen()
            .then(|| self.render())
            .filter(|view| !view.is_empty());
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shows_the_screen_on_the_alternate_screen() {
        let mut tracker = ScreenTracker::new(TerminalSize {
            columns: 20,
            rows: 5,
        });
        tracker.feed(b"line one\r\nline two\r\n", &mut Vec::new());
        assert_eq!(tracker.take_view(), None);
        tracker.feed(b"\x1b[?1049hfirst\r\nsecond", &mut Vec::new());
        assert_eq!(tracker.take_view().as_deref(), Some("first\nsecond"));
        tracker.feed(b"\x1b[?1049l", &mut Vec::new());
        assert_eq!(tracker.take_view(), None);
    }

    #[test]
    fn shows_the_screen_once_after_cursor_addressing() {
        let mut tracker = ScreenTracker::new(TerminalSize {
            columns: 20,
            rows: 5,
        });
        tracker.feed(b"\x1b[H\x1b[2Jtop\x1b[3;1Hthird", &mut Vec::new());
        assert_eq!(tracker.take_view().as_deref(), Some("top\n\nthird"));
        tracker.feed(b"\r\nmore", &mut Vec::new());
        assert_eq!(tracker.take_view(), None);
    }

    #[test]
    fn answers_a_cursor_position_query_where_the_cursor_is_then() {
        let mut tracker = ScreenTracker::new(TerminalSize {
            columns: 20,
            rows: 5,
        });
        let mut replies = Vec::new();
        tracker.feed(b"ab\x1b[6nmore text\r\n\x1b[5n\x1b[c", &mut replies);
        assert_eq!(replies, b"\x1b[1;3R\x1b[0n\x1b[?1;2c");
        assert_eq!(tracker.render(), "abmore text");
    }
}
