//! `git`: skips its global options (`-C dir`, `-c key=value`,
//! `--git-dir …`, `--no-pager`, ...) and dispatches on the subcommand.

use super::super::nested::CheckScript;
use super::super::words::Word;
use super::super::{Rule, Violation};
use super::{git_add, git_push};

/// Global options whose value is the next word.
const GLOBAL_OPTIONS_WITH_VALUE: &[&str] = &[
    "-C",
    "-c",
    "--git-dir",
    "--work-tree",
    "--namespace",
    "--config-env",
    "--super-prefix",
    "--exec-path",
    "--list-cmds",
];

pub(crate) fn check(walker: &mut dyn CheckScript, args: &[Word]) -> Result<(), Violation> {
    let Some((subcommand, args)) = subcommand(args) else {
        return Ok(());
    };
    let config = walker.config();
    match subcommand.as_str() {
        "add" if config.git_add && git_add::is_blind(args) => Err(Violation::new(Rule::GitAdd)),
        "push" if config.git_push_force && git_push::is_forced(args) => {
            Err(Violation::new(Rule::GitPushForce))
        }
        "submodule" => submodule(walker, args),
        _ => Ok(()),
    }
}

fn subcommand(args: &[Word]) -> Option<(String, &[Word])> {
    let mut index = 0;
    while let Some(arg) = args.get(index) {
        let value = arg.loose_value();
        index += 1;
        // `--exec-path` alone prints the path; with `=` it takes a value.
        if GLOBAL_OPTIONS_WITH_VALUE.contains(&value.as_str()) && value != "--exec-path" {
            index += 1;
            continue;
        }
        if value.starts_with('-') {
            continue;
        }
        return Some((value, args.get(index..).unwrap_or_default()));
    }
    None
}

/// `git submodule foreach [--recursive] CMD…` runs CMD in a shell.
fn submodule(walker: &mut dyn CheckScript, args: &[Word]) -> Result<(), Violation> {
    let mut words = args
        .iter()
        .skip_while(|word| word.loose_value().starts_with('-'));
    if words.next().map(Word::loose_value).as_deref() != Some("foreach") {
        return Ok(());
    }
    let rest: Vec<Word> = words
        .skip_while(|word| word.loose_value().starts_with('-'))
        .cloned()
        .collect();
    walker.script(&super::super::command::joined(&rest))
}
