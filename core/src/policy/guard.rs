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
//!   Scripts nested inside scripts (`bash -c`, `eval`, `$(…)`) move there
//!   too once they nest deeper than the caller's stack is sized for.
//! - A bracket-matching estimate of the real depth refuses absurd nesting
//!   (`parse_error`) before any parsing. For counts beyond what the large
//!   stack is proven to hold (more than ~6 500 openers) this estimate is
//!   what keeps the stack safe. The same estimate caps nested parentheses
//!   and `case`, where the parser backtracks exponentially on a syntax
//!   error.
//!
//! brush-parser also has `unwrap`s on odd input (a tilde followed by a huge
//! number, which `words` avoids); any panic is caught and reported as
//! `parse_error`.

use std::panic::{AssertUnwindSafe, catch_unwind};

use super::violation::Violation;

/// Stack one opener can cost, measured in a debug build on the costliest
/// constructs (`case` and `if` nesting: ~18-20 KiB per level; release
/// builds use less). Nested `( )` cost ~0.7 KiB, `&&` chains nothing.
const STACK_PER_OPENER: usize = 20 * 1024;

/// Openers up to which the check runs on the caller's thread: at most
/// ~480 KiB of stack, safe on a 2 MiB tokio worker even in a debug build.
const INLINE_OPENERS: usize = 24;

/// Stack reserved for the parsing thread. Reserved, not committed: only
/// the pages the parser touches use memory.
const LARGE_STACK_BYTES: usize = 256 * 1024 * 1024;

/// Openers the large stack holds for certain, with a margin of two.
const GUARANTEED_OPENERS: usize = LARGE_STACK_BYTES / STACK_PER_OPENER / 2;

/// Deepest estimated nesting accepted. No real script comes close, and
/// refusing early also bounds the time spent on absurd input.
pub(crate) const MAX_NESTING: usize = 500;

/// Deepest estimated nesting of subshells, `$(…)` and `case`. On a syntax
/// error deep inside them brush-parser backtracks exponentially (measured,
/// debug build: 20 levels of `( ` around an error take 0.3 s, 24 take 4 s;
/// 16 nested `case` take 1.4 s); at 12 the worst case is ~0.1 s.
pub(crate) const MAX_BACKTRACKING_NESTING: usize = 12;

// The estimate only has to be trusted beyond what the stack surely holds.
const _: () = assert!(MAX_NESTING * 4 < GUARANTEED_OPENERS);

/// Larger scripts are refused before any parsing; the tool itself accepts
/// at most 256 KiB.
pub(crate) const MAX_SCRIPT_BYTES: usize = 1024 * 1024;

/// Which stack a check runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stack {
    /// The caller's: small, only [`INLINE_OPENERS`] deep.
    Caller,
    /// The large one of a parsing thread.
    Large,
}

/// Runs `check` on `script` where it cannot overflow the stack, and turns a
/// panic into a `parse_error`.
pub(crate) fn run_guarded(
    script: &str,
    check: impl Fn(&str, Stack) -> Result<(), Violation> + Sync,
) -> Result<(), Violation> {
    if script.len() > MAX_SCRIPT_BYTES {
        return Err(Violation::parse_error(&format!(
            "the script is {} bytes, more than the {MAX_SCRIPT_BYTES} this check reads",
            script.len()
        )));
    }
    check_nesting(script)?;
    if opener_count(script) <= INLINE_OPENERS {
        return catching_panics(|| check(script, Stack::Caller));
    }
    on_large_stack(|| check(script, Stack::Large))
}

/// Runs `check` on a thread with a large stack and waits for it. Scripts
/// found inside scripts (`bash -c`, `eval`) move there too once they nest
/// deeper than the caller's stack is sized for.
pub(crate) fn on_large_stack(
    check: impl FnOnce() -> Result<(), Violation> + Send,
) -> Result<(), Violation> {
    std::thread::scope(|scope| {
        let worker = std::thread::Builder::new()
            .name("bashtool-policy".to_owned())
            .stack_size(LARGE_STACK_BYTES)
            .spawn_scoped(scope, || catching_panics(check));
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

/// Refuses absurd nesting at once: parsing it would be slow, and past
/// GUARANTEED_OPENERS the estimate is what keeps the stack safe. Also run
/// on every script found inside another one.
pub(crate) fn check_nesting(script: &str) -> Result<(), Violation> {
    let nesting = estimated_nesting(script);
    if nesting.depth > MAX_NESTING {
        return Err(too_deep(nesting.depth, MAX_NESTING));
    }
    if nesting.backtracking > MAX_BACKTRACKING_NESTING {
        return Err(too_deep(nesting.backtracking, MAX_BACKTRACKING_NESTING));
    }
    Ok(())
}

pub(crate) fn too_deep(depth: usize, limit: usize) -> Violation {
    Violation::parse_error(&format!(
        "it is nested {depth} levels deep, more than the {limit} this check allows"
    ))
}

fn catching_panics(check: impl FnOnce() -> Result<(), Violation>) -> Result<(), Violation> {
    catch_unwind(AssertUnwindSafe(check))
        .unwrap_or_else(|_| Err(Violation::parse_error("the parser failed on this input")))
}

/// Keywords that open a compound command (`elif` is counted through `if`).
const OPENING_KEYWORDS: &[&[u8]] = &[
    b"if",
    b"while",
    b"until",
    b"for",
    b"case",
    b"select",
    b"coproc",
    b"function",
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

/// How deep a script nests, estimated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Nesting {
    /// Brackets and compound keywords.
    pub(crate) depth: usize,
    /// Only parentheses and `case`, where the parser backtracks.
    pub(crate) backtracking: usize,
}

/// How deep brackets and keywords nest, matching each closer with its own
/// opener. An estimate (quotes are ignored, and a closer that matches no
/// opener on top is ignored too).
pub(crate) fn estimated_nesting(script: &str) -> Nesting {
    let mut open = OpenStack::default();
    let mut nesting = Nesting {
        depth: 0,
        backtracking: 0,
    };
    let bytes = script.as_bytes();
    let mut index = 0;
    while index < bytes.len() {
        let byte = bytes[index];
        if byte.is_ascii_alphabetic() {
            let start = index;
            while index < bytes.len()
                && (bytes[index].is_ascii_alphanumeric() || bytes[index] == b'_')
            {
                index += 1;
            }
            match &bytes[start..index] {
                b"if" => open.push(Opener::If),
                b"case" => open.push(Opener::Case),
                b"while" | b"until" | b"for" | b"select" => open.push(Opener::Loop),
                b"fi" => open.close(Opener::If),
                b"esac" => open.close(Opener::Case),
                b"done" => open.close(Opener::Loop),
                _ => {}
            }
        } else {
            match byte {
                b'(' => open.push(Opener::Paren),
                b'{' => open.push(Opener::Brace),
                b'[' => open.push(Opener::Bracket),
                b')' => open.close(Opener::Paren),
                b'}' => open.close(Opener::Brace),
                b']' => open.close(Opener::Bracket),
                b'`' if open.top() == Some(Opener::Backtick) => open.close(Opener::Backtick),
                b'`' => open.push(Opener::Backtick),
                _ => {}
            }
            index += 1;
        }
        nesting.depth = nesting.depth.max(open.openers.len());
        nesting.backtracking = nesting.backtracking.max(open.backtracking);
    }
    nesting
}

/// The openers not yet closed.
#[derive(Default)]
struct OpenStack {
    openers: Vec<Opener>,
    /// How many of them are parentheses or `case`.
    backtracking: usize,
}

impl OpenStack {
    fn top(&self) -> Option<Opener> {
        self.openers.last().copied()
    }

    fn push(&mut self, opener: Opener) {
        if matches!(opener, Opener::Paren | Opener::Case) {
            self.backtracking += 1;
        }
        self.openers.push(opener);
    }

    fn close(&mut self, opener: Opener) {
        if self.top() == Some(opener) {
            self.openers.pop();
            if matches!(opener, Opener::Paren | Opener::Case) {
                self.backtracking -= 1;
            }
        }
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

    fn depth(script: &str) -> usize {
        estimated_nesting(script).depth
    }

    #[test]
    fn estimates_depth_of_nested_braces() {
        assert_eq!(depth(&"{ ".repeat(50)), 50);
        assert_eq!(depth("{ a; }; { b; }"), 1);
    }

    #[test]
    fn estimate_ignores_closers_that_close_nothing() {
        assert_eq!(depth("case x in a) echo;; esac"), 1);
        assert_eq!(depth("echo ) ) ( ("), 2);
    }

    #[test]
    fn counts_backtracking_nesting_of_parentheses_and_case_only() {
        assert_eq!(
            estimated_nesting("( { case x in a) $(ls);; esac; } ) && (ls)"),
            Nesting {
                depth: 4,
                backtracking: 3
            }
        );
    }
}
