//! One simple command: sees through wrappers (`sudo`, `env`, `timeout`, ...)
//! to the command that really runs, finds code handed to an interpreter as
//! a string (`bash -c`, `eval`, `trap`, `find -exec`, `watch`, a shell fed
//! by a here-document or a pipe), and hands the rest to the rules.

use super::Violation;
use super::nested::CheckScript;
use super::options::{self, OptionSpec};
use super::rules;
use super::words::{Word, decode_ansi_c};

/// The script a command would read on stdin, when we can know it.
#[derive(Debug, Default)]
pub(crate) struct Stdin {
    pub(crate) script: Option<String>,
}

/// Shells whose `-c` argument, or stdin, is a script.
const SHELLS: &[&str] = &["bash", "sh", "zsh", "dash", "ksh", "mksh", "ash", "yash"];

const SUDO: OptionSpec = OptionSpec {
    short_with_value: "ugCDhprtTU",
    long_with_value: &[
        "user",
        "group",
        "close-from",
        "chdir",
        "host",
        "prompt",
        "role",
        "type",
        "command-timeout",
        "other-user",
    ],
};
const DOAS: OptionSpec = OptionSpec {
    short_with_value: "uC",
    long_with_value: &[],
};
const ENV: OptionSpec = OptionSpec {
    short_with_value: "uCSP",
    long_with_value: &["unset", "chdir", "split-string"],
};
const EXEC: OptionSpec = OptionSpec {
    short_with_value: "a",
    long_with_value: &[],
};
const NICE: OptionSpec = OptionSpec {
    short_with_value: "n",
    long_with_value: &["adjustment"],
};
const IONICE: OptionSpec = OptionSpec {
    short_with_value: "cnp",
    long_with_value: &["class", "classdata", "pid", "pgid", "uid"],
};
const TIME: OptionSpec = OptionSpec {
    short_with_value: "fo",
    long_with_value: &["format", "output"],
};
const TIMEOUT: OptionSpec = OptionSpec {
    short_with_value: "sk",
    long_with_value: &["signal", "kill-after"],
};
const STDBUF: OptionSpec = OptionSpec {
    short_with_value: "ioe",
    long_with_value: &["input", "output", "error"],
};
const WATCH: OptionSpec = OptionSpec {
    short_with_value: "nq",
    long_with_value: &["interval", "equexit"],
};
const XARGS: OptionSpec = OptionSpec {
    short_with_value: "IELnPsda",
    long_with_value: &[
        "arg-file",
        "delimiter",
        "eof",
        "max-lines",
        "max-args",
        "max-procs",
        "max-chars",
        "process-slot-var",
    ],
};
const NO_VALUES: OptionSpec = OptionSpec {
    short_with_value: "",
    long_with_value: &[],
};

/// Wrappers are peeled one per step; a script cannot stack more wrappers
/// than it has words, so this only bounds a pathological loop.
const MAX_WRAPPERS: usize = 64;

/// The command's name as it would be looked up: quotes and escapes removed,
/// directories dropped (`/usr/bin/git`, `\rm`, `"rm"`, `$'rm'`). `None` when
/// the name is only known at run time (`$CMD`).
pub(crate) fn command_name(word: &Word) -> Option<String> {
    let value = word.static_value()?;
    let name = value.rsplit('/').next().unwrap_or_default();
    Some(name.to_owned())
}

/// Checks one simple command (already split into decoded words).
pub(crate) fn check(
    walker: &mut dyn CheckScript,
    argv: &[Word],
    stdin: &Stdin,
) -> Result<(), Violation> {
    let mut argv = argv;
    for _ in 0..MAX_WRAPPERS {
        let Some((first, rest)) = argv.split_first() else {
            return Ok(());
        };
        let Some(name) = command_name(first) else {
            return Ok(());
        };
        argv = match name.as_str() {
            "sudo" => skip_assignments(options::parse(rest, &SUDO).operands),
            "doas" => options::parse(rest, &DOAS).operands,
            "env" => {
                let parsed = options::parse(rest, &ENV);
                if parsed.has('S', "split-string") {
                    // `env -S 'rm -rf /'` splits its value into words.
                    let mut script = parsed.values.join(" ");
                    script.push(' ');
                    script.push_str(&joined(parsed.operands));
                    return walker.script(&script);
                }
                skip_assignments(parsed.operands)
            }
            "command" => {
                let parsed = options::parse(rest, &NO_VALUES);
                if parsed.has('v', "") || parsed.has('V', "") {
                    // `command -v rm` only looks the name up.
                    return Ok(());
                }
                parsed.operands
            }
            "builtin" | "nohup" | "setsid" => options::parse(rest, &NO_VALUES).operands,
            "exec" => options::parse(rest, &EXEC).operands,
            "nice" => options::parse(rest, &NICE).operands,
            "ionice" => options::parse(rest, &IONICE).operands,
            "time" => options::parse(rest, &TIME).operands,
            "stdbuf" => options::parse(rest, &STDBUF).operands,
            // The first operand is the duration.
            "timeout" => options::parse(rest, &TIMEOUT)
                .operands
                .get(1..)
                .unwrap_or_default(),
            "xargs" => options::parse(rest, &XARGS).operands,
            "watch" => {
                let parsed = options::parse(rest, &WATCH);
                if parsed.has('x', "exec") {
                    parsed.operands
                } else {
                    // watch hands its joined arguments to `sh -c`.
                    return walker.script(&joined(parsed.operands));
                }
            }
            "eval" => return walker.script(&joined(rest)),
            "trap" => return trap(walker, rest),
            "find" => return find(walker, rest),
            "git" => return rules::git::check(walker, rest),
            "rm" => return rules::rm::check(walker.config(), rest),
            shell if SHELLS.contains(&shell) => return self::shell(walker, rest, stdin),
            _ => return Ok(()),
        };
    }
    Ok(())
}

/// The script a command writes to a pipe, when it is literal text:
/// `echo '…'`, `printf '…'`, `cat <<EOF`.
pub(crate) fn piped_script(argv: &[Word], stdin: &Stdin) -> Option<String> {
    let (first, rest) = argv.split_first()?;
    match command_name(first)?.as_str() {
        "echo" => {
            let text_start = rest
                .iter()
                .position(|word| !is_echo_flag(&word.loose_value()))
                .unwrap_or(rest.len());
            Some(joined(&rest[text_start..]))
        }
        "printf" => Some(decode_ansi_c(&joined(rest))),
        "cat" if rest.is_empty() => stdin.script.clone(),
        _ => None,
    }
}

fn is_echo_flag(value: &str) -> bool {
    value
        .strip_prefix('-')
        .is_some_and(|flags| !flags.is_empty() && flags.chars().all(|flag| "neE".contains(flag)))
}

/// Words joined by spaces, expansions kept as their source text.
pub(crate) fn joined(words: &[Word]) -> String {
    words
        .iter()
        .map(Word::loose_value)
        .collect::<Vec<_>>()
        .join(" ")
}

fn skip_assignments(words: &[Word]) -> &[Word] {
    let start = words
        .iter()
        .position(|word| !options::is_assignment(word))
        .unwrap_or(words.len());
    &words[start..]
}

/// `bash -c SCRIPT`, `sh -lc SCRIPT`, `bash -s`, `bash <<EOF`, `… | sh`.
fn shell(walker: &mut dyn CheckScript, args: &[Word], stdin: &Stdin) -> Result<(), Violation> {
    let mut command_string = false;
    let mut reads_stdin = false;
    let mut index = 0;
    while let Some(arg) = args.get(index) {
        let value = arg.loose_value();
        index += 1;
        if value == "--" || value == "-" {
            break;
        }
        if let Some(long) = value.strip_prefix("--") {
            if matches!(long, "rcfile" | "init-file") {
                index += 1;
            }
            continue;
        }
        let Some(flags) = value
            .strip_prefix('-')
            .or_else(|| value.strip_prefix('+'))
            .filter(|flags| !flags.is_empty())
        else {
            index -= 1;
            break;
        };
        if value.starts_with('-') {
            command_string |= flags.contains('c');
            reads_stdin |= flags.contains('s');
        }
        // `-o pipefail`, `-O extglob`: the option name is the next word.
        if flags.contains(['o', 'O']) {
            index += 1;
        }
    }
    let operands = args.get(index..).unwrap_or_default();
    if command_string {
        return match operands.first() {
            Some(script) => walker.script(&script.loose_value()),
            None => Ok(()),
        };
    }
    if (reads_stdin || operands.is_empty())
        && let Some(script) = &stdin.script
    {
        return walker.script(script);
    }
    // Otherwise it runs a script file, which we cannot see.
    Ok(())
}

/// `trap 'ACTION' SIGNAL…`: the action runs later, in this shell.
fn trap(walker: &mut dyn CheckScript, args: &[Word]) -> Result<(), Violation> {
    let parsed = options::parse(args, &NO_VALUES);
    if parsed.has('p', "") || parsed.has('l', "") {
        return Ok(());
    }
    match parsed.operands {
        [action, _signal, ..] => walker.script(&action.loose_value()),
        _ => Ok(()),
    }
}

/// `find … -exec CMD … ;` (also `-execdir`, `-ok`, `-okdir`, and `+`).
fn find(walker: &mut dyn CheckScript, args: &[Word]) -> Result<(), Violation> {
    let mut index = 0;
    while index < args.len() {
        let value = args[index].static_value();
        index += 1;
        if !matches!(
            value.as_deref(),
            Some("-exec" | "-execdir" | "-ok" | "-okdir")
        ) {
            continue;
        }
        let start = index;
        while index < args.len()
            && !matches!(args[index].static_value().as_deref(), Some(";" | "+"))
        {
            index += 1;
        }
        check(walker, &args[start..index], &Stdin::default())?;
    }
    Ok(())
}
