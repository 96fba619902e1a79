//! Named keys and the bytes a terminal sends for them.
//!
//! A program in a terminal does not receive "keys": it reads bytes. Enter is
//! a carriage return (the line discipline turns it into `\n` for programs
//! reading lines), Ctrl-C is byte 3 (the line discipline turns it into
//! SIGINT for the foreground group), and the arrows are escape sequences
//! whose form depends on the cursor-key mode the program selected (`ESC [ A`
//! normally, `ESC O A` in application mode, which full-screen programs such
//! as `vi` and `less` switch on).

use crate::error::Error;

/// The key names [`Key::parse`] accepts, for error messages and docs.
pub const KEY_NAMES: &str = "Enter, Tab, Esc, Backspace, Space, Up, Down, Left, Right, Home, End, \
PageUp, PageDown, Delete, F1..F12, C-a..C-z (Ctrl with a letter, e.g. C-c, C-d)";

/// A key a person could press.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(missing_docs)] // The names say it: one variant per key.
pub enum Key {
    Enter,
    Tab,
    Escape,
    Backspace,
    Space,
    Up,
    Down,
    Left,
    Right,
    Home,
    End,
    PageUp,
    PageDown,
    Delete,
    /// F1..F12.
    Function(u8),
    /// Ctrl with a letter, stored lower case (`C-c` is `Control(b'c')`).
    Control(u8),
}

impl Key {
    /// Parses a key name (case-insensitive): `Enter`, `C-c`, `F5`, ... An
    /// unknown name is an error that lists the allowed ones.
    pub fn parse(name: &str) -> Result<Self, Error> {
        let unknown = || Error::UnknownKey {
            name: name.to_owned(),
            allowed: KEY_NAMES,
        };
        let lower = name.trim().to_ascii_lowercase();
        let key = match lower.as_str() {
            "enter" | "return" => Self::Enter,
            "tab" => Self::Tab,
            "esc" | "escape" => Self::Escape,
            "backspace" => Self::Backspace,
            "space" => Self::Space,
            "up" => Self::Up,
            "down" => Self::Down,
            "left" => Self::Left,
            "right" => Self::Right,
            "home" => Self::Home,
            "end" => Self::End,
            "pageup" => Self::PageUp,
            "pagedown" => Self::PageDown,
            "delete" | "del" => Self::Delete,
            _ => {
                if let Some(letter) = lower.strip_prefix("c-") {
                    match letter.as_bytes() {
                        [byte] if byte.is_ascii_lowercase() => Self::Control(*byte),
                        _ => return Err(unknown()),
                    }
                } else if let Some(number) = lower.strip_prefix('f')
                    && !number.starts_with('0')
                {
                    match number.parse::<u8>() {
                        Ok(number @ 1..=12) => Self::Function(number),
                        _ => return Err(unknown()),
                    }
                } else {
                    return Err(unknown());
                }
            }
        };
        Ok(key)
    }

    /// Parses every name, failing on the first unknown one.
    pub fn parse_all<S: AsRef<str>>(names: &[S]) -> Result<Vec<Self>, Error> {
        names
            .iter()
            .map(|name| Self::parse(name.as_ref()))
            .collect()
    }

    /// The bytes an xterm sends for this key. `application_cursor`: the
    /// program switched the cursor keys to application mode (DECCKM).
    pub fn bytes(self, application_cursor: bool) -> &'static [u8] {
        let cursor = |normal: &'static [u8], application: &'static [u8]| {
            if application_cursor {
                application
            } else {
                normal
            }
        };
        match self {
            Self::Enter => b"\r",
            Self::Tab => b"\t",
            Self::Escape => b"\x1b",
            // What terminals send today (DEL), which readline and the line
            // discipline (VERASE) both treat as erase.
            Self::Backspace => b"\x7f",
            Self::Space => b" ",
            Self::Up => cursor(b"\x1b[A", b"\x1bOA"),
            Self::Down => cursor(b"\x1b[B", b"\x1bOB"),
            Self::Right => cursor(b"\x1b[C", b"\x1bOC"),
            Self::Left => cursor(b"\x1b[D", b"\x1bOD"),
            Self::Home => cursor(b"\x1b[H", b"\x1bOH"),
            Self::End => cursor(b"\x1b[F", b"\x1bOF"),
            Self::PageUp => b"\x1b[5~",
            Self::PageDown => b"\x1b[6~",
            Self::Delete => b"\x1b[3~",
            Self::Function(number) => function_key(number),
            Self::Control(letter) => control_byte(letter),
        }
    }
}

fn function_key(number: u8) -> &'static [u8] {
    match number {
        1 => b"\x1bOP",
        2 => b"\x1bOQ",
        3 => b"\x1bOR",
        4 => b"\x1bOS",
        5 => b"\x1b[15~",
        6 => b"\x1b[17~",
        7 => b"\x1b[18~",
        8 => b"\x1b[19~",
        9 => b"\x1b[20~",
        10 => b"\x1b[21~",
        11 => b"\x1b[23~",
        _ => b"\x1b[24~",
    }
}

/// Ctrl+letter is the letter's code with the top bits cleared (1..=26).
fn control_byte(letter: u8) -> &'static [u8] {
    const CONTROL: [u8; 26] = {
        let mut bytes = [0_u8; 26];
        let mut index = 0;
        while index < 26 {
            bytes[index] = index as u8 + 1;
            index += 1;
        }
        bytes
    };
    let index = usize::from(letter.saturating_sub(b'a')).min(25);
    &CONTROL[index..=index]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names_case_insensitively() {
        assert_eq!(Key::parse("Enter").ok(), Some(Key::Enter));
        assert_eq!(Key::parse("enter").ok(), Some(Key::Enter));
        assert_eq!(Key::parse("C-c").ok(), Some(Key::Control(b'c')));
        assert_eq!(Key::parse("c-D").ok(), Some(Key::Control(b'd')));
        assert_eq!(Key::parse("F12").ok(), Some(Key::Function(12)));
        assert_eq!(Key::parse("PageDown").ok(), Some(Key::PageDown));
    }

    #[test]
    fn unknown_names_list_the_allowed_ones() {
        for name in ["F13", "F0", "F01", "C-1", "C-ab", "Ctrl", "", "Fx"] {
            let error = Key::parse(name).expect_err(name).to_string();
            assert_eq!(
                error,
                format!("unknown key `{name}`; allowed keys: {KEY_NAMES}")
            );
        }
    }

    #[test]
    fn control_letters_are_bytes_one_to_twenty_six() {
        assert_eq!(Key::Control(b'a').bytes(false), b"\x01");
        assert_eq!(Key::Control(b'c').bytes(false), b"\x03");
        assert_eq!(Key::Control(b'z').bytes(false), b"\x1a");
    }

    #[test]
    fn cursor_keys_follow_the_application_mode() {
        assert_eq!(Key::Up.bytes(false), b"\x1b[A");
        assert_eq!(Key::Up.bytes(true), b"\x1bOA");
        assert_eq!(Key::PageUp.bytes(true), b"\x1b[5~");
        assert_eq!(Key::Function(5).bytes(false), b"\x1b[15~");
    }
}
