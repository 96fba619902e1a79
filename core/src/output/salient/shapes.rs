//! The shapes of error-like text, byte by byte: a severity word with what
//! tools print around it, a severity code, an exception name, a location
//! followed by a message that can only be an error. The matcher dispatches
//! to these.

use super::kind::{Kind, Match};

/// Whole words (bounded by non-alphanumerics), case-sensitive.
pub(crate) const WORDS: &[(&str, Kind)] = &[("Killed", Kind::Failure), ("Aborted", Kind::Failure)];

pub(crate) fn is_word_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_'
}

/// Whether `bytes[index..]` starts with `needle`, ignoring ASCII case.
pub(crate) fn starts_with_ignore_case(bytes: &[u8], index: usize, needle: &[u8]) -> bool {
    // The second byte rules out most candidates (`e` is the commonest letter).
    bytes.get(index + 1).map(u8::to_ascii_lowercase) == needle.get(1).copied()
        && bytes
            .get(index..index + needle.len())
            .is_some_and(|window| window.eq_ignore_ascii_case(needle))
}

/// `error`/`fatal` (any case) as a word, followed by what tools print after
/// it: `error:`, `error[E0308]`, `[ERROR]`, `error TS2322`, `Error 1` (make),
/// `"level":"error"`, `level=error`, `ERROR test_x.py`.
pub(crate) fn error_word(bytes: &[u8], index: usize, word_length: usize) -> Option<Kind> {
    let before = index.checked_sub(1).map(|at| bytes[at]);
    let after = bytes.get(index + word_length).copied();
    let next = bytes.get(index + word_length + 1).copied();
    let word = &bytes[index..index + word_length];
    if before.is_some_and(|byte| byte == b'"') && after == Some(b'"') {
        // A JSON value "error"; keys ("error": …) are not enough.
        let key_end = index.saturating_sub(1);
        let head = &bytes[..key_end];
        let trimmed = head.trim_ascii_end();
        return trimmed.ends_with(b":").then_some(Kind::LogError);
    }
    if before == Some(b'=') && after.is_none_or(|byte| byte == b' ' || byte == b',') {
        return Some(Kind::LogError);
    }
    if before.is_some_and(is_word_byte) {
        // CamelCase exception names: `TypeError:` in `Uncaught TypeError: x`.
        let capital = word[0] == b'E';
        return (capital && after == Some(b':') && word_length == 5).then_some(Kind::Exception);
    }
    // shellcheck's `SC1049 (error):`, a severity in parentheses.
    if before == Some(b'(') && after == Some(b')') {
        return Some(Kind::Diagnostic);
    }
    if after == Some(b' ')
        && (first_word_of_line(bytes, index) || exit_status_follows(bytes, index + word_length))
    {
        return Some(Kind::Diagnostic);
    }
    match after {
        Some(b':' | b'[' | b']' | b'!') => Some(Kind::Diagnostic),
        None => before
            .is_some_and(|byte| byte == b'[')
            .then_some(Kind::Diagnostic),
        Some(b' ') => {
            let all_caps = word.iter().all(u8::is_ascii_uppercase);
            let follows = next.is_some_and(|byte| {
                byte.is_ascii_digit() || byte == b' ' || byte == b'(' || byte == b'T'
            });
            (all_caps || follows).then_some(Kind::Diagnostic)
        }
        _ => None,
    }
}

/// An exception line: `KeyError: 'user'`, `java.lang.IllegalStateException:
/// x`, `AssertionError [ERR_ASSERTION]: …`, a bare `ZeroDivisionError`.
pub(crate) fn exception_line(trimmed: &str) -> bool {
    // The name is a run of name bytes ending at the first `:` or space (or
    // the end of the line): neither can be part of a name. memchr2 finds
    // that end at memory speed, and only names with the right suffix pay for
    // the byte-by-byte check; this runs on every line of the output.
    let bytes = trimmed.as_bytes();
    let name_end = memchr::memchr2(b':', b' ', bytes).unwrap_or(bytes.len());
    let name = &bytes[..name_end];
    let named = [&b"Error"[..], b"Exception", b"Failure"]
        .iter()
        .any(|suffix| name.ends_with(suffix));
    if !named
        || !name
            .iter()
            .all(|byte| is_word_byte(*byte) || *byte == b'.' || *byte == b'$')
    {
        return false;
    }
    let rest = &bytes[name_end..];
    rest.is_empty() || rest.starts_with(b":") || rest.starts_with(b" [")
}

/// `FAIL` as the start of a word: `FAIL`, `FAILED`, `FAILURE`, `--- FAIL:`.
pub(crate) fn fail_word(bytes: &[u8], index: usize) -> bool {
    index
        .checked_sub(1)
        .is_none_or(|at| !bytes[at].is_ascii_alphanumeric())
        && bytes[index..].starts_with(b"FAIL")
}

pub(crate) fn whole_word(bytes: &[u8], index: usize, word: &str) -> bool {
    bytes[index..].starts_with(word.as_bytes())
        && index
            .checked_sub(1)
            .is_none_or(|at| !is_word_byte(bytes[at]))
        && bytes
            .get(index + word.len())
            .is_none_or(|byte| !is_word_byte(*byte))
}

/// `failure:` or `failed:` starting a word (`Coverage failure: total of 62
/// is less than fail-under=80`).
pub(crate) fn failure_word(bytes: &[u8], index: usize) -> bool {
    index
        .checked_sub(1)
        .is_none_or(|at| !is_word_byte(bytes[at]))
        && (bytes[index..].starts_with(b"failure:") || bytes[index..].starts_with(b"failed:"))
}

/// A non-zero exit status in words: `exit status 2`, `exit code 1`,
/// `exited with code 3`, `exited with status 127`.
pub(crate) fn exit_status(bytes: &[u8], index: usize) -> bool {
    if index
        .checked_sub(1)
        .is_some_and(|at| is_word_byte(bytes[at]))
    {
        return false;
    }
    let rest = &bytes[index..];
    let Some(after) = [
        &b"exit status "[..],
        b"exit code ",
        b"exited with code ",
        b"exited with status ",
        b"exited with ",
    ]
    .iter()
    .find_map(|phrase| rest.strip_prefix(*phrase)) else {
        return false;
    };
    let digits = after
        .iter()
        .take_while(|byte| byte.is_ascii_digit())
        .count();
    digits > 0 && after[..digits].iter().any(|byte| *byte != b'0')
}

/// Words that tell of a failure inside a long line, where no error-like
/// token is (an SQL error in a JSON record, a rejected value in a long
/// statement); only to choose which part of a long line is shown.
const TELLING_WORDS: &[&str] = &[
    "failed",
    "Failed",
    "failure",
    "Failure",
    "constraint",
    "violat",
    "denied",
    "refused",
    "invalid",
    "Invalid",
    "unable",
    "Unable",
    "cannot",
    "Cannot",
    "can't",
    "not found",
    "exception",
    "timed out",
    "abort",
    "\"reason\"",
    "\"problem\"",
    "\"message\"",
    "\"detail\"",
];

/// The last telling word of `text` (see [`TELLING_WORDS`]).
pub(crate) fn telling_word(text: &str) -> Option<Match> {
    TELLING_WORDS
        .iter()
        .filter_map(|word| text.rfind(word))
        .max()
        .map(|offset| Match {
            kind: Kind::Telling,
            offset,
        })
}

/// `Parse error near …`, `Runtime error …`: the severity word right after
/// the first word of the line, a capitalized one (sqlite, many interpreters).
fn first_word_of_line(bytes: &[u8], index: usize) -> bool {
    let Some(prefix) = index.checked_sub(1).map(|space| &bytes[..space]) else {
        return false;
    };
    prefix.first().is_some_and(u8::is_ascii_uppercase)
        && prefix.len() <= 16
        && prefix.iter().all(u8::is_ascii_alphabetic)
}

/// `returned error exit status 1` (dpkg), `error code 2`, `error status`.
fn exit_status_follows(bytes: &[u8], space: usize) -> bool {
    let rest = bytes.get(space + 1..).unwrap_or_default();
    rest.starts_with(b"exit status") || rest.starts_with(b"code ") || rest.starts_with(b"status ")
}

/// First words of a message after a location that can only report an error
/// (TeX's `./report.tex:94: Undefined control sequence.`, a linter's
/// `x.py:3: Undefined variable`).
const SEVERE_FIRST_WORDS: &[&str] = &[
    "Undefined",
    "Undeclared",
    "Unresolved",
    "Unterminated",
    "Unexpected",
    "Missing",
    "Invalid",
    "Illegal",
    "Unknown",
    "Cannot",
    "Unable",
];

/// A severity code in a linter's own column: pylint's `E0602` (error) and
/// `F0001` (fatal), four digits, then `(` or `:`. (Three-digit `E501` is
/// pycodestyle's style code, not an error.)
fn severity_code(bytes: &[u8]) -> bool {
    let bytes = bytes.strip_prefix(b"[").unwrap_or(bytes);
    matches!(bytes.first(), Some(b'E' | b'F'))
        && bytes.len() > 5
        && bytes[1..5].iter().all(u8::is_ascii_digit)
        && matches!(bytes[5], b'(' | b':')
}

/// The offset of the message of a located line (`path:LINE: message`,
/// `path:LINE:COLUMN: message`) when that message is error-like by its
/// shape: a severity code or a first word from [`SEVERE_FIRST_WORDS`].
/// Runs on every line, so it gives up at the first space before a colon.
pub(crate) fn located_error(line: &str) -> Option<usize> {
    let bytes = line.as_bytes();
    // memchr2: this runs on every line, and most lines have a space early.
    let colon = memchr::memchr2(b':', b' ', &bytes[..bytes.len().min(256)])?;
    if colon == 0 || bytes[colon] != b':' {
        return None;
    }
    let mut at = colon + 1;
    let mut numbers = 0;
    loop {
        let digits = bytes[at..]
            .iter()
            .take_while(|byte| byte.is_ascii_digit())
            .count();
        if digits == 0 || bytes.get(at + digits) != Some(&b':') {
            break;
        }
        at += digits + 1;
        numbers += 1;
    }
    if numbers == 0 {
        return None;
    }
    let spaces = bytes[at..].iter().take_while(|byte| **byte == b' ').count();
    let message = &bytes[at + spaces..];
    let word_end = message
        .iter()
        .position(|byte| !byte.is_ascii_alphabetic())
        .unwrap_or(message.len());
    let severe = severity_code(message)
        || SEVERE_FIRST_WORDS
            .iter()
            .any(|word| word.as_bytes() == &message[..word_end]);
    severe.then_some(at + spaces)
}

/// A line that says where something is: `solver.f90:5:17:`, `src/a.c:3: …`,
/// `File "report.ml", line 2, characters 36-41:`, ` --> src/lib.rs:2:21`,
/// `at app.js:12:3`, `x.ts(3,5): …`. The location that starts a block whose
/// message comes a few lines below (after the source line and a caret).
pub(crate) fn location_line(text: &str) -> bool {
    let mut rest = text.trim_start();
    for prefix in ["--> ", "at ", "In ", "in ", "File ", "from "] {
        if let Some(stripped) = rest.strip_prefix(prefix) {
            rest = stripped.trim_start();
            break;
        }
    }
    let bytes = rest.as_bytes();
    if bytes.first() == Some(&b'"') {
        // `"report.ml", line 2`
        return memchr::memchr(b'"', &bytes[1..])
            .is_some_and(|close| bytes[close + 2..].starts_with(b", line "));
    }
    // A file name (it has a `.` or a `/`), then `:LINE` or `(LINE`.
    let name_end = bytes
        .iter()
        .position(|byte| matches!(byte, b':' | b'(' | b' ' | b'\t'))
        .unwrap_or(bytes.len());
    let name = &bytes[..name_end];
    name.len() > 2
        && name.iter().any(|byte| matches!(byte, b'.' | b'/'))
        && name.iter().any(u8::is_ascii_alphabetic)
        && matches!(bytes.get(name_end), Some(b':' | b'('))
        && bytes.get(name_end + 1).is_some_and(u8::is_ascii_digit)
}

#[cfg(test)]
mod tests {
    use super::{located_error, location_line};

    #[test]
    fn a_location_line_names_a_file_and_a_line() {
        for line in [
            "solver.f90:5:17:",
            "src/a.c:3:5: error: x",
            "File \"report.ml\", line 2, characters 36-41:",
            "  File \"app.py\", line 3, in a",
            " --> beta/src/lib.rs:2:21",
            "    at /srv/app.js:12:3",
            "src/main.ts(2,7): error TS2322",
        ] {
            assert!(location_line(line), "{line}");
        }
        for line in [
            "Error: Syntax error in expression at (1)",
            "error: could not compile",
            "12:30:01 INFO ready",
            "note: x",
            "http://example.com",
            "",
        ] {
            assert!(!location_line(line), "{line}");
        }
    }

    #[test]
    fn a_located_message_is_an_error_by_its_code_or_first_word() {
        assert_eq!(
            located_error("./report.tex:94: Undefined control sequence."),
            Some(17)
        );
        assert_eq!(
            located_error("shop/mod047.py:8: [E0602(undefined-variable), price_47] Undefined"),
            Some(18)
        );
        assert_eq!(
            located_error("shop/m.py:8:11: E0602: Undefined variable 'totl'"),
            Some(16)
        );
        for line in [
            "shop/m.py:8:11: C0116: Missing function or method docstring",
            "src/a.py:3:1: E501 line too long",
            "    pkg_test.go:7: describe 0: item 28: 0",
            "see the docs: Missing pieces are listed",
            "notes.txt:12: Meeting moved",
        ] {
            assert_eq!(located_error(line), None, "{line}");
        }
    }
}
