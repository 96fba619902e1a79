//! `git`: skips its global options (`-C dir`, `-c key=value`,
//! `--git-dir …`, `--no-pager`, ...), resolves aliases defined on the
//! command line (`-c alias.x=add`), and dispatches on the subcommand.

use super::super::nested::CheckScript;
use super::super::violation::{Rule, Violation};
use super::super::words::{Word, joined};
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

/// git refuses an alias that expands to itself, directly or not; this
/// bounds our own expansion of such a loop.
const MAX_ALIASES: usize = 8;

pub(crate) fn check(walker: &mut dyn CheckScript, args: &[Word]) -> Result<(), Violation> {
    let Some(invocation) = parse(args) else {
        return Ok(());
    };
    let mut subcommand = invocation.subcommand.clone();
    let mut args: Vec<Word> = invocation.args.to_vec();
    for _ in 0..MAX_ALIASES {
        let Some(expansion) = invocation.alias(&subcommand) else {
            break;
        };
        if let Some(shell) = expansion.strip_prefix('!') {
            // `!cmd` runs in a shell, with the arguments appended.
            return walker.script(&format!("{shell} {}", joined(&args)));
        }
        let mut words = expansion.split_whitespace().map(Word::literal);
        let Some(first) = words.next() else {
            return Ok(());
        };
        subcommand = first.loose_value();
        args = words.chain(args).collect();
    }
    let config = walker.config();
    match subcommand.as_str() {
        // `git stage` is another name for `git add`.
        "add" | "stage" if config.git_add && git_add::is_blind(&args) => {
            Err(Violation::new(Rule::GitAdd))
        }
        "push" if config.git_push_force && git_push::is_forced(&args) => {
            Err(Violation::new(Rule::GitPushForce))
        }
        "submodule" => submodule(walker, &args),
        _ => Ok(()),
    }
}

/// A git command line: the `-c` settings, the subcommand and its words.
struct Invocation<'a> {
    settings: Vec<String>,
    subcommand: String,
    args: &'a [Word],
}

impl Invocation<'_> {
    /// What `-c alias.NAME=VALUE` says `name` stands for (the last one
    /// wins; alias names are not case-sensitive).
    fn alias(&self, name: &str) -> Option<String> {
        self.settings.iter().rev().find_map(|setting| {
            let (key, value) = setting.split_once('=')?;
            let (section, alias) = key.split_once('.')?;
            (section.eq_ignore_ascii_case("alias") && alias.eq_ignore_ascii_case(name))
                .then(|| value.to_owned())
        })
    }
}

fn parse(args: &[Word]) -> Option<Invocation<'_>> {
    let mut settings = Vec::new();
    let mut index = 0;
    while let Some(arg) = args.get(index) {
        let value = arg.loose_value();
        index += 1;
        // `--exec-path` alone prints the path; with `=` it takes a value.
        if GLOBAL_OPTIONS_WITH_VALUE.contains(&value.as_str()) && value != "--exec-path" {
            if value == "-c"
                && let Some(setting) = args.get(index)
            {
                settings.push(setting.loose_value());
            }
            index += 1;
            continue;
        }
        if value.starts_with('-') {
            continue;
        }
        return Some(Invocation {
            settings,
            subcommand: value,
            args: args.get(index..).unwrap_or_default(),
        });
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
    walker.script(&joined(&rest))
}
