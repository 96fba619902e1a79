//! Whether a command may change the shell's state, so that the snapshot
//! after it can be skipped when it cannot (`ls`, `cargo test`, `true`): the
//! snapshot (`declare -p`, `declare -f`, ...) is over half of what a session
//! call costs.
//!
//! Conservative by construction: any sign of a state change (an `=`, an
//! arithmetic command, a builtin that changes the shell, a variable as the
//! command name) takes the snapshot; anything that could define names whose
//! later use changes state unseen (functions, aliases, `source`, `eval`,
//! `trap`) makes every later call take it too. A wrong "no" would only make
//! a restart after a crash restore an older state; it never changes what a
//! command does.
//!
//! Why a small lexer of its own, beside core's brush-parser walker (the
//! safety policy's): measured on nine typical one-liners (release build,
//! this 2-core machine, see `docs/sessions.md`), this check takes 22–540 ns
//! and brush-parser's parse alone 0.5–5 µs, before any walk. More to the
//! point, the session gets only the command text through `CommandExec`:
//! the policy's AST stays in core, so using it would mean a second parse
//! per call (or widening the port for one flag), a parse-failure path, and
//! the nesting cap core needs against brush-parser's stack overflow, all
//! to decide something that may safely err towards "save". Revisit if core
//! ever hands the adapter the parsed script.

/// What a command may do to the shell's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StateEffect {
    /// Nothing: no snapshot needed.
    None,
    /// Variables, cwd or options: snapshot after this call.
    ThisCall,
    /// It may define functions or aliases (or run unseen code): snapshot
    /// after this call and every later one.
    Names,
}

/// Builtins and keywords that change variables, the cwd or options.
const STATE_WORDS: &[&str] = &[
    "cd",
    "pushd",
    "popd",
    "dirs",
    "export",
    "declare",
    "typeset",
    "local",
    "readonly",
    "unset",
    "set",
    "shopt",
    "umask",
    "ulimit",
    "hash",
    "read",
    "readarray",
    "mapfile",
    "getopts",
    "let",
    "for",
    "select",
    "shift",
    "coproc",
    "exec",
    "printf",
    "wait",
    "disown",
    "history",
];

/// Builtins that can define names or run code the check cannot see.
const NAME_WORDS: &[&str] = &[
    "alias", "unalias", "function", "source", "eval", "trap", "enable", "bind", "complete",
    "compopt", "builtin", "command",
];

/// Bytes that end a word for this check.
fn is_word_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'-' | b'.' | b'/' | b'$' | b'+')
}

/// Bytes after which the next word is in command position.
fn starts_command(byte: u8) -> bool {
    matches!(
        byte,
        b';' | b'&' | b'|' | b'(' | b'{' | b'\n' | b'`' | b'!' | b'}' | b')'
    )
}

pub(crate) fn state_effect(command: &str) -> StateEffect {
    let bytes = command.as_bytes();
    if command.contains("()") {
        return StateEffect::Names;
    }
    let mut effect = if command.contains('=') || command.contains("((") || command.contains("$[") {
        StateEffect::ThisCall
    } else {
        StateEffect::None
    };
    let mut command_position = true;
    let mut index = 0;
    while index < bytes.len() {
        let byte = bytes[index];
        if !is_word_byte(byte) {
            if starts_command(byte) {
                command_position = true;
            } else if !byte.is_ascii_whitespace() {
                command_position = false;
            }
            index += 1;
            continue;
        }
        let start = index;
        while index < bytes.len() && is_word_byte(bytes[index]) {
            index += 1;
        }
        let word = &command[start..index];
        if NAME_WORDS.contains(&word) || (command_position && word == ".") {
            return StateEffect::Names;
        }
        if STATE_WORDS.contains(&word) || (command_position && word.starts_with('$')) {
            effect = StateEffect::ThisCall;
        }
        // A keyword keeps the command position: `if cd x`, `do read y`.
        command_position = matches!(
            word,
            "if" | "then" | "else" | "elif" | "do" | "while" | "until" | "time" | "sudo" | "nice"
        );
    }
    effect
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_commands_need_no_snapshot() {
        for command in [
            "true",
            "ls -la",
            "cargo test --workspace",
            "grep -rn 'TODO' src | head",
            "ls . && cat ./README.md",
            "git status; git diff --stat",
            "echo \"done\" > out.txt",
        ] {
            assert_eq!(state_effect(command), StateEffect::None, "{command}");
        }
    }

    #[test]
    fn state_changes_need_a_snapshot_for_this_call() {
        for command in [
            "cd backend",
            "export DATABASE_URL=postgres://x",
            "X=1",
            "echo ${X:=default}",
            "((count++))",
            "read -r line < file",
            "for f in *.rs; do wc -l \"$f\"; done",
            "set -o pipefail",
            "shopt -s globstar",
            "ls && cd /tmp",
            "$CMD /tmp",
            "printf -v x '%s' y",
            "umask 077",
        ] {
            assert_eq!(state_effect(command), StateEffect::ThisCall, "{command}");
        }
    }

    #[test]
    fn possible_new_names_need_snapshots_from_now_on() {
        for command in [
            "source .venv/bin/activate",
            ". .venv/bin/activate",
            "ls; . ./env.sh",
            "greet() { echo hi; }",
            "function greet { echo hi; }",
            "alias ll='ls -l'",
            "eval \"$(direnv export bash)\"",
            "trap 'echo bye' EXIT",
            "command cd /tmp",
        ] {
            assert_eq!(state_effect(command), StateEffect::Names, "{command}");
        }
    }
}
