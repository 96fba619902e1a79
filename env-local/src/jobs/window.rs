//! Reading a job's output file by cursor: the window after a cursor, or
//! the last lines. A window ends at a line end when it is cut by its size,
//! so the next read starts with a whole line and no character or escape
//! sequence is split; reading on from each `next_cursor` sees every byte
//! once.
//!
//! A cursor is the offset of a byte in the job's output, which is the
//! offset in the file until the output outgrows the file's cap. Then the
//! file holds the first part, a marker line that stands for the bytes
//! dropped, and the last part (see `copier`): a cursor in the last part is
//! its file offset plus the bytes dropped, so cursors handed out before the
//! cut still name the same bytes after it, and a cursor into the dropped
//! bytes gets the window from the marker, which says what is missing.

use std::fs::File;
use std::os::unix::fs::FileExt as _;
use std::path::Path;

use bashtool_core::clean_text;

use crate::jobs::copier::{MAX_MARKER, Marker, parse_marker};

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

/// How the file's bytes map to cursors: one to one, except after the
/// marker of a capped output.
#[derive(Debug, Clone, Copy)]
struct Offsets {
    marker: Option<Marker>,
}

impl Offsets {
    /// Finds the marker of `file` (`length` bytes), which starts at `head`
    /// if the output was capped.
    fn of(file: &File, length: u64, head: Option<u64>) -> std::io::Result<Self> {
        let Some(head) = head.filter(|&head| head < length) else {
            return Ok(Self { marker: None });
        };
        let mut bytes = vec![
            0_u8;
            usize::try_from(length - head)
                .unwrap_or(MAX_MARKER)
                .min(MAX_MARKER)
        ];
        let read = file.read_at(&mut bytes, head)?;
        Ok(Self {
            marker: parse_marker(head, &bytes[..read]),
        })
    }

    /// The cursor of the file's byte at `position`.
    fn cursor(self, position: u64) -> u64 {
        match self.marker {
            Some(marker) if position >= marker.end => {
                position - marker.end + marker.start + marker.omitted
            }
            Some(marker) if position > marker.start => marker.start,
            _ => position,
        }
    }

    /// Where the window for `cursor` starts in the file.
    fn position(self, cursor: u64) -> u64 {
        match self.marker {
            Some(marker) if cursor >= marker.start + marker.omitted => {
                cursor - marker.start - marker.omitted + marker.end
            }
            Some(marker) if cursor > marker.start => marker.start,
            _ => cursor,
        }
    }
}

/// The window after `cursor`: at most `max_bytes` raw bytes, cut at the last
/// line end inside when there is more (a single line longer than that is
/// cut at a character boundary). `head`: where the marker of a capped
/// output would start.
pub fn read_after(
    path: &Path,
    cursor: u64,
    max_bytes: usize,
    head: Option<u64>,
) -> std::io::Result<Window> {
    let file = File::open(path)?;
    let length = file.metadata()?.len();
    let offsets = Offsets::of(&file, length, head)?;
    let start = offsets.position(cursor).min(length);
    let available = length - start;
    let mut wanted = available.min(max_bytes.max(1) as u64);
    if let Some(marker) = offsets.marker
        && start == marker.start
    {
        // The marker is never split.
        wanted = wanted.max(marker.end - marker.start).min(available);
    }
    let mut bytes = vec![0_u8; usize::try_from(wanted).unwrap_or(0)];
    let read = read_fully(&file, &mut bytes, start)?;
    bytes.truncate(read);
    if available > bytes.len() as u64 {
        let end = match memchr::memrchr(b'\n', &bytes) {
            Some(newline) => newline + 1,
            None => char_boundary(&bytes),
        };
        bytes.truncate(end);
    }
    if let Some(marker) = offsets.marker {
        let end = start + bytes.len() as u64;
        if start < marker.start && end > marker.start && end < marker.end {
            bytes.truncate(usize::try_from(marker.start - start).unwrap_or(0));
        }
    }
    let end = start + bytes.len() as u64;
    Ok(Window {
        text: clean_text(&bytes),
        cursor: offsets.cursor(start),
        next_cursor: offsets.cursor(end),
        more: length > end,
    })
}

/// The last `lines` lines, within the last `max_bytes` bytes of the file.
pub fn read_last_lines(
    path: &Path,
    lines: usize,
    max_bytes: usize,
    head: Option<u64>,
) -> std::io::Result<Window> {
    let file = File::open(path)?;
    let length = file.metadata()?.len();
    let offsets = Offsets::of(&file, length, head)?;
    let start = length.saturating_sub(max_bytes.max(1) as u64);
    let mut bytes = vec![0_u8; usize::try_from(length - start).unwrap_or(0)];
    let read = read_fully(&file, &mut bytes, start)?;
    bytes.truncate(read);
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
    let end = start + bytes.len() as u64;
    Ok(Window {
        text: clean_text(&bytes[from..]),
        cursor: offsets.cursor(start + from as u64),
        next_cursor: offsets.cursor(end),
        more: false,
    })
}

/// Reads into `buffer` from `offset` until it is full or the file ends.
fn read_fully(file: &File, buffer: &mut [u8], offset: u64) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buffer.len() {
        match file.read_at(&mut buffer[filled..], offset + filled as u64) {
            Ok(0) => break,
            Ok(count) => filled += count,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    Ok(filled)
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
            let window = read_after(&path, cursor, 100, None).expect("read");
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
        let window = read_after(&path, 0, 3, None).expect("read");
        assert_eq!((window.text.as_str(), window.next_cursor), ("é", 2));
        let rest = read_after(&path, 2, 100, None).expect("read");
        assert_eq!(rest.text, "éééé\n");
    }

    #[test]
    fn the_tail_reports_where_it_starts() {
        let (_dir, path) = file_with(b"a\nb\nc\nd\n");
        let window = read_last_lines(&path, 2, 1000, None).expect("read");
        assert_eq!(
            (window.text.as_str(), window.cursor, window.next_cursor),
            ("c\nd\n", 4, 8)
        );
        let (_dir, path) = file_with(b"a\nb\npartial");
        let window = read_last_lines(&path, 2, 1000, None).expect("read");
        assert_eq!(window.text, "b\npartial");
        let window = read_last_lines(&path, 10, 1000, None).expect("read");
        assert_eq!((window.text.as_str(), window.cursor), ("a\nb\npartial", 0));
    }

    #[test]
    fn a_tail_window_drops_the_partial_first_line() {
        let (_dir, path) = file_with(b"first line\nsecond\nthird\n");
        let window = read_last_lines(&path, 10, 12, None).expect("read");
        assert_eq!((window.text.as_str(), window.cursor), ("third\n", 18));
    }

    /// A capped output: the first part `head\n` (5 bytes), a marker for
    /// 1000 dropped bytes, the last part.
    const CAPPED: &str =
        "head\n[... 1000 bytes omitted here: this file keeps the first part]\nlast 1\nlast 2\n";
    const MARKER_END: u64 = 67;

    #[test]
    fn paging_a_capped_output_shows_the_marker_once_with_cursors_of_the_output() {
        let (_dir, path) = file_with(CAPPED.as_bytes());
        assert_eq!(
            MARKER_END as usize,
            CAPPED.find("last 1").expect("last part")
        );
        let first = read_after(&path, 0, 5, Some(5)).expect("read");
        assert_eq!(
            (first.text.as_str(), first.cursor, first.next_cursor),
            ("head\n", 0, 5)
        );
        // The marker is never split, whatever the window.
        let marker = read_after(&path, 5, 10, Some(5)).expect("read");
        assert_eq!(
            (marker.text.as_str(), marker.cursor, marker.next_cursor),
            (
                "[... 1000 bytes omitted here: this file keeps the first part]\n",
                5,
                1005
            )
        );
        let last = read_after(&path, 1005, 100, Some(5)).expect("read");
        assert_eq!(
            (last.text.as_str(), last.cursor, last.next_cursor, last.more),
            ("last 1\nlast 2\n", 1005, 1019, false)
        );
        // A cursor into the dropped bytes (read before they were dropped)
        // gets the marker, which says what is missing.
        let dropped = read_after(&path, 700, 1000, Some(5)).expect("read");
        assert_eq!((dropped.cursor, dropped.next_cursor), (5, 1019));
        assert!(dropped.text.starts_with("[... 1000 bytes omitted here"));
        // The last lines, with the cursor of the output.
        let tail = read_last_lines(&path, 1, 1000, Some(5)).expect("read");
        assert_eq!(
            (tail.text.as_str(), tail.cursor, tail.next_cursor),
            ("last 2\n", 1012, 1019)
        );
        // Without a marker at the head (or not capped), offsets are the file's.
        let plain = read_after(&path, 0, 1000, None).expect("read");
        assert_eq!(plain.next_cursor, CAPPED.len() as u64);
    }
}
