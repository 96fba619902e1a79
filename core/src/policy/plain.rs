//! Scripts the check can pass without parsing: one simple command of
//! literal words, none of which is a program a rule looks at.
//!
//! Why: parsing even `true` runs brush-parser's tokenizer and parser, and
//! on a call that follows other work (another process, the agent's own) that
//! code is no longer in the CPU's caches: ~8 µs of a ~120 µs session call,
//! measured. Most commands an agent runs (`cargo test`, `ls -la`, `npm run
//! build`) are plain.
//!
//! Why it is safe: every rule ends at a program named `rm`, `git` or
//! `find` (whose `-delete` removes trees), and
//! the check sees a word only as bash would after quote removal and the
//! decoding of `$'…'`, `echo -e` and `printf` escapes. Without quotes,
//! backslashes, `$` and backquotes, a word is its own text, so a script
//! whose text holds none of these names has no word that names them,
//! whatever wrapper (`sudo`, `xargs`, `bash -c`, `eval`) it goes through.
//! Without operators, redirections, comments and reserved words, the script
//! is one simple command, which always parses: a script the parser would
//! refuse never takes this path.

/// Bytes a plain script may hold besides ASCII letters and digits: none of
/// them quotes, expands, escapes, redirects, separates commands or starts a
/// comment, glob or brace expansion.
const PLAIN_PUNCTUATION: &[u8] = b" -_./=:,+@%";

/// Words bash reserves; one in command position is a syntax error or
/// starts a compound command, so any of them anywhere sends the script to
/// the parser.
const RESERVED_WORDS: &[&str] = &[
    "if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while", "until", "do",
    "done", "in", "function", "time", "coproc",
];

/// The programs at which the rules end (`rules::git`, `rules::rm`, and
/// `find`, whose `-delete` is a recursive delete).
const RULE_PROGRAMS: &[&str] = &["rm", "git", "find"];

/// True if `script` is one simple command of literal words in which no rule
/// can find anything: the full check would pass it.
pub(crate) fn is_plain_command(script: &str) -> bool {
    script
        .bytes()
        .all(|byte| byte.is_ascii_alphanumeric() || PLAIN_PUNCTUATION.contains(&byte))
        && !RULE_PROGRAMS.iter().any(|program| script.contains(program))
        && !script.split(' ').any(|word| RESERVED_WORDS.contains(&word))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::policy::config::PolicyConfig;
    use crate::policy::violation::Violation;
    use crate::policy::{guard, script};

    #[test]
    fn common_commands_are_plain() {
        for command in [
            "true",
            "cargo test --workspace",
            "ls -la /tmp",
            "npm run build",
            "python3 -m pytest -x tests/unit",
            "make -j4 CC=clang",
        ] {
            assert!(is_plain_command(command), "{command}");
        }
    }

    #[test]
    fn anything_a_rule_or_the_parser_must_see_is_not() {
        for command in [
            "rm -rf /",
            "git add -A",
            "find . -delete",
            "/usr/bin/git push --force",
            "sudo rm -rf /",
            "format",
            "r\\m -rf /",
            "r''m -rf /",
            "\"rm\" -rf /",
            "$'\\x72m' -rf /",
            "echo $HOME",
            "ls `pwd`",
            "ls; true",
            "ls && true",
            "ls | cat",
            "ls > out",
            "ls # comment",
            "ls\ntrue",
            "ls\ttrue",
            "done",
            "if true",
            "ls {a,b}",
            "ls *",
            "ls ~",
            "ls (",
            "ls ! x",
        ] {
            assert!(!is_plain_command(command), "{command:?}");
        }
    }

    /// The full check, as `policy::check` runs it after this shortcut.
    fn full_check(text: &str) -> Result<(), Violation> {
        let config = PolicyConfig::default();
        guard::run_guarded(text, |text, stack| {
            script::check_script(text, &config, stack)
        })
    }

    proptest! {
        /// Whatever the shortcut passes, parsing and every rule pass too:
        /// words from the plain alphabet, rule programs and reserved words
        /// mixed in so that both sides of each condition come up.
        #[test]
        fn a_plain_script_passes_the_full_check(
            words in proptest::collection::vec(
                prop_oneof![
                    "[a-z0-9_./=:,+@%-]{1,8}",
                    Just("rm -rf /".to_owned()),
                    Just("git add -A".to_owned()),
                    Just("git push --force".to_owned()),
                    Just("rm".to_owned()),
                    Just("-rf".to_owned()),
                    Just("/".to_owned()),
                    Just("git".to_owned()),
                    Just("find".to_owned()),
                    Just("-delete".to_owned()),
                    Just("add".to_owned()),
                    Just("-A".to_owned()),
                    Just("sudo".to_owned()),
                    Just("xargs".to_owned()),
                    Just("eval".to_owned()),
                    Just("bash".to_owned()),
                    Just("-c".to_owned()),
                    Just("done".to_owned()),
                    Just("fi".to_owned()),
                ],
                1..6,
            )
        ) {
            let text = words.join(" ");
            if is_plain_command(&text) {
                prop_assert_eq!(full_check(&text), Ok(()), "{}", text);
            }
        }
    }
}
