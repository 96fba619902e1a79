//! Keeps the check from crashing the process.
//!
//! brush-parser recurses once (or several frames) per nesting level, in its
//! tokenizer, its program parser and its word parser, and a stack overflow
//! aborts the whole process: it cannot be caught. So before parsing we count,
//! without parsing, an upper bound of the nesting the check can reach: every
//! byte that can open a level (`(`, `{`, `[`, `` ` ``, `!`, and `\`, which can
//! turn into an opener inside `$'…'` handed to `bash -c`) and every keyword
//! that opens a compound command. The real nesting is never more than that.
//!
//! - Small counts (every typical one-liner) are parsed on the caller's
//!   thread: no thread, a few microseconds.
//! - Larger counts are parsed on a thread with a large stack. The stack is
//!   reserved, not committed: only the pages the parser touches use memory.
//! - A bracket-matching estimate of the real depth refuses absurd nesting
//!   (`parse_error`) before any parsing. For counts beyond what the large
//!   stack is proven to hold (only scripts with tens of thousands of
//!   brackets) this estimate is what keeps the stack safe.
//!
//! brush-parser also has `unwrap`s on odd input (a tilde followed by a huge
//! number); panics are caught and reported as `parse_error`.

use std::panic::{AssertUnwindSafe, catch_unwind};

use super::Violation;

/// Openers up to which the check runs on the caller's thread. Measured: one
/// level costs at most ~10 KiB of stack in a debug build (brace groups), so
/// this stays under ~300 KiB even on a 2 MiB tokio worker thread.
const INLINE_OPENERS: usize = 24;

/// Stack reserved for the parsing thread.
const LARGE_STACK_BYTES: usize = 256 * 1024 * 1024;

/// Openers the large stack holds for certain, with a margin of two over the
/// costliest construct measured in a debug build.
#[cfg(test)]
const GUARANTEED_OPENERS: usize = 10_000;

/// Deepest estimated nesting accepted when the opener count alone cannot
/// prove the script fits. No real script comes close.
pub(crate) const MAX_NESTING: usize = 1_000;

/// Larger scripts are refused before any parsing; the tool itself accepts
/// at most 256 KiB.
pub(crate) const MAX_SCRIPT_BYTES: usize = 1024 * 1024;

/// Runs `check` on `script` where it cannot overflow the stack, and turns a
/// panic into a `parse_error`.
pub(crate) fn run_guarded(
    script: &str,
    check: impl Fn(&str) -> Result<(), Violation> + Sync,
) -> Result<(), Violation> {
    if script.len() > MAX_SCRIPT_BYTES {
        return Err(Violation::parse_error(&format!(
            "the script is {} bytes, more than the {MAX_SCRIPT_BYTES} this check reads",
            script.len()
        )));
    }
    let openers = opener_count(script);
    if openers <= INLINE_OPENERS {
        return catching_panics(script, &check);
    }
    // Absurd nesting is refused at once: parsing it would be slow, and past
    // GUARANTEED_OPENERS the estimate is what keeps the stack safe.
    let depth = estimated_depth(script);
    if depth > MAX_NESTING {
        return Err(too_deep(depth));
    }
    std::thread::scope(|scope| {
        let worker = std::thread::Builder::new()
            .name("bashtool-policy".to_owned())
            .stack_size(LARGE_STACK_BYTES)
            .spawn_scoped(scope, || catching_panics(script, &check));
        match worker {
            Ok(handle) => handle
                .join()
                .unwrap_or_else(|_| Err(Violation::parse_error("the parser failed"))),
            Err(error) => Err(Violation::parse_error(&format!(
                "could not start the parser thread ({error})"
            ))),
        }
    })
}

pub(crate) fn too_deep(depth: usize) -> Violation {
    Violation::parse_error(&format!(
        "it is nested about {depth} levels deep, more than the {MAX_NESTING} this check allows"
    ))
}

fn catching_panics(
    script: &str,
    check: &(impl Fn(&str) -> Result<(), Violation> + Sync),
) -> Result<(), Violation> {
    catch_unwind(AssertUnwindSafe(|| check(script))).unwrap_or_else(|_| {
        Err(Violation::parse_error(
            "the parser failed on this input",
        ))
    })
}

/// Keywords that open a compound command (`elif` is counted through `if`).
const OPENING_KEYWORDS: &[&[u8]] = &[
    b"if", b"while", b"until", b"for", b"case", b"select", b"coproc", b"function",
];

/// An upper bound of the nesting levels a check of `script` can reach:
/// every possible opener, quoted or not, closed or not.
pub(crate) fn opener_count(script: &str) -> usize {
    let bytes = script.as_bytes();
    let mut count = 0;
    for (index, byte) in bytes.iter().enumerate() {
        match byte {
            b'(' | b'{' | b'[' | b'`' | b'!' | b'\\' => count += 1,
            _ => {
                let rest = &bytes[index..];
                count += OPENING_KEYWORDS
                    .iter()
                    .filter(|keyword| rest.starts_with(keyword))
                    .count();
            }
        }
    }
    count
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Opener {
    Paren,
    Brace,
    Bracket,
    Backtick,
    If,
    Case,
    Loop,
}

/// How deep brackets and keywords nest, matching each closer with its own
/// opener. An estimate (quotes are ignored), used only for scripts too large
/// for [`opener_count`] to prove they fit.
pub(crate) fn estimated_depth(script: &str) -> usize {
    let mut open: Vec<Opener> = Vec::new();
    let mut deepest = 0;
    let bytes = script.as_bytes();
    let mut index = 0;
    while index < bytes.len() {
        let byte = bytes[index];
        if byte.is_ascii_alphabetic() {
            let start = index;
            while index < bytes.len() && (bytes[index].is_ascii_alphanumeric() || bytes[index] == b'_')
            {
                index += 1;
            }
            match &bytes[start..index] {
                b"if" => open.push(Opener::If),
                b"case" => open.push(Opener::Case),
                b"while" | b"until" | b"for" | b"select" => open.push(Opener::Loop),
                b"fi" => close(&mut open, Opener::If),
                b"esac" => close(&mut open, Opener::Case),
                b"done" => close(&mut open, Opener::Loop),
                _ => {}
            }
        } else {
            match byte {
                b'(' => open.push(Opener::Paren),
                b'{' => open.push(Opener::Brace),
                b'[' => open.push(Opener::Bracket),
                b')' => close(&mut open, Opener::Paren),
                b'}' => close(&mut open, Opener::Brace),
                b']' => close(&mut open, Opener::Bracket),
                b'`' if open.last() == Some(&Opener::Backtick) => {
                    open.pop();
                }
                b'`' => open.push(Opener::Backtick),
                _ => {}
            }
            index += 1;
        }
        deepest = deepest.max(open.len());
    }
    deepest
}

fn close(open: &mut Vec<Opener>, opener: Opener) {
    if open.last() == Some(&opener) {
        open.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_no_openers_in_a_plain_command() {
        assert_eq!(opener_count("cargo test 2>&1 | tail -n 20"), 0);
    }

    #[test]
    fn counts_every_bracket_and_keyword() {
        assert_eq!(opener_count("if [ -f x ]; then (echo $(date)); fi"), 4);
    }

    #[test]
    fn estimates_depth_of_nested_braces() {
        assert_eq!(estimated_depth(&"{ ".repeat(50)), 50);
        assert_eq!(estimated_depth("{ a; }; { b; }"), 1);
    }

    #[test]
    fn estimate_ignores_closers_that_close_nothing() {
        assert_eq!(estimated_depth("case x in a) echo;; esac"), 1);
        assert_eq!(estimated_depth("echo ) ) ( ("), 2);
    }
}
