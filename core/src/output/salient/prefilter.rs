//! The prefilter of the byte scan: one SIMD pass over a line (or a whole
//! chunk of output) finds whether it holds any word a pattern starts with;
//! only the rare lines that do pay for the matcher's byte-by-byte dispatch.

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
    "invalid-syntax:",
    "Invalid read",
    "Invalid write",
    "Invalid free",
    "definitely lost",
    "***",
    "CRITICAL",
    "[emerg]",
    "[alert]",
    "[crit]",
    "non-zero exit",
    "failure:",
    "failed:",
    "exit status ",
    "exit code ",
    "exited with ",
];

/// Finds whether a line holds any anchor. Teddy (SIMD) when the CPU has it,
/// else an Aho-Corasick automaton.
pub(crate) enum Prefilter {
    Packed(aho_corasick::packed::Searcher),
    Automaton(aho_corasick::AhoCorasick),
}

impl Prefilter {
    #[cfg(test)]
    pub(crate) fn is_match(&self, bytes: &[u8]) -> bool {
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

pub(crate) fn scan_prefilter() -> &'static Prefilter {
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
