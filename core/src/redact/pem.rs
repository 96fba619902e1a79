//! PEM private key blocks (RFC 7468, OpenSSH, PGP): from `-----BEGIN …
//! PRIVATE KEY-----` to its `-----END …-----`, masked whole, over as many
//! lines as it takes.
//!
//! The body is read line by line; a line ends at a newline or a carriage
//! return, or at a written `\n` (a key inside a JSON string, as in a cloud
//! service account file). Body lines are base64 (one word, or long words
//! separated by blanks, as when a key's newlines became spaces), headers
//! (`Proc-Type: 4,ENCRYPTED`) or blank. A line that is none of these ends
//! the block early, before it: a `BEGIN` line quoted in prose does not hide
//! the text after it. A short one-word line (`Rg==`, a key's last line, or
//! `done`) counts only once a body line or the `END` line follows it.

use super::verdict::{Text, Verdict, is_base64};

const LABEL: &str = "private key";
/// The longest label between `BEGIN ` and `-----`.
const MAX_LABEL: usize = 48;
/// A block is looked at up to this size; a longer one (no real key is) is
/// masked up to here.
const MAX_BLOCK: usize = 64 * 1024;
/// A single-word line shorter than this is a body line only if more body
/// follows it.
const SHORT_WORD: usize = 16;

/// The check at `-----BEGIN ` (`start..anchor_end`).
pub(crate) fn private_key(text: &Text<'_>, start: usize, anchor_end: usize) -> Verdict {
    let bytes = text.bytes;
    let body = match label_end(text, anchor_end, true) {
        Ok(end) => end,
        Err(verdict) => return verdict,
    };
    let mask = |end: usize| Verdict::Mask {
        start,
        end,
        label: LABEL,
    };
    // The end of the last line known to be body, and of the line after it
    // that is body only if more body comes.
    let mut confirmed = body;
    let mut tentative: Option<usize> = None;
    let mut line = body;
    loop {
        if line - start > MAX_BLOCK {
            return mask(confirmed);
        }
        let (content_end, next) = line_end(bytes, line);
        let content = &bytes[line..content_end];
        if let Some(end_marker) = memchr::memmem::find(content, b"-----END ") {
            let before = &content[..end_marker];
            if !before.iter().all(|&byte| is_base64(byte) || is_blank(byte)) {
                return mask(confirmed);
            }
            return match label_end(text, line + end_marker + 9, false) {
                Ok(end) => mask(end),
                Err(Verdict::More) => Verdict::More,
                Err(_) => mask(confirmed),
            };
        }
        let Some(next) = next else {
            // The text ends inside this line.
            if !text.last {
                return if content.len() < MAX_BLOCK {
                    Verdict::More
                } else {
                    mask(confirmed)
                };
            }
            return match classify(content) {
                Line::Body | Line::Short => mask(content_end),
                Line::Other => mask(confirmed),
            };
        };
        match classify(content) {
            Line::Body => {
                confirmed = content_end;
                tentative = None;
            }
            Line::Short => {
                if let Some(end) = tentative {
                    confirmed = end;
                }
                tentative = Some(content_end);
            }
            Line::Other => return mask(confirmed),
        }
        line = next;
    }
}

/// After `BEGIN ` or `END `: the label (capitals, digits, spaces) and
/// `-----`. Where it ends; `Err` with the verdict when it is not one (for
/// `BEGIN`, only labels of private keys count).
fn label_end(text: &Text<'_>, from: usize, begin: bool) -> Result<usize, Verdict> {
    let bytes = text.bytes;
    let mut at = from;
    while at < bytes.len()
        && at - from <= MAX_LABEL
        && (bytes[at].is_ascii_uppercase() || bytes[at].is_ascii_digit() || bytes[at] == b' ')
    {
        at += 1;
    }
    if at == bytes.len() {
        return Err(text.at_end(|| Verdict::No));
    }
    let label = &bytes[from..at];
    if begin && !(label.ends_with(b"PRIVATE KEY") || label.ends_with(b"PRIVATE KEY BLOCK")) {
        return Err(Verdict::No);
    }
    for offset in 0..5 {
        match bytes.get(at + offset) {
            None => return Err(text.at_end(|| Verdict::No)),
            Some(b'-') => {}
            Some(_) => return Err(Verdict::No),
        }
    }
    Ok(at + 5)
}

/// The end of the line's content and where the next line starts (`None`
/// when the text ends first).
fn line_end(bytes: &[u8], from: usize) -> (usize, Option<usize>) {
    let mut at = from;
    while at < bytes.len() {
        match bytes[at] {
            b'\n' | b'\r' => return (at, Some(at + 1)),
            b'\\' => match bytes.get(at + 1) {
                Some(b'n' | b'r') => return (at, Some(at + 2)),
                // A backslash as the text's last byte may start `\n`.
                None => return (at, None),
                Some(_) => {}
            },
            _ => {}
        }
        at += 1;
    }
    (at, None)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Line {
    /// Base64, a header or blank.
    Body,
    /// One short base64 word: body only if more body follows.
    Short,
    Other,
}

fn is_blank(byte: u8) -> bool {
    byte == b' ' || byte == b'\t'
}

fn classify(content: &[u8]) -> Line {
    let words: Vec<&[u8]> = content
        .split(|&byte| is_blank(byte))
        .filter(|word| !word.is_empty())
        .collect();
    match words.as_slice() {
        [] => Line::Body,
        [word] if word.iter().all(|&byte| is_base64(byte)) => {
            if word.len() >= SHORT_WORD {
                Line::Body
            } else {
                Line::Short
            }
        }
        [first, ..] if is_header_name(first) => Line::Body,
        words
            if words
                .iter()
                .all(|word| word.iter().all(|&byte| is_base64(byte)))
                && words.iter().any(|word| word.len() >= SHORT_WORD) =>
        {
            Line::Body
        }
        _ => Line::Other,
    }
}

/// The header names RFC 1421 and OpenPGP armor put inside a block
/// (`Proc-Type: 4,ENCRYPTED`, `DEK-Info: AES-128-CBC,…`, `Version: …`).
const HEADERS: &[&[u8]] = &[
    b"Proc-Type:",
    b"DEK-Info:",
    b"Comment:",
    b"Version:",
    b"Hash:",
    b"Charset:",
];

fn is_header_name(word: &[u8]) -> bool {
    HEADERS.contains(&word)
}
