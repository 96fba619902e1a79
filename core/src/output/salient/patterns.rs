//! What makes a line look like an error, and how much context it wants.
//!
//! This runs on every line of every output (a 1 GB build log included), so it
//! is one pass over the bytes with a dispatch on the byte, plus a few
//! `starts_with` checks on the trimmed line; no regex, no allocation.

pub(crate) use super::kind::{Kind, MAX_BEFORE, Match};
use super::prefilter::first_anchor;
#[cfg(test)]
use super::prefilter::scan_prefilter;
use super::shapes::{
    WORDS, error_word, exception_line, exit_status, fail_word, failure_word, located_error,
    starts_with_ignore_case, telling_word, whole_word,
};

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
    // gdb: the frames follow.
    ("Program received signal", Kind::Panic),
    ("Program terminated with signal", Kind::Panic),
    // Go's race detector, 30+ lines before the `--- FAIL` it causes.
    ("WARNING: DATA RACE", Kind::Panic),
    // TeX: `! Undefined control sequence.`, `! LaTeX Error: …`.
    ("! ", Kind::Diagnostic),
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
        b'i' => &[("invalid-syntax:", Kind::Diagnostic)],
        // valgrind's reports, whose `at 0x…`/`by 0x…` frames follow.
        b'I' => &[
            ("Invalid read of size", Kind::Diagnostic),
            ("Invalid write of size", Kind::Diagnostic),
            ("Invalid free", Kind::Diagnostic),
        ],
        b'd' => &[("definitely lost in", Kind::Diagnostic)],
        // ctest's `***Failed`, `***Exception: …`, `***Timeout`.
        b'*' => &[
            ("***Failed", Kind::TestFailure),
            ("***Exception", Kind::TestFailure),
            ("***Timeout", Kind::TestFailure),
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
        b'C' => &[("CONFLICT", Kind::Diagnostic), ("CRITICAL", Kind::LogError)],
        // syslog's severities above error, in brackets (nginx's `[emerg]`).
        b'[' => &[
            ("[emerg]", Kind::Diagnostic),
            ("[alert]", Kind::Diagnostic),
            ("[crit]", Kind::Diagnostic),
        ],
        b'n' => &[("non-zero exit", Kind::Status)],
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
    let starts = b"eEfFKApuPNcSCTO\"\xE2iId*[n";
    let mut index = 0;
    while index < starts.len() {
        table[starts[index] as usize] = true;
        index += 1;
    }
    table
};

/// The most tokens [`Matcher::find_best`] compares in one text.
const MAX_CANDIDATES: usize = 64;

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
    #[cfg(test)]
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

    /// The most telling error-like token of `text` (a long line or a part
    /// of one): the highest [`Kind::rank`], the last of those. Looks at no
    /// more than [`MAX_CANDIDATES`] tokens, so it stays linear in `text`.
    pub(crate) fn find_best(&self, text: &str) -> Option<Match> {
        let trimmed = text.trim_start();
        let mut best = Self::find_at_start(text, trimmed, text.len() - trimmed.len());
        let bytes = text.as_bytes();
        let mut from = 0;
        for _ in 0..MAX_CANDIDATES {
            let Some(found) = Self::scan_from(bytes, from) else {
                break;
            };
            if best.is_none_or(|best: Match| found.kind.rank() >= best.kind.rank()) {
                best = Some(found);
            }
            from = found.offset + 1;
        }
        best.or_else(|| self.find_inside(text))
            .or_else(|| telling_word(text))
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
        located_error(line).map(|offset| Match {
            kind: Kind::Diagnostic,
            offset,
        })
    }

    fn scan(bytes: &[u8]) -> Option<Match> {
        Self::scan_from(bytes, 0)
    }

    /// The first match of the byte scan at or after `from` (the bytes
    /// before it still decide word boundaries).
    fn scan_from(bytes: &[u8], from: usize) -> Option<Match> {
        // Nearly every line of a big output has none of the anchors: one
        // SIMD pass answers that, and only the rare candidates pay for the
        // byte-by-byte dispatch below.
        let first = first_anchor(bytes.get(from..)?)?;
        // The anchor may sit inside the pattern (`FAIL` in `--- FAIL`).
        let start = (from + first).saturating_sub(4).max(from);
        for (index, byte) in bytes.iter().enumerate().skip(start) {
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
                b'f' if failure_word(bytes, index) => Some(Kind::Diagnostic),
                b'e' if exit_status(bytes, index) => Some(Kind::Status),
                b'F' if fail_word(bytes, index) => Some(Kind::TestFailure),
                // ✕ ✖ ✗ (U+2715..U+2717): jest, node's spec reporter, mocha.
                0xE2 if matches!(bytes.get(index + 1..index + 3), Some([0x9C, 0x95..=0x97])) => {
                    Some(Kind::TestFailure)
                }
                b'K' | b'A' => WORDS
                    .iter()
                    .find(|(word, _)| whole_word(bytes, index, word))
                    .map(|(_, kind)| *kind)
                    .or_else(|| Self::phrase(bytes, index)),
                b'F' | b'p' | b'u' | b'P' | b'N' | b'c' | b'S' | b'C' | b'T' | b'O' | b'"'
                | b'i' | b'I' | b'd' | b'*' | b'[' | b'n' => Self::phrase(bytes, index),
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
                .find("rpc status: DEADLINE_EXCEEDED")
                .map(|m| m.kind),
            Some(Kind::Custom)
        );
        assert_eq!(matcher.find("deadline_exceeded"), None);
    }

    #[test]
    fn recognizes_errors_by_their_shape() {
        let cases = [
            (
                "In x.sh line 2: SC1049 (error): Did you forget the 'then'?",
                Kind::Diagnostic,
            ),
            (
                "Parse error near line 155: near \",\": syntax error",
                Kind::Diagnostic,
            ),
            (
                "Runtime error near line 183: UNIQUE constraint failed",
                Kind::Diagnostic,
            ),
            (
                "CMake Error at CMakeLists.txt:63 (find_package):",
                Kind::Diagnostic,
            ),
            (
                " post-installation script subprocess returned error exit status 127",
                Kind::Diagnostic,
            ),
            (
                "shop/m.py:8: [E0602(undefined-variable), f] Undefined variable",
                Kind::Diagnostic,
            ),
            (
                "./report.tex:94: Undefined control sequence.",
                Kind::Diagnostic,
            ),
            (
                "! LaTeX Error: \\begin{itemize} ended by \\end{enumerate}.",
                Kind::Diagnostic,
            ),
            (
                "shop/m.py:1:12: invalid-syntax: Expected a parameter",
                Kind::Diagnostic,
            ),
            ("==4242== Invalid read of size 4", Kind::Diagnostic),
            (
                "==4242== 12 bytes in 1 blocks are definitely lost in loss record 1",
                Kind::Diagnostic,
            ),
            (
                "13/80 Test #13: pair_12 ..........***Failed    0.00 sec",
                Kind::TestFailure,
            ),
            (
                "34/60 Test #34: unit_33 ....Subprocess aborted***Exception:",
                Kind::TestFailure,
            ),
            (
                "Program received signal SIGSEGV, Segmentation fault.",
                Kind::Panic,
            ),
            ("WARNING: DATA RACE", Kind::Panic),
        ];
        for (line, expected) in cases {
            assert_eq!(kind(line), Some(expected), "{line}");
        }
        for line in [
            "Errors were encountered while processing:",
            "src/a.py:3:1: E501 line too long (88 > 79 characters)",
            "shop/m.py:7: [W0612(unused-variable), f] Unused variable 'total'",
            "Overfull \\hbox (43.4pt too wide) in paragraph at lines 93--95",
            "Test #12: pair_11 ....................   Passed    0.00 sec",
        ] {
            assert_eq!(kind(line), None, "{line}");
        }
    }

    #[test]
    fn recognizes_non_zero_statuses_and_severities_above_error() {
        for (line, expected) in [
            ("Process finished: exit status 2", Kind::Status),
            ("worker exited with code 137", Kind::Status),
            ("subprocess returned non-zero exit status 1.", Kind::Status),
            (
                "nginx: [emerg] unknown directive \"retrun\"",
                Kind::Diagnostic,
            ),
            ("2026-11-26 CRITICAL database unreachable", Kind::LogError),
            (
                "Coverage failure: total of 62 is less than fail-under=80",
                Kind::Diagnostic,
            ),
        ] {
            assert_eq!(kind(line), Some(expected), "{line}");
        }
        for line in [
            "exit status 0",
            "exited with code 0",
            "the exit code is shown",
            "prefailure: x",
        ] {
            assert_eq!(kind(line), None, "{line}");
        }
    }

    #[test]
    fn a_long_text_without_an_error_token_is_told_by_its_last_failure_word() {
        let text = "{\"event\": \"batch_rejected\", \"sql\": \"INSERT …\", \"problem\": \"constraint violated on items.id\"}";
        let found = Matcher::default().find_best(text).expect("match");
        assert_eq!(found.kind, Kind::Telling);
        assert_eq!(&text[found.offset..], "violated on items.id\"}");
    }

    #[test]
    fn the_best_token_of_a_long_text_is_the_last_of_the_highest_rank() {
        let text = "{\"level\": \"error\", \"exc\": \"KeyError: 'a'\\nValueError: b\", \"x\": \"error: c\"}";
        let found = Matcher::default().find_best(text).expect("match");
        assert_eq!(found.kind, Kind::Exception);
        // The match is the `Error:` of the exception's name.
        assert!(
            text[..found.offset].ends_with("\\nValue"),
            "{}",
            &text[found.offset..]
        );
    }
}
