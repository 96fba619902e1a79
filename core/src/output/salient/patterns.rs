//! What makes a line look like an error, and how much context it wants.
//!
//! This runs on every line of every output (a 1 GB build log included), so it
//! is one pass over the bytes with a dispatch on the byte, plus a few
//! `starts_with` checks on the trimmed line; no regex, no allocation.

/// What kind of error-like line matched; decides the context kept with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Compiler, linter and tool diagnostics: `error:`, `error[E0308]`,
    /// `x.c:3:5: error:`, `[ERROR]`, `fatal:`, `undefined reference`.
    Diagnostic,
    /// A failing test: `--- FAIL:`, `FAILED`, `not ok`, `✕`, jest's `●`.
    TestFailure,
    /// `thread 'main' panicked at`, Go's `panic:`.
    Panic,
    /// `Traceback (most recent call last):`.
    Traceback,
    /// An exception line (`ValueError: …`, `java.lang.X: …`, `Caused by:`).
    Exception,
    /// Assertion details: pytest's `E   …`, `Expected:`/`Received:`.
    Assertion,
    /// An OS or shell error: `Permission denied`, `command not found`, …
    Failure,
    /// A structured log record at error level.
    LogError,
    /// One of the embedder's extra patterns.
    Custom,
}

/// How many lines around a salient line are kept with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Context {
    pub before: usize,
    pub after: usize,
    /// A blank line ends the context after (rustc and gcc end a diagnostic
    /// with one).
    pub stop_at_blank: bool,
}

/// The most context lines kept before a salient line.
pub(crate) const MAX_BEFORE: usize = 4;

impl Kind {
    pub(crate) fn context(self) -> Context {
        let (before, after, stop_at_blank) = match self {
            // rustc: `-->` location, the source line and the carets follow.
            Self::Diagnostic => (1, 8, true),
            // Go prints the assertion before `--- FAIL:`, jest after `●`.
            Self::TestFailure => (2, 6, false),
            Self::Panic => (0, 4, false),
            Self::Traceback | Self::LogError => (0, 0, false),
            // The last frames of a traceback come before the exception line.
            Self::Exception => (MAX_BEFORE, 2, false),
            Self::Assertion | Self::Custom => (1, 2, false),
            // `+ cmd` of `bash -x` before `cmd: command not found`.
            Self::Failure => (1, 0, false),
        };
        Context {
            before,
            after,
            stop_at_blank,
        }
    }
}

/// A salient line: its kind and the byte offset of the match in the line
/// (always on a char boundary).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Match {
    pub kind: Kind,
    pub offset: usize,
}

/// Recognizes error-like lines: the built-in patterns plus the embedder's.
#[derive(Debug, Clone, Default)]
pub(crate) struct Matcher {
    extra: Vec<String>,
}

/// Line starts (after indentation) that mark a salient line.
const LINE_STARTS: &[(&str, Kind)] = &[
    ("Traceback (most recent call last)", Kind::Traceback),
    ("Caused by:", Kind::Exception),
    ("Exception in thread", Kind::Exception),
    ("not ok ", Kind::TestFailure),
    ("● ", Kind::TestFailure),
    ("panic: ", Kind::Panic),
    ("npm ERR!", Kind::Diagnostic),
    ("npm error", Kind::Diagnostic),
    ("fatal:", Kind::Diagnostic),
    ("Expected:", Kind::Assertion),
    ("Received:", Kind::Assertion),
    ("- Expected", Kind::Assertion),
    ("+ Received", Kind::Assertion),
];

/// Phrases found anywhere in a line, case-sensitive, by their first byte
/// (most bytes of a line start none of them).
fn phrases_starting_with(byte: u8) -> &'static [(&'static str, Kind)] {
    match byte {
        b'p' => &[("panicked at", Kind::Panic)],
        b'u' => &[
            ("undefined reference", Kind::Diagnostic),
            ("undefined: ", Kind::Diagnostic),
        ],
        b'P' => &[("Permission denied", Kind::Failure)],
        b'N' => &[
            ("No such file or directory", Kind::Failure),
            ("No space left on device", Kind::Failure),
        ],
        b'c' => &[
            ("command not found", Kind::Failure),
            ("cannot access", Kind::Failure),
            ("cannot open", Kind::Failure),
            ("core dumped", Kind::Failure),
        ],
        b'S' => &[("Segmentation fault", Kind::Failure)],
        b'C' => &[("CONFLICT", Kind::Diagnostic)],
        b'T' => &[("Too many levels of symbolic links", Kind::Failure)],
        b'F' => &[("File system loop", Kind::Failure)],
        b'O' => &[
            ("Operation not permitted", Kind::Failure),
            ("Out of memory", Kind::Failure),
        ],
        b'A' => &[
            ("Assertion `", Kind::Assertion),
            ("Assertion failed", Kind::Assertion),
        ],
        b'"' => &[
            ("\"level\":50", Kind::LogError),
            ("\"level\":60", Kind::LogError),
        ],
        _ => &[],
    }
}

/// The bytes that may start a pattern of `Matcher::scan`: one table lookup
/// skips all the others.
static STARTS_A_PATTERN: [bool; 256] = {
    let mut table = [false; 256];
    let starts = b"eEfFKApuPNcSCTO\"\xE2";
    let mut index = 0;
    while index < starts.len() {
        table[starts[index] as usize] = true;
        index += 1;
    }
    table
};

/// A word of every pattern `Matcher::scan` looks for, in the cases tools
/// print them: a line that contains none of them cannot match. (Case
/// variants are listed rather than matched ignoring case, which would take
/// the prefilter off its SIMD path.)
const SCAN_ANCHORS: &[&str] = &[
    "error",
    "Error",
    "ERROR",
    "fatal",
    "Fatal",
    "FATAL",
    "FAIL",
    "File system loop",
    "\u{2715}",
    "\u{2716}",
    "\u{2717}",
    "Killed",
    "Aborted",
    "Assertion",
    "panicked at",
    "undefined",
    "Permission denied",
    "No such file or directory",
    "No space left on device",
    "command not found",
    "cannot access",
    "cannot open",
    "core dumped",
    "Segmentation fault",
    "CONFLICT",
    "Too many levels of symbolic links",
    "Operation not permitted",
    "Out of memory",
    "\"level\":50",
    "\"level\":60",
];

/// Finds whether a line holds any anchor. Teddy (SIMD) when the CPU has it,
/// else an Aho-Corasick automaton.
enum Prefilter {
    Packed(aho_corasick::packed::Searcher),
    Automaton(aho_corasick::AhoCorasick),
}

impl Prefilter {
    fn is_match(&self, bytes: &[u8]) -> bool {
        match self {
            Self::Packed(searcher) => searcher.find(bytes).is_some(),
            Self::Automaton(automaton) => automaton.is_match(bytes),
        }
    }
}

/// Offset of the first scan anchor in `bytes`: lines before it cannot match
/// the byte scan. One pass over a whole chunk instead of one call per line.
pub(crate) fn first_anchor(bytes: &[u8]) -> Option<usize> {
    match scan_prefilter() {
        Prefilter::Packed(searcher) => searcher.find(bytes).map(|found| found.start()),
        Prefilter::Automaton(automaton) => automaton.find(bytes).map(|found| found.start()),
    }
}

fn scan_prefilter() -> &'static Prefilter {
    static PREFILTER: std::sync::LazyLock<Prefilter> = std::sync::LazyLock::new(|| {
        aho_corasick::packed::Searcher::new(SCAN_ANCHORS).map_or_else(
            || {
                Prefilter::Automaton(
                    aho_corasick::AhoCorasick::new(SCAN_ANCHORS)
                        .expect("the scan anchors are valid literals"),
                )
            },
            Prefilter::Packed,
        )
    });
    &PREFILTER
}

/// Whole words (bounded by non-alphanumerics), case-sensitive.
const WORDS: &[(&str, Kind)] = &[("Killed", Kind::Failure), ("Aborted", Kind::Failure)];

fn is_word_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_'
}

/// Whether `bytes[index..]` starts with `needle`, ignoring ASCII case.
fn starts_with_ignore_case(bytes: &[u8], index: usize, needle: &[u8]) -> bool {
    // The second byte rules out most candidates (`e` is the commonest letter).
    bytes.get(index + 1).map(u8::to_ascii_lowercase) == needle.get(1).copied()
        && bytes
            .get(index..index + needle.len())
            .is_some_and(|window| window.eq_ignore_ascii_case(needle))
}

/// `error`/`fatal` (any case) as a word, followed by what tools print after
/// it: `error:`, `error[E0308]`, `[ERROR]`, `error TS2322`, `Error 1` (make),
/// `"level":"error"`, `level=error`, `ERROR test_x.py`.
fn error_word(bytes: &[u8], index: usize, word_length: usize) -> Option<Kind> {
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
fn exception_line(trimmed: &str) -> bool {
    let name_end = trimmed
        .bytes()
        .position(|byte| !(is_word_byte(byte) || byte == b'.' || byte == b'$'))
        .unwrap_or(trimmed.len());
    let name = &trimmed[..name_end];
    let named = ["Error", "Exception", "Failure"]
        .iter()
        .any(|suffix| name.len() >= suffix.len() && name.ends_with(suffix));
    if !named {
        return false;
    }
    let rest = &trimmed[name_end..];
    rest.is_empty() || rest.starts_with(':') || rest.starts_with(" [")
}

/// `FAIL` as the start of a word: `FAIL`, `FAILED`, `FAILURE`, `--- FAIL:`.
fn fail_word(bytes: &[u8], index: usize) -> bool {
    index
        .checked_sub(1)
        .is_none_or(|at| !bytes[at].is_ascii_alphanumeric())
        && bytes[index..].starts_with(b"FAIL")
}

fn whole_word(bytes: &[u8], index: usize, word: &str) -> bool {
    bytes[index..].starts_with(word.as_bytes())
        && index
            .checked_sub(1)
            .is_none_or(|at| !is_word_byte(bytes[at]))
        && bytes
            .get(index + word.len())
            .is_none_or(|byte| !is_word_byte(*byte))
}

impl Matcher {
    pub(crate) fn new(extra: &[String]) -> Self {
        Self {
            extra: extra
                .iter()
                .filter(|pattern| !pattern.is_empty())
                .cloned()
                .collect(),
        }
    }

    /// The first error-like match in `line`, if any.
    pub(crate) fn find(&self, line: &str) -> Option<Match> {
        self.find_with_hint(line, true)
    }

    /// Like [`Matcher::find`]; `may_hold_anchor: false` says the caller's
    /// own prefilter pass (over a whole chunk) found no anchor in the line,
    /// so the byte scan is skipped.
    pub(crate) fn find_with_hint(&self, line: &str, may_hold_anchor: bool) -> Option<Match> {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        if let Some(found) = Self::find_at_start(line, trimmed, indent) {
            return Some(found);
        }
        if may_hold_anchor && let Some(found) = Self::scan(line.as_bytes()) {
            return Some(found);
        }
        self.extra.iter().find_map(|pattern| {
            line.find(pattern.as_str()).map(|offset| Match {
                kind: Kind::Custom,
                offset,
            })
        })
    }

    /// The first error-like token inside a fragment of a line (the middle
    /// of a very long one): only the patterns that may sit anywhere.
    pub(crate) fn find_inside(&self, fragment: &str) -> Option<Match> {
        Self::scan(fragment.as_bytes()).or_else(|| {
            self.extra.iter().find_map(|pattern| {
                fragment.find(pattern.as_str()).map(|offset| Match {
                    kind: Kind::Custom,
                    offset,
                })
            })
        })
    }

    fn find_at_start(line: &str, trimmed: &str, indent: usize) -> Option<Match> {
        let at_start = |kind| {
            Some(Match {
                kind,
                offset: indent,
            })
        };
        // pytest marks assertion details with `E` in the first column.
        if line.starts_with("E  ") || line == "E" {
            return at_start(Kind::Assertion);
        }
        let first = trimmed.as_bytes().first().copied();
        for (start, kind) in LINE_STARTS {
            // The first byte before a full compare: this runs on every line.
            if start.as_bytes().first().copied() == first && trimmed.starts_with(start) {
                return at_start(*kind);
            }
        }
        if exception_line(trimmed) {
            return at_start(Kind::Exception);
        }
        None
    }

    fn scan(bytes: &[u8]) -> Option<Match> {
        // Nearly every line of a big output has none of the anchors: one
        // SIMD pass answers that, and only the rare candidates pay for the
        // byte-by-byte dispatch below.
        if !scan_prefilter().is_match(bytes) {
            return None;
        }
        for (index, byte) in bytes.iter().enumerate() {
            if !STARTS_A_PATTERN[usize::from(*byte)] {
                continue;
            }
            let kind = match *byte {
                b'e' | b'E' if starts_with_ignore_case(bytes, index, b"error") => {
                    error_word(bytes, index, 5)
                }
                b'f' | b'F' if starts_with_ignore_case(bytes, index, b"fatal") => {
                    error_word(bytes, index, 5)
                }
                b'F' if fail_word(bytes, index) => Some(Kind::TestFailure),
                b'F' => Self::phrase(bytes, index),
                // ✕ ✖ ✗ (U+2715..U+2717): jest, node's spec reporter, mocha.
                0xE2 if matches!(bytes.get(index + 1..index + 3), Some([0x9C, 0x95..=0x97])) => {
                    Some(Kind::TestFailure)
                }
                b'K' | b'A' => WORDS
                    .iter()
                    .find(|(word, _)| whole_word(bytes, index, word))
                    .map(|(_, kind)| *kind)
                    .or_else(|| Self::phrase(bytes, index)),
                b'p' | b'u' | b'P' | b'N' | b'c' | b'S' | b'C' | b'T' | b'O' | b'"' => {
                    Self::phrase(bytes, index)
                }
                _ => None,
            };
            if let Some(kind) = kind {
                return Some(Match {
                    kind,
                    offset: index,
                });
            }
        }
        None
    }

    #[inline]
    fn phrase(bytes: &[u8], index: usize) -> Option<Kind> {
        let second = bytes.get(index + 1).copied();
        phrases_starting_with(bytes[index])
            .iter()
            .find(|(phrase, _)| {
                phrase.as_bytes().get(1).copied() == second
                    && bytes[index..].starts_with(phrase.as_bytes())
            })
            .map(|(_, kind)| *kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(line: &str) -> Option<Kind> {
        Matcher::default().find(line).map(|found| found.kind)
    }

    #[test]
    fn every_phrase_passes_the_prefilter() {
        for byte in 0..=u8::MAX {
            for (phrase, _) in phrases_starting_with(byte) {
                assert!(scan_prefilter().is_match(phrase.as_bytes()), "{phrase}");
            }
        }
        for (word, _) in WORDS {
            assert!(scan_prefilter().is_match(word.as_bytes()), "{word}");
        }
    }

    #[test]
    fn recognizes_compiler_and_tool_diagnostics() {
        for line in [
            "error[E0308]: mismatched types",
            "error: could not compile `app`",
            "src/a.c:3:20: error: expected ';' before 'return'",
            "src/main.ts(2,7): error TS2322: Type 'number' is not assignable",
            "make: *** [Makefile:7: src/unit047.o] Error 1",
            "[ERROR] Failed to execute goal",
            "ERROR tests/test_mod05.py",
            "fatal: not a git repository",
            "foo.c:(.text+0x1a): undefined reference to `checksum'",
            "./main.go:3:29: undefined: retryBudget",
            "npm ERR! code ELIFECYCLE",
            "CONFLICT (content): Merge conflict in a.txt",
            "ERROR:root:connection lost",
        ] {
            assert_eq!(kind(line), Some(Kind::Diagnostic), "{line}");
        }
    }

    #[test]
    fn recognizes_test_failures_exceptions_and_os_errors() {
        let cases = [
            ("--- FAIL: TestPrice (0.00s)", Kind::TestFailure),
            ("test tests::it_works ... FAILED", Kind::TestFailure),
            ("not ok 78 - rounds money", Kind::TestFailure),
            ("  ✕ applies the discount (3 ms)", Kind::TestFailure),
            ("  ● cart › applies the discount", Kind::TestFailure),
            ("thread 'main' panicked at src/main.rs:4:35:", Kind::Panic),
            ("Traceback (most recent call last):", Kind::Traceback),
            ("KeyError: 'user'", Kind::Exception),
            ("java.lang.IllegalStateException: boom", Kind::Exception),
            (
                "Caused by: java.io.FileNotFoundException: x",
                Kind::Exception,
            ),
            ("Uncaught TypeError: x is not a function", Kind::Exception),
            ("E       assert 300 == 301", Kind::Assertion),
            ("    Expected: 22.5", Kind::Assertion),
            ("grep: tree/mod23: Permission denied", Kind::Failure),
            (
                "deploy.sh: line 5: kubectl: command not found",
                Kind::Failure,
            ),
            ("run.sh: line 1: 123 Killed   ./worker", Kind::Failure),
            (
                r#"{"level":"error","msg":"payment rejected"}"#,
                Kind::LogError,
            ),
            ("ts=1 level=error msg=boom", Kind::LogError),
        ];
        for (line, expected) in cases {
            assert_eq!(kind(line), Some(expected), "{line}");
        }
    }

    #[test]
    fn ignores_lines_that_only_mention_errors() {
        for line in [
            "warning: unused variable: `x`",
            "test result: ok. 5 passed; 0 failed; 0 ignored",
            "   Compiling error-chain v0.12.4",
            "src/error.rs:10:5",
            "cc -Werror -c a.c",
            "fn handle_errors(errors: Vec<Error>) {}",
            r#"{"level":"info","error":null}"#,
            "test_error_handling PASSED",
            "",
            "ERRORS",
        ] {
            assert_eq!(kind(line), None, "{line}");
        }
    }

    #[test]
    fn finds_the_offset_of_a_token_inside_a_line() {
        let line = format!("{}error: boom", "x ".repeat(10));
        let found = Matcher::default().find(&line).expect("match");
        assert_eq!(found.offset, 20);
    }

    #[test]
    fn embedder_patterns_are_case_sensitive_substrings() {
        let matcher = Matcher::new(&["DEADLINE_EXCEEDED".to_owned(), String::new()]);
        assert_eq!(
            matcher
                .find("rpc failed: DEADLINE_EXCEEDED")
                .map(|m| m.kind),
            Some(Kind::Custom)
        );
        assert_eq!(matcher.find("deadline_exceeded"), None);
    }
}
