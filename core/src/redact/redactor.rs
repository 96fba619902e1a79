//! The compiled masker: the secrets' values (and their base64), the shapes'
//! anchors, one search over all of them, and the scan that turns a text
//! into replacements and the point up to which it is decided.

use std::borrow::Cow;
use std::fmt;

use super::base64;
use super::engine::{Cache, Engine};
use super::shapes::{self, ANCHORS, Kind};
use super::verdict::{Text, Verdict};

/// Values shorter than this (in characters) are never masked: too many
/// ordinary words and numbers would be hit.
pub const MIN_SECRET_CHARS: usize = 8;
/// A value's line longer than this is looked for in pieces of this size.
const MAX_PIECE_BYTES: usize = 4096;
/// Values whose base64 is looked for too: at least this long, so that the
/// encoded middle is specific.
const MIN_BASE64_SOURCE: usize = 12;

/// What a literal stands for.
#[derive(Debug, Clone, Copy)]
enum Meaning {
    /// (Part of) a secret's value, or its base64: index into `masks`.
    Secret { mask: usize, raw: bool },
    /// A shape's anchor.
    Anchor(Kind),
}

/// What replaces a span.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mask {
    /// The mask text of a secret (an index into the redactor's masks).
    Secret(usize),
    /// A shape's kind.
    Shape(&'static str),
}

/// One span to replace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Replacement {
    pub start: usize,
    pub end: usize,
    pub mask: Mask,
}

/// Masks secrets in text: the values of given variables and the
/// well-known credential shapes (see [`crate::RedactSettings`] for which
/// variables, and `docs/secrets.md` for the shapes). Each is replaced by
/// `[redacted: NAME]`, NAME being the variable's name or the credential's
/// kind (`[redacted: GITHUB_TOKEN]`, `[redacted: private key]`).
///
/// Build it once and share it (`Arc`): the search is compiled here. A
/// [`crate::RedactStream`] masks a stream cut anywhere; [`Redactor::redact`]
/// a whole text. Its `Debug` shows the variables' names, never their values.
///
/// ```
/// use bashtool_core::Redactor;
/// let redactor = Redactor::new([("DEPLOY_TOKEN", "s3cr3t-deploy-value")]);
/// assert_eq!(
///     redactor.redact("token=s3cr3t-deploy-value"),
///     "token=[redacted: DEPLOY_TOKEN]"
/// );
/// assert_eq!(redactor.redact("short=abc"), "short=abc");
/// ```
pub struct Redactor {
    /// The variables whose values are masked, by name.
    secrets: Vec<(String, String)>,
    literals: Vec<Vec<u8>>,
    meanings: Vec<Meaning>,
    /// `[redacted: NAME]` for each secret mask.
    masks: Vec<String>,
    engine: Engine,
    /// Literal indexes by first byte (for the undecided end of a text).
    by_first_byte: Vec<Vec<u32>>,
    longest: usize,
}

impl fmt::Debug for Redactor {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.secrets.iter().map(|(name, _)| name.as_str()).collect();
        formatter
            .debug_struct("Redactor")
            .field("variables", &names)
            .field("literals", &self.literals.len())
            .field("engine", &self.engine)
            .finish_non_exhaustive()
    }
}

impl Redactor {
    /// Masks the values of `secrets` (name and value pairs; values under
    /// [`MIN_SECRET_CHARS`] characters are left out) and the credential
    /// shapes. A value is looked for line by line (a multi-line value's
    /// lines each), and, from 12 bytes on, also as base64 shows it.
    pub fn new<N: Into<String>, V: Into<String>>(
        secrets: impl IntoIterator<Item = (N, V)>,
    ) -> Self {
        let mut secrets: Vec<(String, String)> = secrets
            .into_iter()
            .map(|(name, value)| (name.into(), value.into()))
            .filter(|(_, value)| value.chars().count() >= MIN_SECRET_CHARS)
            .collect();
        secrets.sort();
        secrets.dedup();
        let mut literals: Vec<Vec<u8>> = Vec::new();
        let mut meanings = Vec::new();
        for (anchor, kind) in ANCHORS {
            literals.push(anchor.as_bytes().to_vec());
            meanings.push(Meaning::Anchor(*kind));
        }
        let mut masks = Vec::new();
        let mut seen: std::collections::HashSet<Vec<u8>> = literals.iter().cloned().collect();
        for (name, value) in &secrets {
            let raw = masks.len();
            masks.push(format!("[redacted: {name}]"));
            let encoded = masks.len();
            masks.push(format!("[redacted: {name} (base64)]"));
            for piece in pieces(value) {
                if seen.insert(piece.to_vec()) {
                    literals.push(piece.to_vec());
                    meanings.push(Meaning::Secret {
                        mask: raw,
                        raw: true,
                    });
                }
                if piece.len() < MIN_BASE64_SOURCE {
                    continue;
                }
                for variant in base64::variants(piece) {
                    if variant.len() >= MIN_BASE64_SOURCE && seen.insert(variant.clone()) {
                        literals.push(variant);
                        meanings.push(Meaning::Secret {
                            mask: encoded,
                            raw: false,
                        });
                    }
                }
            }
        }
        let mut by_first_byte = vec![Vec::new(); 256];
        for (index, literal) in literals.iter().enumerate() {
            by_first_byte[usize::from(literal[0])].push(index as u32);
        }
        Self {
            engine: Engine::new(&literals),
            longest: literals.iter().map(Vec::len).max().unwrap_or(1),
            secrets,
            literals,
            meanings,
            masks,
            by_first_byte,
        }
    }

    /// The names of the variables whose values are masked.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.secrets.iter().map(|(name, _)| name.as_str())
    }

    /// `text` with every secret replaced.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        self.redact_counted(text).0
    }

    /// `text` with every secret replaced, and how many were.
    pub fn redact_counted<'a>(&self, text: &'a str) -> (Cow<'a, str>, usize) {
        let mut replacements = Vec::new();
        let bytes = text.as_bytes();
        self.scan(
            &Text {
                bytes,
                before: b'\n',
                last: true,
            },
            &mut replacements,
            &mut Cache::default(),
        );
        if replacements.is_empty() {
            return (Cow::Borrowed(text), 0);
        }
        let mut out = Vec::with_capacity(bytes.len());
        self.write(bytes, bytes.len(), &replacements, &mut out);
        (Cow::Owned(into_string(out)), replacements.len())
    }

    /// The variables as the job output filter gets them (a process of its
    /// own, see `bashtool_env_local`): one line, `bashtool-redact/1 ` and
    /// JSON. It holds the values: it goes only through a pipe.
    pub fn to_wire(&self) -> String {
        let mut line = String::from(WIRE_PREFIX);
        line.push_str(&serde_json::to_string(&self.secrets).unwrap_or_else(|_| "[]".to_owned()));
        line.push('\n');
        line
    }

    /// The redactor of a [`Redactor::to_wire`] line.
    pub fn from_wire(line: &str) -> Option<Self> {
        let json = line.trim_end().strip_prefix(WIRE_PREFIX)?;
        let secrets: Vec<(String, String)> = serde_json::from_str(json).ok()?;
        Some(Self::new(secrets))
    }

    /// Scans `text`: pushes the spans to replace, in order, and returns how
    /// far it is decided (the rest must wait for more bytes; all of it
    /// when `text.last`).
    pub(crate) fn scan(
        &self,
        text: &Text<'_>,
        replacements: &mut Vec<Replacement>,
        cache: &mut Cache,
    ) -> usize {
        let bytes = text.bytes;
        cache.clear();
        // No literal holds a line end: an undecided end starts after the
        // last one, and within the longest literal's reach.
        let floor = memchr::memrchr2(b'\n', b'\r', bytes)
            .map_or(0, |position| position + 1)
            .max(bytes.len().saturating_sub(self.longest - 1));
        let mut partial: Option<(usize, Option<usize>)> = None;
        let mut at = 0;
        loop {
            let found = self.engine.find(bytes, at, cache);
            if !text.last {
                let from = at.max(floor);
                let next = match partial {
                    Some((searched, next))
                        if searched <= from && next.is_none_or(|next| next >= from) =>
                    {
                        next
                    }
                    _ => self.first_partial(bytes, from),
                };
                partial = Some((from, next));
                if let Some(position) = next
                    && found.is_none_or(|found| position <= found.start)
                {
                    return position;
                }
            }
            let Some(found) = found else {
                if text.last
                    && let Some((position, mask)) = self.cut_secret(bytes, at.max(floor))
                {
                    replacements.push(Replacement {
                        start: position,
                        end: bytes.len(),
                        mask: Mask::Secret(mask),
                    });
                }
                return bytes.len();
            };
            match self.meanings[found.pattern] {
                Meaning::Secret { mask, .. } => {
                    replacements.push(Replacement {
                        start: found.start,
                        end: found.end,
                        mask: Mask::Secret(mask),
                    });
                    at = found.end;
                }
                Meaning::Anchor(kind) => match shapes::check(kind, text, found.start, found.end) {
                    Verdict::Mask { start, end, label } => {
                        debug_assert!(start >= at && end > start);
                        replacements.push(Replacement {
                            start,
                            end,
                            mask: Mask::Shape(label),
                        });
                        at = end;
                    }
                    Verdict::No => at = found.start + 1,
                    Verdict::More => return found.start,
                },
            }
        }
    }

    /// The first position from `from` where the rest of `bytes` is a proper
    /// prefix of a literal: a literal may be cut there.
    fn first_partial(&self, bytes: &[u8], from: usize) -> Option<usize> {
        (from..bytes.len()).find(|&position| {
            let rest = &bytes[position..];
            self.by_first_byte[usize::from(rest[0])]
                .iter()
                .any(|&index| {
                    let literal = &self.literals[index as usize];
                    literal.len() > rest.len() && literal.starts_with(rest)
                })
        })
    }

    /// Where the text ends with the first [`MIN_SECRET_CHARS`] or more
    /// bytes of a secret's value (from `from` on), and that secret's mask:
    /// at the end of a stream, what was printed of a secret is masked.
    fn cut_secret(&self, bytes: &[u8], from: usize) -> Option<(usize, usize)> {
        let last_start = bytes.len().saturating_sub(MIN_SECRET_CHARS - 1);
        (from..last_start).find_map(|position| {
            let rest = &bytes[position..];
            self.by_first_byte[usize::from(rest[0])]
                .iter()
                .find_map(|&index| {
                    let index = index as usize;
                    match self.meanings[index] {
                        Meaning::Secret { mask, raw: true }
                            if self.literals[index].len() > rest.len()
                                && self.literals[index].starts_with(rest) =>
                        {
                            Some((position, mask))
                        }
                        _ => None,
                    }
                })
        })
    }

    /// Appends `bytes[..upto]` to `out` with the replacements made.
    pub(crate) fn write(
        &self,
        bytes: &[u8],
        upto: usize,
        replacements: &[Replacement],
        out: &mut Vec<u8>,
    ) {
        let mut copied = 0;
        for replacement in replacements {
            out.extend_from_slice(&bytes[copied..replacement.start]);
            match replacement.mask {
                Mask::Secret(index) => out.extend_from_slice(self.masks[index].as_bytes()),
                Mask::Shape(label) => {
                    out.extend_from_slice(b"[redacted: ");
                    out.extend_from_slice(label.as_bytes());
                    out.push(b']');
                }
            }
            copied = replacement.end;
        }
        out.extend_from_slice(&bytes[copied..upto]);
    }
}

const WIRE_PREFIX: &str = "bashtool-redact/1 ";

/// The pieces of a value looked for: its lines (a newline is never part of
/// a literal), each in pieces of at most [`MAX_PIECE_BYTES`], those of
/// [`MIN_SECRET_CHARS`] characters or more.
fn pieces(value: &str) -> Vec<&[u8]> {
    let mut pieces = Vec::new();
    for line in value.split(['\n', '\r']) {
        let mut rest = line;
        while !rest.is_empty() {
            let mut cut = rest.len().min(MAX_PIECE_BYTES);
            while !rest.is_char_boundary(cut) {
                cut -= 1;
            }
            let (piece, after) = rest.split_at(cut);
            if piece.chars().count() >= MIN_SECRET_CHARS {
                pieces.push(piece.as_bytes());
            }
            rest = after;
        }
    }
    pieces
}

/// Masked text is UTF-8 when the text was: every span replaced starts and
/// ends at a character boundary (literals are whole characters, shapes
/// ASCII).
pub(crate) fn into_string(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes)
        .unwrap_or_else(|error| String::from_utf8_lossy(error.as_bytes()).into_owned())
}
