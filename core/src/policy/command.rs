//! One simple command: sees through wrappers (`sudo`, `env`, `timeout`,
//! `flock`, … in [`wrappers`](super::wrappers)) to the command that really
//! runs, finds code handed to an interpreter as a string (`bash -c`,
//! `eval`, `trap`, a shell fed by a here-document or a pipe), what `find`
//! runs and deletes, and hands the rest to the rules.

use super::nested::{CheckScript, Stdin};
use super::options::{self, OptionSpec};
use super::violation::{Rule, Violation};
use super::words::{Word, decode_ansi_c, joined};
use super::wrappers::{self, Peeled};
use super::{find, guard, rules};

/// Shells whose `-c` argument, or stdin, is a script.
const SHELLS: &[&str] = &["bash", "sh", "zsh", "dash", "ksh", "mksh", "ash", "yash"];

const NO_VALUES: OptionSpec = OptionSpec {
    short_with_value: "",
    long_with_value: &[],
};

/// How many commands may run inside one another in one simple command
/// (`sudo timeout 5 nice env rm …`, `find -exec find -exec …`): far
/// beyond real use. A longer chain is refused rather than passed
/// unchecked.
const MAX_WRAPPERS: usize = 64;

/// Checks one simple command (already split into decoded words).
pub(crate) fn check(
    walker: &mut dyn CheckScript,
    argv: &[Word],
    stdin: &Stdin,
) -> Result<(), Violation> {
    check_at(walker, argv, stdin, 0)
}

fn check_at(
    walker: &mut dyn CheckScript,
    argv: &[Word],
    stdin: &Stdin,
    mut depth: usize,
) -> Result<(), Violation> {
    let mut argv = argv;
    loop {
        if depth >= MAX_WRAPPERS {
            return Err(guard::too_deep(depth + 1, MAX_WRAPPERS));
        }
        depth += 1;
        let Some((first, rest)) = argv.split_first() else {
            return Ok(());
        };
        let Some(name) = first.command_name() else {
            return Ok(());
        };
        match name.as_str() {
            "eval" => return walker.script(&joined(rest)),
            "trap" => return trap(walker, rest),
            "find" => return find(walker, rest, depth),
            "git" => return rules::git::check(walker, rest),
            "rm" => return rules::rm::check(walker.config(), rest, walker.globbing()),
            shell if SHELLS.contains(&shell) => return self::shell(walker, rest, stdin),
            _ => {}
        }
        match wrappers::peel(&name, rest, stdin) {
            None | Some(Peeled::Nothing) => return Ok(()),
            Some(Peeled::Command(command)) => argv = command,
            Some(Peeled::Commands(commands)) => {
                return commands
                    .iter()
                    .try_for_each(|command| check_at(walker, command, &Stdin::default(), depth));
            }
            Some(Peeled::Scripts(scripts)) => {
                return scripts.iter().try_for_each(|script| walker.script(script));
            }
        }
    }
}

/// The script a command writes to a pipe, when it is literal text:
/// `echo '…'`, `printf '…'`, `cat <<EOF`.
pub(crate) fn piped_script(argv: &[Word], stdin: &Stdin) -> Option<String> {
    let (first, rest) = argv.split_first()?;
    match first.command_name()?.as_str() {
        "echo" => {
            let text_start = rest
                .iter()
                .position(|word| !is_echo_flag(&word.loose_value()))
                .unwrap_or(rest.len());
            Some(joined(&rest[text_start..]))
        }
        "printf" => Some(decode_ansi_c(&joined(rest))),
        "cat" if rest.is_empty() => stdin.script.clone(),
        // The current directory, for `pwd | xargs rm -rf`.
        "pwd" => Some("~+".to_owned()),
        "find" => find::reach(rest).printed,
        _ => None,
    }
}

fn is_echo_flag(value: &str) -> bool {
    value
        .strip_prefix('-')
        .is_some_and(|flags| !flags.is_empty() && flags.chars().all(|flag| "neE".contains(flag)))
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

/// `find`: the commands its `-exec` & co run, with `{}` as each path it
/// may stand for, and the trees `-delete` removes.
fn find(walker: &mut dyn CheckScript, args: &[Word], depth: usize) -> Result<(), Violation> {
    let reach = find::reach(args);
    let globbing = walker.globbing();
    if walker.config().rm_critical
        && reach
            .deleted
            .iter()
            .any(|path| rules::rm::is_critical_target(path, globbing))
    {
        return Err(Violation::new(Rule::RmCritical));
    }
    reach
        .commands
        .iter()
        .try_for_each(|command| check_at(walker, command, &Stdin::default(), depth))
}
