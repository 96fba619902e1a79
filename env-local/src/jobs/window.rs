//! Reading a job's output file by cursor (byte offset of the raw file):
//! the window after a cursor, or the last lines. A window ends at a line end
//! when it is cut by its size, so the next read starts with a whole line and
//! no character or escape sequence is split; reading on from each
//! `next_cursor` sees every byte once.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use bashtool_core::clean_text;

/// A window of a job's output file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    /// Cleaned text of the raw bytes `cursor..next_cursor`.
    pub text: String,
    pub cursor: u64,
    pub next_cursor: u64,
    /// The file had bytes after `next_cursor` when read.
    pub more: bool,
}

/// The window after `cursor`: at most `max_bytes` raw bytes, cut at the last
/// line end inside when there is more (a single line longer than that is
/// cut at a character boundary).
pub fn read_after(path: &Path, cursor: u64, max_bytes: usize) -> std::io::Result<Window> {
    let mut file = File::open(path)?;
    let length = file.metadata()?.len();
    let cursor = cursor.min(length);
    file.seek(SeekFrom::Start(cursor))?;
    let available = length - cursor;
    let wanted = available.min(max_bytes.max(1) as u64);
    let mut bytes = Vec::with_capacity(usize::try_from(wanted).unwrap_or(0));
    Read::by_ref(&mut file)
        .take(wanted)
        .read_to_end(&mut bytes)?;
    if available > bytes.len() as u64 {
        let end = match memchr::memrchr(b'\n', &bytes) {
            Some(newline) => newline + 1,
            None => char_boundary(&bytes),
        };
        bytes.truncate(end);
    }
    let next_cursor = cursor + bytes.len() as u64;
    Ok(Window {
        text: clean_text(&bytes),
        cursor,
        next_cursor,
        more: length > next_cursor,
    })
}

/// The last `lines` lines, within the last `max_bytes` bytes of the file.
pub fn read_last_lines(path: &Path, lines: usize, max_bytes: usize) -> std::io::Result<Window> {
    let mut file = File::open(path)?;
    let length = file.metadata()?.len();
    let start = length.saturating_sub(max_bytes.max(1) as u64);
    file.seek(SeekFrom::Start(start))?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    // A window that starts inside a line drops that partial line.
    let mut from = if start > 0 {
        memchr::memchr(b'\n', &bytes).map_or(bytes.len(), |newline| newline + 1)
    } else {
        0
    };
    let body = bytes.strip_suffix(b"\n").unwrap_or(&bytes);
    if lines == 0 {
        from = bytes.len();
    } else if let Some(newline) =
        memchr::memrchr_iter(b'\n', &body[from.min(body.len())..]).nth(lines - 1)
    {
        from += newline + 1;
    }
    let cursor = start + from as u64;
    Ok(Window {
        text: clean_text(&bytes[from..]),
        cursor,
        next_cursor: length,
        more: false,
    })
}

/// The longest prefix of `bytes` that does not end inside a UTF-8
/// character (a lone line longer than the window).
fn char_boundary(bytes: &[u8]) -> usize {
    let mut end = bytes.len();
    // At most 3 continuation bytes belong to a character cut at the end.
    for back in 1..=3.min(bytes.len()) {
        let byte = bytes[bytes.len() - back];
        if byte & 0xC0 == 0x80 {
            continue;
        }
        let needed = match byte {
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF7 => 4,
            _ => 1,
        };
        if needed > back {
            end = bytes.len() - back;
        }
        break;
    }
    end
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file_with(text: &[u8]) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("out");
        std::fs::write(&path, text).expect("write");
        (dir, path)
    }

    #[test]
    fn paging_by_cursor_sees_every_line_once() {
        let text: String = (1..=1000)
            .map(|number| format!("line {number}\n"))
            .collect();
        let (_dir, path) = file_with(text.as_bytes());
        let mut cursor = 0;
        let mut seen = String::new();
        loop {
            let window = read_after(&path, cursor, 100).expect("read");
            assert_eq!(window.cursor, cursor);
            seen.push_str(&window.text);
            cursor = window.next_cursor;
            if !window.more {
                break;
            }
            assert!(window.text.ends_with('\n'), "cut at a line end");
        }
        assert_eq!(seen, text);
    }

    #[test]
    fn a_long_line_is_cut_at_a_character_boundary() {
        let (_dir, path) = file_with("ééééé\n".as_bytes());
        let window = read_after(&path, 0, 3).expect("read");
        assert_eq!((window.text.as_str(), window.next_cursor), ("é", 2));
        let rest = read_after(&path, 2, 100).expect("read");
        assert_eq!(rest.text, "éééé\n");
    }

    #[test]
    fn the_tail_reports_where_it_starts() {
        let (_dir, path) = file_with(b"a\nb\nc\nd\n");
        let window = read_last_lines(&path, 2, 1000).expect("read");
        assert_eq!(
            (window.text.as_str(), window.cursor, window.next_cursor),
            ("c\nd\n", 4, 8)
        );
        let (_dir, path) = file_with(b"a\nb\npartial");
        let window = read_last_lines(&path, 2, 1000).expect("read");
        assert_eq!(window.text, "b\npartial");
        let window = read_last_lines(&path, 10, 1000).expect("read");
        assert_eq!((window.text.as_str(), window.cursor), ("a\nb\npartial", 0));
    }

    #[test]
    fn a_tail_window_drops_the_partial_first_line() {
        let (_dir, path) = file_with(b"first line\nsecond\nthird\n");
        let window = read_last_lines(&path, 10, 12).expect("read");
        assert_eq!((window.text.as_str(), window.cursor), ("third\n", 18));
    }
}
